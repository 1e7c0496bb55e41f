// A thick create in a one-group scope runs lvcreate and lvrename before any look-up (DESIGN.md §5
// "Create"). On real lvm2: a create of an existing, inactive volume killed after that lvcreate
// leaves an lvstamp_new_<id> beside the volume, which the retry removes (the GC keeps it while
// the volume is live); and a group lvm.conf lets lvm change despite a PV seen twice is refused as
// the look-up path refuses it, because the protocol's commands pin that setting.
import { appendFile, copyFile, mkdir, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { lvDmName } from '@lvstamp/core';
import { describe, expect, it } from 'vitest';
import { createLoopVg, installCleanupHooks, runCli, sh, shOk } from '../harness/index.js';
import {
  MiB,
  cli,
  cliJson,
  idOf,
  lvNames,
  newOwnerId,
  sleep,
  startCli,
  suffix,
  waitForNoProcessMentioning,
} from './support.js';

installCleanupHooks();

interface GcJson {
  readonly plan: {
    readonly entries: readonly {
      readonly device: string;
      readonly action: string;
      readonly rule: number;
      readonly reason: string;
    }[];
  };
}

describe('a create of an existing, inactive volume killed after its lvcreate', () => {
  it('the retry returns the volume and removes the lvstamp_new_ the killed create made', async () => {
    const vg = await createLoopVg({ sizeBytes: 256 * MiB });
    const owner = newOwnerId();
    const lock = join(vg.dir, 'lock', 'host.lock');
    const g = ['--owner-id', owner, '--lock-file', lock];
    const name = `inactive-${suffix()}`;
    const id = idOf(name);
    const createArgs = ['create', name, '--size', '16Mi', '--vg', vg.vgName];
    await cli([...g, ...createArgs], 0);
    const newNode = `/dev/mapper/${lvDmName(vg.vgName, `lvstamp_new_${id}`)}`;
    const outcomes: string[] = [];
    let landed = false;
    for (let attempt = 1; attempt <= 6 && !landed; attempt++) {
      // the node rebooted without auto-activation: the volume is inactive, sysfs shows nothing
      await shOk(['lvchange', '--activate', 'n', `${vg.vgName}/lvstamp_${id}`]);
      const child = startCli([...g, ...createArgs]);
      const state = { exited: false };
      const done = child.then((r) => {
        state.exited = true;
        return r;
      });
      while (!state.exited && !existsSync(newNode)) await sleep(2);
      if (!state.exited) child.kill('SIGKILL');
      const result = await done;
      await sleep(200);
      await waitForNoProcessMentioning(id);
      const lvs = await lvNames(vg.vgName);
      outcomes.push(
        `attempt ${attempt}: signal ${result.signal ?? 'none'}, exit ${result.exitCode ?? '-'}, LVs ${lvs.join(' ')}`,
      );
      landed = result.signal === 'SIGKILL' && lvs.includes(`lvstamp_new_${id}`);
    }
    expect(landed, outcomes.join('\n')).toBe(true);
    expect(await lvNames(vg.vgName)).toEqual([`lvstamp_${id}`, `lvstamp_new_${id}`]);

    // the retry (the provisioner's, or an admin's idempotent `lvstamp create`)
    const retry = await cli([...g, ...createArgs], 0);
    expect(retry.stdout).toContain(`volume ${name} ready: id ${id}`);
    const after = await lvNames(vg.vgName);
    const lvsAfter = (await shOk(['lvs', '-o', 'lv_name,lv_size,lv_attr,lv_tags', vg.vgName]))
      .stdout;
    // the GC with this volume in its live set (its PV exists once the create returned)
    const liveFile = join(vg.dir, 'live');
    await writeFile(liveFile, `${name}\n`);
    const plan = await cliJson<GcJson>([
      ...g,
      'gc',
      '--vg',
      vg.vgName,
      '--quarantine',
      '0',
      '--live',
      liveFile,
      '--min-age',
      '0s',
    ]);
    const entries = plan.plan.entries.map((e) => `${e.device} ${e.action} ${e.rule}: ${e.reason}`);
    expect(after, `${lvsAfter}\ngc plan:\n${entries.join('\n')}`).toEqual([`lvstamp_${id}`]);
  }, 900_000);
});

/** A copy of the VM's lvm configuration with `extra` appended to lvmlocal.conf, for LVM_SYSTEM_DIR. */
async function lvmSystemDir(dir: string, extra: string): Promise<string> {
  const sysDir = join(dir, `lvm-${suffix()}`);
  await mkdir(sysDir, { recursive: true });
  await copyFile('/etc/lvm/lvm.conf', join(sysDir, 'lvm.conf'));
  if (existsSync('/etc/lvm/lvmlocal.conf')) {
    await copyFile('/etc/lvm/lvmlocal.conf', join(sysDir, 'lvmlocal.conf'));
  }
  await appendFile(join(sysDir, 'lvmlocal.conf'), extra);
  return sysDir;
}

describe('the same PV twice, on a host whose lvm.conf allows changes with duplicate PVs', () => {
  it('lvstamp create refuses the group (duplicate-pv) with that lvm.conf as with the default one', async () => {
    const vg = await createLoopVg({ sizeBytes: 128 * MiB });
    const second = (await shOk(['losetup', '-f', '--show', vg.file])).stdout.trim();
    const log: string[] = [];
    try {
      const owner = newOwnerId();
      const g = ['--owner-id', owner, '--lock-file', join(vg.dir, 'host.lock')];
      const name = `dup-${suffix()}`;
      const id = idOf(name);
      const args = [...g, 'create', name, '--size', '16Mi', '--vg', vg.vgName];
      const plain = await runCli(args);
      log.push(
        `default lvm.conf: lvstamp create -> ${plain.exitCode}\n${plain.stdout}\n${plain.stderr}`,
      );
      const sysDir = await lvmSystemDir(
        vg.dir,
        'devices {\n\tallow_changes_with_duplicate_pvs = 1\n}\n',
      );
      const allowed = await runCli(args, { env: { LVM_SYSTEM_DIR: sysDir } });
      log.push(
        `allow_changes_with_duplicate_pvs = 1: lvstamp create -> ${allowed.exitCode}\n${allowed.stdout}\n${allowed.stderr}`,
      );
      const lvs = await sh(['lvs', '-o', 'lv_name,lv_attr', vg.vgName]);
      log.push(`lvs -> ${lvs.exitCode}\n${lvs.stdout}${lvs.stderr}`);
      expect(plain.exitCode, log.join('\n')).toBe(1);
      expect(plain.stderr).toMatch(/unusable \(duplicate-pv\)/);
      expect(allowed.exitCode, log.join('\n')).toBe(1);
      expect(allowed.stderr).toMatch(/unusable \(duplicate-pv\)/);
      expect(lvs.stdout).not.toContain(id);
    } finally {
      await sh(['losetup', '-d', second]);
    }
  }, 600_000);
});
