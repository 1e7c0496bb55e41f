import { existsSync } from 'node:fs';
import { mkdir, open, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  CleanupRegistry,
  adoptLoopVg,
  createLoopVg,
  installCleanupHooks,
  loopDevicesOf,
  mountPoints,
  parseDmTable,
  sh,
  shOk,
  teardownLoopVg,
  vgExists,
  type LoopVg,
} from './harness/index.js';

installCleanupHooks();

const MiB = 1024 * 1024;
/** Data area offset of DESIGN.md §4, in 512-byte sectors. */
const DATA_OFFSET_SECTORS = MiB / 512;

interface LvRow {
  lv_name: string;
  lv_attr: string;
  lv_size: string;
  lv_kernel_major: string;
  lv_kernel_minor: string;
  lv_dm_path: string;
}

async function lvRow(vgName: string, lvName: string): Promise<LvRow> {
  const result = await shOk([
    'lvs',
    '--reportformat',
    'json',
    '--units',
    'b',
    '--nosuffix',
    '-o',
    'lv_name,lv_attr,lv_size,lv_kernel_major,lv_kernel_minor,lv_dm_path',
    '-S',
    `lv_name=${lvName}`,
    vgName,
  ]);
  const report = JSON.parse(result.stdout) as { report: { lv: LvRow[] }[] };
  const rows = report.report[0]?.lv ?? [];
  expect(rows).toHaveLength(1);
  return rows[0] as LvRow;
}

/**
 * Creates an active LV and a linear map over its data area (1 MiB offset),
 * makes ext4 on the map and mounts it under the VG's temp dir.
 * Returns the map name and the mount point.
 */
async function lvWithMountedMap(
  vg: LoopVg,
  lvBytes: number,
): Promise<{ map: string; mountPoint: string; lv: LvRow }> {
  await shOk(['lvcreate', '-y', '-n', 'lv0', '-L', `${lvBytes}b`, vg.vgName]);
  const lv = await lvRow(vg.vgName, 'lv0');
  const map = `${vg.vgName}-data`;
  const dataSectors = (lvBytes - MiB) / 512;
  const table = `0 ${dataSectors} linear ${lv.lv_kernel_major}:${lv.lv_kernel_minor} ${DATA_OFFSET_SECTORS}`;
  await shOk(['dmsetup', 'create', '--noudevsync', map, '--table', table]);
  await shOk(['dmsetup', 'mknodes', map]);
  await shOk(['mkfs.ext4', '-q', `/dev/mapper/${map}`]);
  const mountPoint = join(vg.dir, 'mnt');
  await mkdir(mountPoint);
  await shOk(['mount', `/dev/mapper/${map}`, mountPoint]);
  return { map, mountPoint, lv };
}

/** Asserts that nothing of the VG is left: no VG, no map, no loop device, no file. */
async function expectGone(vg: LoopVg, map?: string): Promise<void> {
  expect(await vgExists(vg.vgName)).toBe(false);
  expect(await loopDevicesOf(vg.file)).toEqual([]);
  expect(existsSync(vg.file)).toBe(false);
  expect((await mountPoints()).filter((m) => m.startsWith(vg.dir))).toEqual([]);
  if (map !== undefined) {
    const info = await sh(['dmsetup', 'info', map]);
    expect(info.exitCode).toBe(1);
    expect(existsSync(`/dev/mapper/${map}`)).toBe(false);
  }
}

describe('loop-backed volume groups', () => {
  it('activate LVs; a linear map at 1 MiB carries ext4 and leaves sector 0 alone; teardown leaves nothing', async () => {
    const vg = await createLoopVg({ sizeBytes: 256 * MiB });
    expect(vg.vgName).toMatch(/^lvse2e[0-9a-f]{8}$/);
    expect(vg.loopDevice).toMatch(/^\/dev\/loop\d+$/);
    expect(await loopDevicesOf(vg.file)).toEqual([vg.loopDevice]);

    await shOk(['lvcreate', '-y', '-n', 'lv0', '-L', `${64 * MiB}b`, vg.vgName]);
    const lv = await lvRow(vg.vgName, 'lv0');
    expect(lv.lv_size).toBe(String(64 * MiB));
    expect(lv.lv_attr).toMatch(/^-wi-a-/);
    expect(Number(lv.lv_kernel_major)).toBeGreaterThan(0);
    expect(lv.lv_dm_path).toBe(`/dev/mapper/${vg.vgName}-lv0`);

    // A marker in LV sector 0, where the lvstamp header lives.
    const marker = Buffer.alloc(512, 0);
    marker.write('LVSE2E-SECTOR-0', 'ascii');
    const lvDevice = await open(lv.lv_dm_path, 'r+');
    await lvDevice.write(marker, 0, 512, 0);
    await lvDevice.sync();
    await lvDevice.close();

    const map = `${vg.vgName}-data`;
    const table = `0 ${(63 * MiB) / 512} linear ${lv.lv_kernel_major}:${lv.lv_kernel_minor} ${DATA_OFFSET_SECTORS}`;
    await shOk(['dmsetup', 'create', '--noudevsync', map, '--table', table]);
    await shOk(['dmsetup', 'mknodes', map]);
    expect((await shOk(['dmsetup', 'table', map])).stdout).toBe(`${table}\n`);
    expect(parseDmTable((await shOk(['dmsetup', 'table'])).stdout)).toContainEqual({
      name: map,
      target: 'linear',
      devices: [`${lv.lv_kernel_major}:${lv.lv_kernel_minor}`],
    });
    expect((await shOk(['blockdev', '--getsize64', `/dev/mapper/${map}`])).stdout).toBe(
      `${63 * MiB}\n`,
    );

    await shOk(['mkfs.ext4', '-q', `/dev/mapper/${map}`]);
    const mountPoint = join(vg.dir, 'mnt');
    await mkdir(mountPoint);
    await shOk(['mount', `/dev/mapper/${map}`, mountPoint]);
    await writeFile(join(mountPoint, 'hello.txt'), 'written through the map\n');
    await shOk(['umount', mountPoint]);
    await shOk(['mount', '-o', 'ro', `/dev/mapper/${map}`, mountPoint]);
    expect(await readFile(join(mountPoint, 'hello.txt'), 'utf8')).toBe('written through the map\n');
    const probe = await shOk(['blkid', '-p', '-o', 'export', `/dev/mapper/${map}`]);
    expect(probe.stdout).toMatch(/^TYPE=ext4$/m);

    const sector0 = Buffer.alloc(512);
    const reread = await open(lv.lv_dm_path, 'r');
    await reread.read(sector0, 0, 512, 0);
    await reread.close();
    expect(sector0.equals(marker)).toBe(true);

    // Torn down while mounted and mapped: the teardown handles both.
    await vg.cleanup();
    await expectGone(vg, map);
    await vg.cleanup(); // idempotent
  });

  it('the cleanup registry undoes a VG with a mounted map when a nested helper throws', async () => {
    const registry = new CleanupRegistry();
    let vg: LoopVg | undefined;
    let map = '';
    const nested = async (): Promise<never> => {
      vg = await createLoopVg({ sizeBytes: 128 * MiB }, registry);
      map = (await lvWithMountedMap(vg, 32 * MiB)).map;
      throw new Error('deliberate failure inside a nested helper');
    };
    await expect(nested()).rejects.toThrow('deliberate failure inside a nested helper');
    if (vg === undefined) throw new Error('the helper did not create its VG');
    expect(registry.size).toBe(2); // the temp dir, the VG
    expect(await vgExists(vg.vgName)).toBe(true);

    await registry.runAll();
    expect(registry.size).toBe(0);
    await expectGone(vg, map);
    expect(existsSync(vg.dir)).toBe(false);
  });

  it('a VG whose creation failed half-way (after losetup and pvcreate) is undone', async () => {
    const registry = new CleanupRegistry();
    // 3 bytes is not a valid extent size: vgcreate fails after losetup and pvcreate succeeded.
    await expect(createLoopVg({ sizeBytes: 64 * MiB, extentSize: 3 }, registry)).rejects.toThrow(
      /^vgcreate /,
    );
    const loops = (await shOk(['losetup', '--list', '-n', '-O', 'BACK-FILE'])).stdout;
    expect(loops).toMatch(/lvse2e-[^/]+\/pv\.img/);

    await registry.runAll();
    const after = (await shOk(['losetup', '--list', '-n', '-O', 'BACK-FILE'])).stdout;
    expect(after).not.toMatch(/lvse2e-[^/]+\/pv\.img/);
  });

  it('creates VGs with the requested extent size', async () => {
    const vg = await createLoopVg({ sizeBytes: 64 * MiB, extentSize: 1 * MiB });
    const result = await shOk([
      'vgs',
      '--noheadings',
      '--units',
      'b',
      '--nosuffix',
      '-o',
      'vg_extent_size',
      vg.vgName,
    ]);
    expect(result.stdout.trim()).toBe(String(MiB));
  });
});

describe('safety', () => {
  it('refuses to tear down a VG this process did not create, whatever its name', async () => {
    await expect(teardownLoopVg('vg0', '/nonexistent')).rejects.toThrow(
      'refusing to touch volume group "vg0": not created by this test process',
    );
    await expect(teardownLoopVg('lvse2e00000000', '/nonexistent')).rejects.toThrow(
      'refusing to touch volume group "lvse2e00000000": not created by this test process',
    );
    expect(() => {
      adoptLoopVg({ vgName: 'data', file: '/nonexistent' }, new CleanupRegistry());
    }).toThrow('test volume group names must start with lvse2e: data');
  });
});
