// Exact capacities on real LVM through the built driver (DESIGN.md §4 "Capacity", §5 Expand): the
// capacity is what was asked for, in whole 4 KiB blocks; the data device (blockdev --getsize64), a
// fresh filesystem and capacity_bytes agree, for create and for expansion; the extent slack stays
// inside the LV. A filesystem that mkfs can never make is raised to its minimum or refused. A v1
// volume made the old way (capacity = LV size − 1 MiB) keeps working and becomes exact when grown.
// An expansion (NodeExpandVolume: lvstamp expands on the node only) the volume group cannot hold
// is OUT_OF_RANGE (DESIGN.md §7 "Expansion on the node") and changes nothing.
import { randomBytes } from 'node:crypto';
import { open, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import {
  clearDataAreaSignatures,
  encodeHeader,
  FILESYSTEM_MINIMUM_BYTES,
  writeHeaderBlock,
} from '@lvstamp/core';
import { beforeAll, describe, expect, it } from 'vitest';
import { createLoopVg, createTempDir, installCleanupHooks, sh, shOk } from '../harness/index.js';
import {
  GiB,
  MiB,
  driverDir,
  headerOf,
  idOf,
  lvRows,
  mountCapability,
  startDriver,
  unique,
  vgFreeBytes,
  type CsiClient,
  type VolumeMsg,
} from './support.js';

installCleanupHooks();

const OWNER_ID = randomBytes(16).toString('hex');
let vgName = '';
let dir = '';
let csi: CsiClient;

beforeAll(async () => {
  const vg = await createLoopVg({ sizeBytes: 5 * GiB });
  vgName = vg.vgName;
  dir = await driverDir();
  csi = (await startDriver({ dir, vgName, ownerId: OWNER_ID })).client;
});

async function create(name: string, range: object, fsType = 'ext4'): Promise<VolumeMsg> {
  const response = await csi.ok<{ volume: VolumeMsg }>('Controller', 'CreateVolume', {
    name,
    capacity_range: range,
    volume_capabilities: [mountCapability(fsType)],
  });
  return response.volume;
}

async function stage(id: string, fsType: string): Promise<string> {
  const staging = join(dir, 'staging', id);
  await csi.ok('Node', 'NodeStageVolume', {
    volume_id: id,
    staging_target_path: staging,
    volume_capability: mountCapability(fsType),
  });
  return staging;
}

async function unstageAndDelete(id: string, staging: string): Promise<void> {
  await csi.ok('Node', 'NodeUnstageVolume', { volume_id: id, staging_target_path: staging });
  await csi.ok('Controller', 'DeleteVolume', { volume_id: id });
}

/** Bytes of a block device (`blockdev --getsize64`). */
async function deviceBytes(path: string): Promise<number> {
  return Number((await shOk(['blockdev', '--getsize64', path])).stdout.trim());
}

/** Size of the filesystem on `device` from its superblock: ext4 block count × block size, xfs data blocks × block size. */
async function filesystemBytes(device: string, fsType: string): Promise<number> {
  if (fsType === 'ext4') {
    const out = (await shOk(['dumpe2fs', '-h', device])).stdout;
    const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(out)?.[1]);
    return field('Block count') * field('Block size');
  }
  const out = (await shOk(['xfs_db', '-r', '-c', 'sb 0', '-c', 'p dblocks blocksize', device]))
    .stdout;
  const field = (name: string) => Number(new RegExp(`^${name} = (\\d+)`, 'm').exec(out)?.[1]);
  return field('dblocks') * field('blocksize');
}

/** The header version in sector 0 of `lvDevice` (bytes 8–9, DESIGN.md §4). */
async function headerVersion(lvDevice: string): Promise<number> {
  const handle = await open(lvDevice, 'r');
  try {
    const b = Buffer.alloc(512);
    await handle.read(b, 0, 512, 0);
    return b.readUInt16LE(8);
  } finally {
    await handle.close();
  }
}

function lvOf(id: string) {
  return lvRows(vgName).then((rows) => rows.find((r) => r.lv_name === `lvstamp_${id}`));
}

describe('exact capacities', () => {
  it('1 GiB: capacity_bytes, the data device and a fresh ext4 are exactly 1 GiB; expanded to exactly 2 GiB they all are 2 GiB', async () => {
    const name = unique('exact');
    const id = idOf(name);
    const volume = await create(name, { required_bytes: String(GiB) });
    expect(volume.capacity_bytes).toBe(String(GiB));
    // the LV holds the 1 MiB header area and the capacity, in whole 4 MiB extents: 3 MiB slack
    expect((await lvOf(id))?.lv_size).toBe(String(GiB + 4 * MiB));
    const lv = await lvOf(id);
    expect(await headerVersion(lv?.lv_dm_path ?? '')).toBe(2);
    expect((await headerOf(lv?.lv_dm_path ?? '')).requestedBytes).toBe(GiB);
    const staging = await stage(id, 'ext4');
    const device = `/dev/mapper/lvstamp-${id}`;
    expect(await deviceBytes(device)).toBe(GiB);
    expect(await filesystemBytes(device, 'ext4')).toBe(GiB);
    await writeFile(join(staging, 'kept.txt'), 'kept\n');
    const listed = await csi.ok<{ entries: { volume: VolumeMsg }[] }>('Controller', 'ListVolumes');
    expect(listed.entries.find((e) => e.volume.volume_id === id)?.volume.capacity_bytes).toBe(
      String(GiB),
    );

    // lvstamp expands on the node only (DESIGN.md §7 "Expansion on the node")
    const nodeExpanded = await csi.ok<{ capacity_bytes: string }>('Node', 'NodeExpandVolume', {
      volume_id: id,
      volume_path: staging,
      capacity_range: { required_bytes: String(2 * GiB) },
      volume_capability: mountCapability(),
    });
    expect(nodeExpanded.capacity_bytes).toBe(String(2 * GiB));
    expect((await lvOf(id))?.lv_size).toBe(String(2 * GiB + 4 * MiB));
    expect(await deviceBytes(device)).toBe(2 * GiB);
    expect(await filesystemBytes(device, 'ext4')).toBe(2 * GiB);
    expect(await readFile(join(staging, 'kept.txt'), 'utf8')).toBe('kept\n');
    await unstageAndDelete(id, staging);
  });

  it('required == limit for an odd whole-4 KiB size: exactly that, and a fresh xfs fills it', async () => {
    const name = unique('odd');
    const id = idOf(name);
    const bytes = 300 * MiB + 3 * 4096;
    const volume = await create(
      name,
      { required_bytes: String(bytes), limit_bytes: String(bytes) },
      'xfs',
    );
    expect(volume.capacity_bytes).toBe(String(bytes));
    const staging = await stage(id, 'xfs');
    const device = `/dev/mapper/lvstamp-${id}`;
    expect(await deviceBytes(device)).toBe(bytes);
    expect(await filesystemBytes(device, 'xfs')).toBe(bytes);
    await unstageAndDelete(id, staging);
  });
});

describe('an expansion the volume group cannot hold', () => {
  it('NodeExpandVolume: OUT_OF_RANGE naming the free and needed bytes, the LV, its header and the filesystem unchanged; a smaller request then grows it', async () => {
    const name = unique('too-big');
    const id = idOf(name);
    await create(name, { required_bytes: String(64 * MiB) });
    const staging = await stage(id, 'ext4');
    const device = `/dev/mapper/lvstamp-${id}`;
    const before = await lvOf(id);
    const failure = await csi.fails(status.OUT_OF_RANGE, 'Node', 'NodeExpandVolume', {
      volume_id: id,
      volume_path: staging,
      capacity_range: { required_bytes: String(64 * GiB) },
      volume_capability: mountCapability(),
    });
    const shape = new RegExp(
      `^cannot grow here: volume group ${vgName} has (\\d+) bytes free, growing volume ${id} needs (\\d+)$`,
    );
    expect(failure.details).toMatch(shape);
    const [, free, needed] = shape.exec(failure.details) ?? [];
    // the LV grows from 64 MiB + one extent to 64 GiB + one extent; the group has less free
    expect(Number(needed)).toBe(64 * GiB - 64 * MiB);
    expect(Number(free)).toBe(await vgFreeBytes(vgName));
    const after = await lvOf(id);
    expect(after?.lv_size).toBe(before?.lv_size);
    expect((await headerOf(after?.lv_dm_path ?? '')).requestedBytes).toBe(64 * MiB);
    expect(await deviceBytes(device)).toBe(64 * MiB);
    expect(await filesystemBytes(device, 'ext4')).toBe(64 * MiB);
    // what the kubelet asks for after the user lowers the request (recovery from a failed expansion)
    const grown = await csi.ok<{ capacity_bytes: string }>('Node', 'NodeExpandVolume', {
      volume_id: id,
      volume_path: staging,
      capacity_range: { required_bytes: String(128 * MiB) },
      volume_capability: mountCapability(),
    });
    expect(grown.capacity_bytes).toBe(String(128 * MiB));
    expect((await lvOf(id))?.lv_size).toBe(String(128 * MiB + 4 * MiB));
    expect(await deviceBytes(device)).toBe(128 * MiB);
    expect(await filesystemBytes(device, 'ext4')).toBe(128 * MiB);
    await unstageAndDelete(id, staging);
  });
});

describe('filesystem minimums', () => {
  it('the installed mkfs.xfs and mkfs.ext4 refuse exactly below FILESYSTEM_MINIMUM_BYTES', async () => {
    const tmp = await createTempDir();
    const cases = [
      ['xfs', ['mkfs.xfs', '-q', '-K']],
      ['ext4', ['mkfs.ext4', '-F', '-q', '-E', 'nodiscard']],
    ] as const;
    for (const [fsType, mkfs] of cases) {
      const minimum = FILESYSTEM_MINIMUM_BYTES[fsType];
      for (const [bytes, ok] of [
        [minimum, true],
        [minimum - 4096, false],
      ] as const) {
        const image = join(tmp, `${fsType}-${bytes}.img`);
        await shOk(['truncate', '-s', String(bytes), image]);
        const result = await sh([...mkfs, image]);
        expect(`${fsType} ${bytes}: exit ${result.exitCode === 0 ? 0 : 'non-zero'}`).toBe(
          `${fsType} ${bytes}: exit ${ok ? 0 : 'non-zero'}`,
        );
      }
    }
  });

  it('xfs of 16 MiB is raised to the mkfs.xfs minimum, reported as such, and stages', async () => {
    const name = unique('small-xfs');
    const id = idOf(name);
    const volume = await create(name, { required_bytes: String(16 * MiB) }, 'xfs');
    expect(volume.capacity_bytes).toBe(String(FILESYSTEM_MINIMUM_BYTES.xfs));
    const staging = await stage(id, 'xfs');
    const mount = await shOk(['findmnt', '-n', '-o', 'FSTYPE', staging]);
    expect(mount.stdout.trim()).toBe('xfs');
    expect(await deviceBytes(`/dev/mapper/lvstamp-${id}`)).toBe(FILESYSTEM_MINIMUM_BYTES.xfs);
    await unstageAndDelete(id, staging);
  });

  it('xfs of 16 MiB with a 16 MiB limit: OUT_OF_RANGE, and no LV is made', async () => {
    const name = unique('small-xfs-limit');
    const failure = await csi.fails(status.OUT_OF_RANGE, 'Controller', 'CreateVolume', {
      name,
      capacity_range: { required_bytes: String(16 * MiB), limit_bytes: String(16 * MiB) },
      volume_capabilities: [mountCapability('xfs')],
    });
    expect(failure.details).toBe(
      `the filesystem needs at least ${FILESYSTEM_MINIMUM_BYTES.xfs} bytes, above limitBytes ${16 * MiB}`,
    );
    expect((await lvRows(vgName)).filter((r) => r.lv_name.endsWith(idOf(name)))).toEqual([]);
  });
});

describe('a v1 volume made the old way', () => {
  it('keeps its whole-LV capacity, stages with its data, and becomes exact (v2) when expanded', async () => {
    const name = unique('old-v1');
    const id = idOf(name);
    // what lvstamp before header v2 made of a 20 MiB request: a 24 MiB LV whose whole data area's
    // first and last MiB are zeroed (the extents held deleted volumes), a v1 header
    await shOk([
      'lvcreate',
      '--yes',
      '--wipesignatures',
      'y',
      '--zero',
      'y',
      '--activate',
      'y',
      '-n',
      `lvstamp_${id}`,
      '-L',
      `${24 * MiB}b`,
      '--addtag',
      'lvstamp',
      '--addtag',
      `lvstamp.owner=${OWNER_ID}`,
      vgName,
    ]);
    const lv = await lvOf(id);
    if (lv === undefined) throw new Error('no LV');
    const fields = {
      volumeId: id,
      ownerId: OWNER_ID,
      createdAtMs: Date.now(),
      dataOffsetBytes: MiB,
      requestedBytes: 20 * MiB,
      name,
    };
    await clearDataAreaSignatures(lv.lv_dm_path, { dataOffsetBytes: MiB, sizeBytes: 24 * MiB });
    await writeHeaderBlock(lv.lv_dm_path, encodeHeader(fields, 1));
    expect(await headerVersion(lv.lv_dm_path)).toBe(1);

    const listed = await csi.ok<{ entries: { volume: VolumeMsg }[] }>('Controller', 'ListVolumes');
    expect(listed.entries.find((e) => e.volume.volume_id === id)?.volume.capacity_bytes).toBe(
      String(23 * MiB),
    );
    // the old data device: the whole LV behind the header, and its filesystem fills it
    const staging = await stage(id, 'ext4');
    const device = `/dev/mapper/lvstamp-${id}`;
    expect(await deviceBytes(device)).toBe(23 * MiB);
    expect(await filesystemBytes(device, 'ext4')).toBe(23 * MiB);
    await writeFile(join(staging, 'old.txt'), 'old\n');

    const expanded = await csi.ok<{ capacity_bytes: string }>('Node', 'NodeExpandVolume', {
      volume_id: id,
      volume_path: staging,
      capacity_range: { required_bytes: String(40 * MiB) },
    });
    expect(expanded.capacity_bytes).toBe(String(40 * MiB));
    const grown = await lvOf(id);
    expect(grown?.lv_size).toBe(String(44 * MiB));
    expect(await headerVersion(lv.lv_dm_path)).toBe(2);
    expect((await headerOf(lv.lv_dm_path)).requestedBytes).toBe(40 * MiB);
    expect(await deviceBytes(device)).toBe(40 * MiB);
    expect(await filesystemBytes(device, 'ext4')).toBe(40 * MiB);
    expect(await readFile(join(staging, 'old.txt'), 'utf8')).toBe('old\n');
    await unstageAndDelete(id, staging);
  });
});
