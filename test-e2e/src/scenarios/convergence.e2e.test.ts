// Partial earlier attempts converge, and names lvm cannot hold are refused up front, through the
// built CLI on real lvm2: an lvextend by hand under a mounted volume is finished by `lvstamp
// resize` to that size; volume group names at and one byte past the limits of lvm2 (NAME_LEN)
// and device-mapper (DM_NAME_LEN, hyphens doubled) hold or refuse lvstamp's LV names.
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  adoptLoopVg,
  createLoopVg,
  createTempDir,
  installCleanupHooks,
  sh,
  shOk,
  vgExists,
} from '../harness/index.js';
import {
  MiB,
  cli,
  deviceBytes,
  filesystemBytes,
  formatAndMount,
  idOf,
  lvRow,
  suffix,
} from './support.js';

installCleanupHooks();

describe('an interrupted resize converges', () => {
  it('lvextend by hand under a mounted volume; lvstamp resize to that size reloads the map and grows the filesystem', async () => {
    const { vgName, dir } = await createLoopVg({ sizeBytes: 512 * MiB });
    const name = `conv-${suffix()}`;
    const id = idOf(name);
    const lvName = `lvstamp_${id}`;
    // 64 MiB + 1 MiB header area -> 68 MiB LV (4 MiB extents); the capacity is exactly 64 MiB
    // (the header records it, DESIGN.md §4 "Capacity"), the extent slack stays unused
    await cli(['create', name, '--size', '64Mi', '--vg', vgName], 0);
    const dataDevice = (await cli(['attach', name], 0)).stdout;
    expect(dataDevice).toBe(`/dev/mapper/lvstamp-${id}`);
    const mountPoint = await formatAndMount(dataDevice, 'ext4', dir);
    await writeFile(join(mountPoint, 'kept.txt'), 'kept\n');
    const before = await filesystemBytes(mountPoint);

    // the first half of a resize, as an admin (or a killed lvstamp) leaves it
    await shOk(['lvextend', '-y', '-L', `${132 * MiB}b`, `${vgName}/${lvName}`]);
    expect((await lvRow(vgName, lvName)).lv_size).toBe(String(132 * MiB));
    expect(await deviceBytes(dataDevice)).toBe(64 * MiB); // the map still has the old size

    const resized = await cli(['resize', name, '--size', '131Mi'], 0);
    expect(resized.stdout).toBe(`${name}: capacity 131 MiB; filesystem on ${mountPoint} grown`);
    expect(await deviceBytes(dataDevice)).toBe(131 * MiB);
    expect(await filesystemBytes(mountPoint)).toBeGreaterThan(before + 60 * MiB);
    expect(await readFile(join(mountPoint, 'kept.txt'), 'utf8')).toBe('kept\n');
    expect((await lvRow(vgName, lvName)).lv_size).toBe(String(132 * MiB)); // no second lvextend
  });
});

describe('volume group names lvm or device-mapper cannot hold lvstamp LV names in', () => {
  // "lvse2e" is the harness's prefix for test VGs; lvstamp_new_<32 hex> is 44 bytes
  const plain80 = `lvse2e${'a'.repeat(74)}`; // 80 + 44 + 3 = 127 < 128: lvm2 NAME_LEN holds
  const plain81 = `lvse2e${'a'.repeat(75)}`; // 128: lvm2 refuses
  const hyphens82 = `lvse2e-${'a'.repeat(71)}-b`; // 80 bytes; dm name 82 + 1 + 44 = 127
  const hyphens83 = `lvse2e-${'a'.repeat(69)}-b-c`; // 80 bytes; dm name 83 + 1 + 44 = 128
  const newLv = `lvstamp_new_${idOf(`limit-${suffix()}`)}`;

  /** A loop-backed VG made by hand with plain lvm (no lvstamp check in the way). */
  async function handMadeVg(vgName: string): Promise<void> {
    const dir = await createTempDir();
    const file = join(dir, 'vg.img');
    adoptLoopVg({ vgName, file });
    await shOk(['truncate', '-s', '64M', file]);
    const loop = (await shOk(['losetup', '--find', '--show', file])).stdout.trim();
    await shOk(['pvcreate', '-q', loop]);
    await shOk(['vgcreate', '-q', vgName, loop]);
  }

  it('measured: lvm2 creates and activates lvstamp_new_<id> at the limits and fails one byte past them', async () => {
    for (const vgName of [plain80, hyphens82]) {
      await handMadeVg(vgName);
      await shOk(['lvcreate', '-q', '-y', '-L', '4M', '-n', newLv, vgName]);
      expect((await lvRow(vgName, newLv)).lv_attr).toMatch(/^-wi-a-/);
    }
    await handMadeVg(plain81);
    const lvmLimit = await sh(['lvcreate', '-q', '-y', '-L', '4M', '-n', newLv, plain81]);
    expect(lvmLimit.exitCode).not.toBe(0);
    expect(lvmLimit.stderr).toContain('length 128 is not supported');
    await handMadeVg(hyphens83);
    const dmLimit = await sh(['lvcreate', '-q', '-y', '-L', '4M', '-n', newLv, hyphens83]);
    expect(dmLimit.exitCode).not.toBe(0);
    expect(dmLimit.stderr).toMatch(/Name ".*" too long/);
  });

  it('lvstamp vg create refuses them up front with the reason and the limit, and accepts the longest', async () => {
    const dir = await createTempDir();
    for (const [vgName, why] of [
      [plain81, 'lvm2 refuses an LV when VG name + LV name + 3 reaches 128 bytes (NAME_LEN)'],
      [hyphens83, "above the kernel's limit of 127 (DM_NAME_LEN 128 with the NUL)"],
    ] as const) {
      const file = join(dir, `${vgName.length}-${vgName.split('-').length}.img`);
      const refused = await cli(['vg', 'create', vgName, '--loop', file, '--size', '64Mi'], 2);
      expect(refused.stderr).toContain(
        `volume group name "${vgName}" (${vgName.length} bytes) is too long for lvstamp's LV names`,
      );
      expect(refused.stderr).toContain(why);
      expect(refused.stderr).toContain(
        'use at most 80 bytes, and at most 82 counting each "-" twice',
      );
      expect(existsSync(file)).toBe(false);
      expect(await vgExists(vgName)).toBe(false);
    }
    const file = join(dir, 'longest.img');
    adoptLoopVg({ vgName: plain80, file });
    await cli(['vg', 'create', plain80, '--loop', file, '--size', '64Mi'], 0);
    const name = `longest-${suffix()}`;
    await cli(['create', name, '--size', '4Mi', '--vg', plain80], 0);
    expect((await lvRow(plain80, `lvstamp_${idOf(name)}`)).lv_attr).toMatch(/^-wi-a-/);
  });
});
