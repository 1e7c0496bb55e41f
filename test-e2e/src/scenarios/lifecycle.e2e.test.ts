// The whole life cycle of a volume
// through the built CLI, deleting twice and deleting what never existed, and
// a volume group whose name makes lvm double the hyphens in dm names.
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  adoptLoopVg,
  createTempDir,
  installCleanupHooks,
  loopDevicesOf,
  newTestVgName,
  shOk,
  vgExists,
} from '../harness/index.js';
import {
  DATA_OFFSET,
  MiB,
  cli,
  cliJson,
  deviceBytes,
  dmInfo,
  filesystemBytes,
  formatAndMount,
  idOf,
  lvRow,
  lvsRows,
  nodeDevice,
  okHeaderOnDisk,
  readBytes,
  suffix,
  type InspectJson,
  type VolumeJson,
} from './support.js';

installCleanupHooks();

const STANDALONE = '0'.repeat(32);

/**
 * `lvstamp vg create NAME --loop FILE --size SIZE` in a fresh temp dir; the
 * harness owns the VG (torn down after the test whatever happens).
 * @returns the VG name, backing file, loop device and temp dir.
 */
async function cliLoopVg(vgName: string, size: string) {
  const dir = await createTempDir();
  const file = join(dir, 'vg.img');
  adoptLoopVg({ vgName, file });
  const made = await cli(['vg', 'create', vgName, '--loop', file, '--size', size], 0);
  const match = new RegExp(
    `^volume group ${vgName} created on (/dev/loop\\d+) \\(${file}\\)$`,
  ).exec(made.stdout);
  expect(match, made.stdout).not.toBeNull();
  const loopDevice = match?.[1] ?? '';
  expect(await loopDevicesOf(file)).toEqual([loopDevice]);
  const tags = await shOk(['vgs', '--noheadings', '-o', 'vg_tags', vgName]);
  expect(tags.stdout.trim()).toBe('lvstamp');
  return { vgName, file, loopDevice, dir };
}

/** The dm table lvstamp must load for a volume: exactly its capacity, behind the 1 MiB header area. */
function expectedTable(lvMajorMinor: string, capacityBytes: number): string {
  return `0 ${capacityBytes / 512} linear ${lvMajorMinor} ${DATA_OFFSET / 512}\n`;
}

describe('life cycle through the CLI', () => {
  it('vg create, create, list, inspect, attach, mkfs+mount, online resize, detach, delete (twice), vg remove', async () => {
    const { vgName, file, loopDevice, dir } = await cliLoopVg(newTestVgName(), '512Mi');
    const name = `life-${suffix()}`;
    const id = idOf(name);
    const lvName = `lvstamp_${id}`;

    // create: exactly 64 MiB usable; 1 MiB header area + 64 MiB, rounded up to 4 MiB extents = 68 MiB LV
    const before = Date.now();
    const created = await cli(['create', name, '--size', '64Mi', '--vg', vgName], 0);
    const after = Date.now();
    expect(created.stdout).toBe(
      `volume ${name} ready: id ${id}, 64 MiB usable on ${vgName}/${lvName} (68 MiB LV)`,
    );
    expect(created.stderr).toBe(`… creating volume ${name} (64 MiB) in ${vgName}`);
    const rows = await lvsRows(vgName);
    expect(rows.map((r) => r.lv_name)).toEqual([lvName]);
    const lv = rows[0];
    if (lv === undefined) throw new Error('no LV');
    expect(lv.lv_size).toBe(String(68 * MiB));
    expect(lv.lv_attr).toMatch(/^-wi-a-/);
    expect(lv.lv_tags.split(',').sort()).toEqual(['lvstamp', `lvstamp.owner=${STANDALONE}`]);
    expect((await readBytes(lv.lv_dm_path, 0, 8)).toString('latin1')).toBe('LVSTAMP\0');

    const { volumes: listed } = await cliJson<{ volumes: VolumeJson[] }>(['list', '--vg', vgName]);
    expect(listed).toEqual([
      {
        name,
        volumeId: id,
        vg: vgName,
        lv: lvName,
        lvSizeBytes: 68 * MiB,
        capacityBytes: 64 * MiB,
        creating: false,
        active: true,
        header: 'ok',
        ownerId: STANDALONE,
        createdAt: expect.any(String) as string,
        dataDevice: null,
        mountPoints: [],
      },
    ]);

    const inspected = await cliJson<InspectJson>(['inspect', name]);
    expect(inspected.devicePath).toBe(lv.lv_dm_path);
    expect(inspected.decode).toEqual({
      status: 'ok',
      version: 2,
      header: {
        volumeId: id,
        ownerId: STANDALONE,
        createdAtMs: expect.any(Number) as number,
        dataOffsetBytes: DATA_OFFSET,
        requestedBytes: 64 * MiB,
        name,
      },
    });
    const createdAtMs = inspected.decode.status === 'ok' ? inspected.decode.header.createdAtMs : 0;
    expect(createdAtMs).toBeGreaterThanOrEqual(before);
    expect(createdAtMs).toBeLessThanOrEqual(after);
    expect(listed[0]?.createdAt).toBe(new Date(createdAtMs).toISOString());
    const header = inspected.decode.status === 'ok' ? inspected.decode.header : null;
    expect(await okHeaderOnDisk(lv.lv_dm_path)).toEqual(header);

    // attach: the data device, whose node carries the map's device number
    const mapName = `lvstamp-${id}`;
    const dataDevice = `/dev/mapper/${mapName}`;
    expect((await cli(['attach', name], 0)).stdout).toBe(dataDevice);
    const map = await dmInfo(mapName);
    expect(map).toEqual({ device: await nodeDevice(dataDevice), open: 0, uuid: `LVSTAMP-${id}` });
    const lvDevice = `${lv.lv_kernel_major}:${lv.lv_kernel_minor}`;
    expect((await shOk(['dmsetup', 'table', mapName])).stdout).toBe(
      expectedTable(lvDevice, 64 * MiB),
    );
    expect(await deviceBytes(dataDevice)).toBe(64 * MiB);

    // a filesystem on the data device
    const mountPoint = await formatAndMount(dataDevice, 'ext4', dir);
    const payload = `written through lvstamp ${id}\n`;
    await writeFile(join(mountPoint, 'data.txt'), payload);
    const sizeBefore = await filesystemBytes(mountPoint);

    // resize online: exactly 200 MiB usable, a 204 MiB LV; the mounted ext4 grows
    const resized = await cli(['resize', name, '--size', '200Mi'], 0);
    expect(resized.stdout).toBe(`${name}: capacity 200 MiB; filesystem on ${mountPoint} grown`);
    expect((await lvRow(vgName, lvName)).lv_size).toBe(String(204 * MiB));
    expect(await deviceBytes(dataDevice)).toBe(200 * MiB);
    expect((await shOk(['dmsetup', 'table', mapName])).stdout).toBe(
      expectedTable(lvDevice, 200 * MiB),
    );
    const sizeAfter = await filesystemBytes(mountPoint);
    expect(sizeAfter).toBeGreaterThan(sizeBefore + 100 * MiB);
    expect(await readFile(join(mountPoint, 'data.txt'), 'utf8')).toBe(payload);

    // detach is refused while mounted, then works
    const refused = await cli(['detach', name], 1);
    expect(refused.stderr).toMatch(/mounted on .*; unmount it first/);
    await shOk(['umount', mountPoint]);
    expect((await cli(['detach', name], 0)).stdout).toBe(`detached ${name}`);
    expect(await dmInfo(mapName)).toBeNull();
    expect(existsSync(dataDevice)).toBe(false);

    // the header is the one written at create, with the new capacity (DESIGN.md §5 Expand)
    expect(await okHeaderOnDisk(lv.lv_dm_path)).toEqual({ ...header, requestedBytes: 200 * MiB });

    // delete, then delete again (scenario 4)
    const deleted = await cli(['delete', name], 0);
    expect(deleted.stdout).toBe(`deleted ${name}`);
    expect(await lvsRows(vgName)).toEqual([]);
    const again = await cli(['delete', name], 0);
    expect(again.stdout).toBe(`${name} did not exist (nothing to do)`);

    // vg remove detaches the loop device and keeps the backing file
    const removed = await cli(['vg', 'remove', vgName], 0);
    expect(removed.stdout).toBe(
      `volume group ${vgName} removed; detached ${loopDevice} (backing files kept)`,
    );
    expect(await vgExists(vgName)).toBe(false);
    expect(await loopDevicesOf(file)).toEqual([]);
    expect(existsSync(file)).toBe(true);
  });

  it('deleting a volume that never existed succeeds, by name and by ID', async () => {
    const name = `never-${suffix()}`;
    expect((await cli(['delete', name], 0)).stdout).toBe(`${name} did not exist (nothing to do)`);
    const id = idOf(`never-${suffix()}`);
    expect((await cli(['delete', id], 0)).stdout).toBe(`${id} did not exist (nothing to do)`);
  });
});

describe('a volume group with hyphens in its name (dm names double them)', () => {
  it('create, attach, mount, resize online, detach and delete all work', async () => {
    const vgName = `lvse2e-x-${suffix()}`;
    const { dir } = await cliLoopVg(vgName, '512Mi');
    const name = `hyphen-${suffix()}`;
    const id = idOf(name);
    const lvName = `lvstamp_${id}`;

    await cli(['create', name, '--size', '32Mi', '--vg', vgName], 0);
    const lv = await lvRow(vgName, lvName);
    expect(lv.lv_dm_path).toBe(`/dev/mapper/${vgName.replaceAll('-', '--')}-${lvName}`);
    expect(lv.lv_size).toBe(String(36 * MiB));
    expect(await okHeaderOnDisk(lv.lv_dm_path)).toMatchObject({ volumeId: id, name });

    const dataDevice = `/dev/mapper/lvstamp-${id}`;
    expect((await cli(['attach', name], 0)).stdout).toBe(dataDevice);
    const lvDevice = `${lv.lv_kernel_major}:${lv.lv_kernel_minor}`;
    expect((await shOk(['dmsetup', 'table', `lvstamp-${id}`])).stdout).toBe(
      expectedTable(lvDevice, 32 * MiB),
    );
    expect((await dmInfo(`lvstamp-${id}`))?.device).toBe(await nodeDevice(dataDevice));

    const mountPoint = await formatAndMount(dataDevice, 'ext4', dir);
    await writeFile(join(mountPoint, 'kept.txt'), 'kept\n');
    const sizeBefore = await filesystemBytes(mountPoint);
    const resized = await cli(['resize', id, '--size', '96Mi'], 0);
    expect(resized.stdout).toBe(`${id}: capacity 96 MiB; filesystem on ${mountPoint} grown`);
    expect((await lvRow(vgName, lvName)).lv_size).toBe(String(100 * MiB));
    expect(await deviceBytes(dataDevice)).toBe(96 * MiB);
    expect(await filesystemBytes(mountPoint)).toBeGreaterThan(sizeBefore + 50 * MiB);
    expect(await readFile(join(mountPoint, 'kept.txt'), 'utf8')).toBe('kept\n');

    await shOk(['umount', mountPoint]);
    expect((await cli(['detach', name], 0)).stdout).toBe(`detached ${name}`);
    expect(await dmInfo(`lvstamp-${id}`)).toBeNull();
    expect((await cli(['delete', name], 0)).stdout).toBe(`deleted ${name}`);
    expect(await lvsRows(vgName)).toEqual([]);
    expect((await cli(['vg', 'remove', vgName], 0)).stdout).toMatch(
      new RegExp(
        `^volume group ${vgName} removed; detached /dev/loop\\d+ \\(backing files kept\\)$`,
      ),
    );
  });
});
