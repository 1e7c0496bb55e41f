// What a refusal tells the operator on real lvm2 and device-mapper: an open LV
// names its holder (sysfs holders), and the lvm.conf lvstamp ships bounds the
// metadata archive by count (lvm.conf(5) backup/retain_min, retain_days).
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  REPO_ROOT,
  createLoopVg,
  createTempDir,
  installCleanupHooks,
  sh,
  shOk,
} from '../harness/index.js';
import { MiB, cli, idOf, lvRow, suffix } from './support.js';

installCleanupHooks();

describe('open and busy errors name the holders', () => {
  it('lvstamp delete of a volume whose LV another map holds open names that map, removes nothing, and deletes once it is gone', async () => {
    const { vgName } = await createLoopVg({ sizeBytes: 128 * MiB });
    const name = `held-${suffix()}`;
    const lvName = `lvstamp_${idOf(name)}`;
    await cli(['create', name, '--size', '8Mi', '--vg', vgName], 0);
    const lv = await lvRow(vgName, lvName);
    // a tenant's (or an admin's) map stacked on the LV keeps it open
    const holder = `lvse2e-hold-${suffix()}`;
    await shOk([
      'dmsetup',
      'create',
      holder,
      '--noudevsync',
      '--table',
      `0 8 linear ${lv.lv_kernel_major}:${lv.lv_kernel_minor} 0`,
    ]);
    try {
      const dm = (await readlinkName(`${lv.lv_kernel_major}:${lv.lv_kernel_minor}`)) ?? '';
      const holders = await readdir(`/sys/block/${dm}/holders`);
      expect(holders).toHaveLength(1);
      const refused = await cli(['delete', name], 1);
      // the last line (a progress line "… deleting" comes first)
      expect(refused.stderr.split('\n').filter(Boolean).at(-1)).toBe(
        `lvstamp: ${vgName}/${lvName} is open (held by ${holders[0] ?? ''} (${holder})); unmount and detach it first`,
      );
      expect((await lvRow(vgName, lvName)).lv_name).toBe(lvName);
    } finally {
      await sh(['dmsetup', 'remove', '--noudevsync', holder]);
    }
    expect((await cli(['delete', name], 0)).stdout).toBe(`deleted ${name}`);
  }, 300_000);
});

async function readlinkName(device: string): Promise<string | null> {
  const result = await sh(['readlink', `/sys/dev/block/${device}`]);
  return result.exitCode === 0 ? (result.stdout.trim().split('/').at(-1) ?? null) : null;
}

describe('the shipped lvm.conf bounds the metadata archive', () => {
  it('keeps retain_min archive files of a VG however many metadata changes were made', async () => {
    const conf = await readFile(join(REPO_ROOT, 'deploy/kubernetes/configmap-lvm.yaml'), 'utf8');
    const retainMin = Number(/retain_min = (\d+)/.exec(conf)?.[1]);
    const retainDays = Number(/retain_days = (\d+)/.exec(conf)?.[1]);
    expect(retainDays).toBe(0);
    expect(retainMin).toBeGreaterThan(0);
    const { vgName } = await createLoopVg({ sizeBytes: 64 * MiB });
    const archiveDir = await createTempDir();
    const backupDir = await createTempDir();
    const config =
      `backup { backup = 1 archive = 1 archive_dir = "${archiveDir}" backup_dir = "${backupDir}" ` +
      `retain_min = ${retainMin} retain_days = ${retainDays} }`;
    await shOk(['lvcreate', '--config', config, '-an', '-Zn', '-L', '4m', '-n', 'tags', vgName]);
    const changes = 2 * retainMin + 10;
    const counts: number[] = [];
    for (let i = 1; i < changes; i += 1) {
      await shOk(['lvchange', '--config', config, '--addtag', `t${i}`, `${vgName}/tags`]);
      if (i === retainMin - 1 || i === changes - 1) counts.push((await archives()).length);
    }
    const files = await archives();
    let bytes = 0;
    for (const f of files) bytes += (await stat(join(archiveDir, f))).size;
    process.stderr.write(
      `archive: retain_min ${retainMin}, retain_days ${retainDays}: after ${retainMin} changes ${counts[0]} file(s), ` +
        `after ${changes} changes ${files.length} file(s), ${bytes} bytes\n`,
    );
    expect(counts).toEqual([retainMin, retainMin]);

    async function archives(): Promise<string[]> {
      return (await readdir(archiveDir)).filter((f) => f.startsWith(`${vgName}_`));
    }
  }, 600_000);
});
