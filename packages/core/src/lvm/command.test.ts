import { describe, expect, it } from 'vitest';
import { ReplayRunner } from '../testing/replay-runner.js';
import { NoopHostLock } from '../lock/host-lock.js';
import { LvmCommand } from './command.js';
import { Lvm } from './lvm.js';

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
      { argv: ['lvrename', '--yes', 'vg0', 'a', 'b'], stderr: '  WARNING: something\n' },
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
        { argv: ['lvrename', '--yes', 'vg0', 'a', 'b'], stderr: '  WARNING: something\n' },
      ],
    ]);
  });
});
