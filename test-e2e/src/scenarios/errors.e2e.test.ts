// What a refusal tells the operator on real lvm2 and device-mapper: an open LV
// names its holder (sysfs holders), and the lvm.conf lvstamp ships bounds the
// metadata archive by count (lvm.conf(5) backup/retain_min, retain_days).
// Refusals that touch nothing: a resize of an active LV that does not carry
// this installation's tags, a delete or detach naming the wrong volume group.
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
import { MiB, cli, dmInfo, idOf, lvRow, readBytes, suffix } from './support.js';

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

describe('ownership and scope refusals touch nothing (DESIGN.md §2.3)', () => {
  it('lvstamp resize of an ACTIVE LV without the lvstamp tags, or with another owner tag, is refused: LV size and first MiB unchanged', async () => {
    const { vgName } = await createLoopVg({ sizeBytes: 128 * MiB });
    const name = `untagged-${suffix()}`;
    const lvName = `lvstamp_${idOf(name)}`;
    await cli(['create', name, '--size', '8Mi', '--vg', vgName], 0);
    const before = await lvRow(vgName, lvName);
    expect(before.lv_attr[4]).toBe('a'); // active
    const ownerTag = before.lv_tags.split(',').find((t) => t.startsWith('lvstamp.owner=')) ?? '';
    expect(ownerTag).toMatch(/^lvstamp\.owner=[0-9a-f]{32}$/);
    const firstMiB = await readBytes(before.lv_dm_path, 0, MiB);
    const lv = `${vgName}/${lvName}`;
    await shOk(['lvchange', '--deltag', 'lvstamp', '--deltag', ownerTag, lv]);
    const otherTag = `lvstamp.owner=${'1'.repeat(32)}`;
    for (const [tags, detail] of [
      ['none', 'it lacks the tag lvstamp (tags: none)'],
      [`lvstamp,${otherTag}`, `it lacks the owner tag ${ownerTag} (tags: lvstamp,${otherTag})`],
    ] as const) {
      if (tags !== 'none')
        await shOk(['lvchange', '--addtag', 'lvstamp', '--addtag', otherTag, lv]);
      expect((await lvRow(vgName, lvName)).lv_tags).toBe(tags === 'none' ? '' : tags);
      const refused = await cli(['resize', name, '--size', '16Mi', '--vg', vgName], 1);
      expect(refused.stderr.split('\n').filter(Boolean).at(-1)).toBe(
        `lvstamp: ${lv} is not provably this installation's volume: refusing to resize: ${detail}; left untouched`,
      );
      const after = await lvRow(vgName, lvName);
      expect(after.lv_size).toBe(before.lv_size);
      expect((await readBytes(after.lv_dm_path, 0, MiB)).equals(firstMiB)).toBe(true);
    }
  }, 300_000);

  it('lvstamp delete and detach with the wrong --vg refuse, naming the data device and its target: the map and the LV stay', async () => {
    const { vgName } = await createLoopVg({ sizeBytes: 64 * MiB });
    const { vgName: otherVg } = await createLoopVg({ sizeBytes: 64 * MiB });
    const name = `scoped-${suffix()}`;
    const id = idOf(name);
    const lvName = `lvstamp_${id}`;
    await cli(['create', name, '--size', '8Mi', '--vg', vgName], 0);
    await cli(['attach', name, '--vg', vgName], 0);
    const lv = await lvRow(vgName, lvName);
    const map = await dmInfo(`lvstamp-${id}`);
    expect(map).not.toBeNull();
    const refusal =
      `lvstamp: data device lvstamp-${id} targets ${lv.lv_kernel_major}:${lv.lv_kernel_minor}, ` +
      `a device outside the volume groups ${otherVg} (no LV of volume ${id} there); ` +
      'name the volume group that holds its LV; left untouched';
    for (const command of ['delete', 'detach']) {
      const refused = await cli([command, name, '--vg', otherVg], 1);
      expect(refused.stdout).toBe('');
      expect(refused.stderr.split('\n').filter(Boolean).at(-1)).toBe(refusal);
      expect(await dmInfo(`lvstamp-${id}`)).toEqual(map);
      expect((await lvRow(vgName, lvName)).lv_uuid).toBe(lv.lv_uuid);
    }
    expect((await cli(['delete', name, '--vg', vgName], 0)).stdout).toBe(`deleted ${name}`);
    expect(await dmInfo(`lvstamp-${id}`)).toBeNull();
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
