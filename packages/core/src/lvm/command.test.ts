import { describe, expect, it } from 'vitest';
import { CommandFailedError, ThinTargetMissingError } from '../errors.js';
import { ReplayRunner } from '../testing/replay-runner.js';
import { NoopHostLock } from '../lock/host-lock.js';
import { DEFAULT_LVM_CONCURRENCY, LvmCommand } from './command.js';
import type { CommandResult, CommandRunner } from '../exec/runner.js';
import { Lvm } from './lvm.js';

// lvm settings the create protocol's lvcreate and lvrename carry (CREATE_PROTOCOL_CONFIG), spelled out
const PINNED = ['--config', 'global/use_lvmlockd=0 devices/allow_changes_with_duplicate_pvs=0'];
describe('LvmCommand: the host lock', () => {
  it('runs a change under the host lock and a report without it', async () => {
    const runner = new ReplayRunner([
      { argv: ['lvremove', '--yes', 'vg0/lv'] },
      { argv: ['vgs'], stdout: '' },
    ]);
    const hostLock = new NoopHostLock();
    const lvm = new LvmCommand({ runner, hostLock });
    await lvm.change('lvremove vg0/lv', ['lvremove', '--yes', 'vg0/lv']);
    await lvm.report(['vgs']);
    runner.assertDone();
    expect(hostLock.reasons).toEqual(['lvremove vg0/lv']);
  });

  it('takes no second lock inside a caller that holds it (a check-then-act sequence)', async () => {
    const runner = new ReplayRunner([{ argv: ['lvchange', '--activate', 'y', 'vg0/lv'] }]);
    const hostLock = new NoopHostLock();
    const lvm = new Lvm({ runner, hostLock });
    await hostLock.withLock('delete x', () => lvm.logicalVolumes.activate('vg0', 'lv'));
    expect(hostLock.reasons).toEqual(['delete x']);
  });

  it('gives every lvm command its deadline and logs the stderr of a success', async () => {
    const runner = new ReplayRunner([
      { argv: ['lvrename', ...PINNED, '--yes', 'vg0', 'a', 'b'], stderr: '  WARNING: something\n' },
    ]);
    const warnings: unknown[] = [];
    const lvm = new Lvm({
      runner,
      hostLock: new NoopHostLock(),
      timeoutMs: 1234,
      logger: { warn: (message, fields) => warnings.push([message, fields]) },
    });
    await lvm.logicalVolumes.rename('vg0', 'a', 'b');
    expect(runner.calls.map((c) => c.options)).toEqual([{ timeoutMs: 1234 }]);
    expect(warnings).toEqual([
      [
        'command succeeded with output on stderr',
        {
          argv: ['lvrename', ...PINNED, '--yes', 'vg0', 'a', 'b'],
          stderr: '  WARNING: something\n',
        },
      ],
    ]);
  });
});

/** A runner whose commands all wait until `release()`, counting how many ran at once. */
function heldRunner(): CommandRunner & { running: number; most: number; release: () => void } {
  let release: () => void = () => undefined;
  const released = new Promise<void>((resolve) => (release = resolve));
  const runner = {
    running: 0,
    most: 0,
    release: () => {
      release();
    },
    async run(argv: readonly string[]): Promise<CommandResult> {
      runner.running += 1;
      runner.most = Math.max(runner.most, runner.running);
      await released;
      runner.running -= 1;
      return { argv: [...argv], exitCode: 0, stdout: '', stderr: '' };
    },
  };
  return runner;
}

describe('LvmCommand: lvm processes at once', () => {
  it('runs at most maxConcurrent lvm processes, reports and changes alike; the rest wait their turn', async () => {
    const runner = heldRunner();
    const lvm = new LvmCommand({ runner, hostLock: new NoopHostLock(), maxConcurrent: 2 });
    const all = Promise.all([
      lvm.report(['vgs']),
      lvm.change('a', ['lvremove', '--yes', 'vg0/a']),
      lvm.report(['lvs']),
      lvm.change('b', ['lvremove', '--yes', 'vg0/b']),
    ]);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(runner.running).toBe(2);
    runner.release();
    expect((await all).map((r) => r.argv[0])).toEqual(['vgs', 'lvremove', 'lvs', 'lvremove']);
    expect(runner.most).toBe(2);
  });

  it(`runs ${DEFAULT_LVM_CONCURRENCY} at once by default`, async () => {
    const runner = heldRunner();
    const lvm = new LvmCommand({ runner, hostLock: new NoopHostLock() });
    const all = Promise.all(Array.from({ length: 10 }, () => lvm.report(['vgs'])));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(runner.running).toBe(DEFAULT_LVM_CONCURRENCY);
    runner.release();
    await all;
    expect(runner.most).toBe(DEFAULT_LVM_CONCURRENCY);
  });
});

describe('LvmCommand: known noise on stderr', () => {
  const argv = ['lvchange', '--addtag', 't', '--activate', 'n', 'vg0/lv'];
  const run = async (stderr: string): Promise<unknown[]> => {
    const runner = new ReplayRunner([{ argv, stderr }]);
    const warnings: unknown[] = [];
    const lvm = new LvmCommand({
      runner,
      hostLock: new NoopHostLock(),
      logger: { warn: (message, fields) => warnings.push([message, fields]) },
    });
    await lvm.change('quarantine', argv);
    return warnings;
  };

  it('drops exactly lvchange\'s "Combining activation change ... is not advised." line', async () => {
    expect(
      await run('  WARNING: Combining activation change with other commands is not advised.\n'),
    ).toEqual([]);
  });

  it('relays every other line of the same stderr, and a look-alike warning', async () => {
    expect(
      await run(
        '  WARNING: Combining activation change with other commands is not advised.\n' +
          '  WARNING: Sum of all thin volume sizes exceeds the pool.\n',
      ),
    ).toEqual([
      [
        'command succeeded with output on stderr',
        { argv, stderr: '  WARNING: Sum of all thin volume sizes exceeds the pool.\n' },
      ],
    ]);
    const lookAlike =
      '  WARNING: Combining activation change with other commands is not advised. Really?\n';
    expect(await run(lookAlike)).toEqual([
      ['command succeeded with output on stderr', { argv, stderr: lookAlike }],
    ]);
  });
});

describe('LvmCommand: a kernel without the thin targets', () => {
  const HINT =
    'the kernel has no thin-pool target and lvm could not load it: load the dm_thin_pool module on ' +
    'the node (modprobe dm_thin_pool; at boot: /etc/modules-load.d), or give the driver the host’s ' +
    '/lib/modules and kmod (deploy/kubernetes/daemonset.yaml does)';

  it('a thin LV that cannot be activated (lvm: "thin target support missing from kernel?") is ThinTargetMissingError naming the fix', async () => {
    const argv = ['lvchange', '--activate', 'y', 'vg0/lvstamp_a'];
    const runner = new ReplayRunner([
      {
        argv,
        exitCode: 5,
        stderr:
          '  /sbin/modprobe: execvp failed: No such file or directory\n  /sbin/modprobe failed: 2\n' +
          "  Can't process LV vg0/lvstamp_a: thin target support missing from kernel?\n",
      },
    ]);
    const lvm = new Lvm({ runner, hostLock: new NoopHostLock() });
    const error = await lvm.logicalVolumes.activate('vg0', 'lvstamp_a').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ThinTargetMissingError);
    expect((error as Error).message).toBe(
      `${HINT} (lvchange --activate y vg0/lvstamp_a: /sbin/modprobe: execvp failed: No such file or ` +
        "directory | /sbin/modprobe failed: 2 | Can't process LV vg0/lvstamp_a: thin target support missing from kernel?)",
    );
    expect((error as Error).cause).toBeInstanceOf(CommandFailedError);
  });

  it('any other failure stays a CommandFailedError', async () => {
    const argv = ['lvchange', '--activate', 'y', 'vg0/lv'];
    const runner = new ReplayRunner([{ argv, exitCode: 5, stderr: '  something else\n' }]);
    const lvm = new Lvm({ runner, hostLock: new NoopHostLock() });
    const error = await lvm.logicalVolumes.activate('vg0', 'lv').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CommandFailedError);
    expect(error).not.toBeInstanceOf(ThinTargetMissingError);
  });
});
