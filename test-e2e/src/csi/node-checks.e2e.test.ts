// The Node service checks what it is pointed at, on real lvm2 through the built driver:
// NodeGetVolumeStats / NodeExpandVolume on an unmounted path and on another volume's path are
// NOT_FOUND (never another filesystem's numbers); a staging path that is a regular file, or a
// relative one, is refused before anything is attached or created; a dd copy of an xfs volume
// stages next to its origin (same filesystem UUID); an lvextend by hand under a published
// volume is finished by NodeExpandVolume.
import { existsSync } from 'node:fs';
import { mkdir, readFile, statfs, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { beforeAll, describe, expect, it } from 'vitest';
import { createLoopVg, installCleanupHooks, sh, shOk } from '../harness/index.js';
import {
  GiB,
  MiB,
  NODE_ID,
  TOPOLOGY_KEY,
  blockCapability,
  driverDir,
  lvRows,
  mountCapability,
  mountsAt,
  startDriver,
  unique,
  type CsiClient,
} from './support.js';
import { randomBytes } from 'node:crypto';

installCleanupHooks();

const OWNER_ID = randomBytes(16).toString('hex');

let vgName = '';
let dir = '';
let csi: CsiClient;

beforeAll(async () => {
  vgName = (await createLoopVg({ sizeBytes: 2 * GiB })).vgName;
  dir = await driverDir();
  csi = (await startDriver({ dir, vgName, ownerId: OWNER_ID })).client;
});

async function create(name: string, bytes: number, capability: object): Promise<string> {
  const response = await csi.ok<{ volume: { volume_id: string } }>('Controller', 'CreateVolume', {
    name,
    capacity_range: { required_bytes: String(bytes) },
    volume_capabilities: [capability],
    accessibility_requirements: { requisite: [{ segments: { [TOPOLOGY_KEY]: NODE_ID } }] },
  });
  return response.volume.volume_id;
}

const stagingOf = (id: string): string => join(dir, 'staging', id);
const targetOf = (id: string): string => join(dir, 'pods', id, 'volume');

async function stage(id: string, capability: object): Promise<void> {
  await csi.ok('Node', 'NodeStageVolume', {
    volume_id: id,
    staging_target_path: stagingOf(id),
    volume_capability: capability,
  });
}

async function unstage(id: string): Promise<void> {
  await csi.ok('Node', 'NodeUnstageVolume', { volume_id: id, staging_target_path: stagingOf(id) });
}

async function stageAndPublish(id: string, capability: object): Promise<void> {
  await stage(id, capability);
  await csi.ok('Node', 'NodePublishVolume', {
    volume_id: id,
    staging_target_path: stagingOf(id),
    target_path: targetOf(id),
    volume_capability: capability,
    readonly: false,
  });
}

async function mapExists(id: string): Promise<boolean> {
  return (await sh(['dmsetup', 'info', `lvstamp-${id}`])).exitCode === 0;
}

async function lvSize(id: string): Promise<string | undefined> {
  return (await lvRows(vgName)).find((r) => r.lv_name === `lvstamp_${id}`)?.lv_size;
}

describe('volume_path must be the volume', () => {
  it("NodeGetVolumeStats and NodeExpandVolume answer NOT_FOUND for an unmounted path and another volume's path", async () => {
    const cap = mountCapability('ext4');
    const a = await create(unique('stats-a'), 32 * MiB, cap);
    const b = await create(unique('stats-b'), 32 * MiB, cap);
    await stageAndPublish(a, cap);
    await stageAndPublish(b, cap);
    await writeFile(join(targetOf(b), 'fill'), Buffer.alloc(4 * MiB, 1));

    // its own mounts: the publish bind mount and the staging mount
    for (const path of [targetOf(a), stagingOf(a)]) {
      const own = await csi.ok<{ volume_condition: { abnormal: boolean } }>(
        'Node',
        'NodeGetVolumeStats',
        { volume_id: a, volume_path: path },
      );
      expect(own.volume_condition.abnormal).toBe(false);
    }
    // another volume's mount: B's numbers must never be reported as A's
    const other = await csi.fails(status.NOT_FOUND, 'Node', 'NodeGetVolumeStats', {
      volume_id: a,
      volume_path: targetOf(b),
    });
    expect(other.details).toMatch(
      new RegExp(
        `^${targetOf(b)} is not a volume path of volume ${a}: .* is mounted there, not its data device`,
      ),
    );
    // a directory on the node's root filesystem: statfs would report that filesystem
    const empty = join(dir, 'pods', 'never-mounted');
    await mkdir(empty, { recursive: true });
    const unmounted = await csi.fails(status.NOT_FOUND, 'Node', 'NodeGetVolumeStats', {
      volume_id: a,
      volume_path: empty,
    });
    expect(unmounted.details).toBe(
      `${empty} is not a volume path of volume ${a}: nothing is mounted there`,
    );

    // expansion pointed at B's path grows nothing
    const sizeA = await lvSize(a);
    await csi.fails(status.NOT_FOUND, 'Node', 'NodeExpandVolume', {
      volume_id: a,
      volume_path: targetOf(b),
      capacity_range: { required_bytes: String(64 * MiB) },
    });
    await csi.fails(status.NOT_FOUND, 'Node', 'NodeExpandVolume', {
      volume_id: a,
      volume_path: empty,
      capacity_range: { required_bytes: String(64 * MiB) },
    });
    expect(await lvSize(a)).toBe(sizeA);
  });

  it('NodeExpandVolume finishes an lvextend done by hand under the published volume', async () => {
    const cap = mountCapability('ext4');
    const id = await create(unique('by-hand'), 32 * MiB, cap); // 36 MiB LV, 35 MiB usable
    await stageAndPublish(id, cap);
    await writeFile(join(targetOf(id), 'kept.txt'), 'kept\n');
    const before = await statfs(targetOf(id));
    await shOk(['lvextend', '-y', '-L', `${68 * MiB}b`, `${vgName}/lvstamp_${id}`]);
    const grown = await csi.ok('Node', 'NodeExpandVolume', {
      volume_id: id,
      volume_path: targetOf(id),
      capacity_range: { required_bytes: String(67 * MiB) },
      volume_capability: cap,
    });
    expect(grown).toEqual({ capacity_bytes: String(67 * MiB) });
    const size = await shOk(['blockdev', '--getsize64', `/dev/mapper/lvstamp-${id}`]);
    expect(size.stdout.trim()).toBe(String(67 * MiB));
    const after = await statfs(targetOf(id));
    expect(after.blocks * after.bsize).toBeGreaterThan(before.blocks * before.bsize + 25 * MiB);
    expect(await readFile(join(targetOf(id), 'kept.txt'), 'utf8')).toBe('kept\n');
    expect(await lvSize(id)).toBe(String(68 * MiB));
  });
});

describe('path arguments are checked before any side effect', () => {
  it('a staging path that is a regular file, or a relative one, is refused and nothing is attached or created', async () => {
    const id = await create(unique('file-staging'), 16 * MiB, blockCapability());
    const file = join(dir, 'staging', `${id}.file`);
    await mkdir(join(dir, 'staging'), { recursive: true });
    await writeFile(file, 'not a directory\n');
    for (const capability of [mountCapability('ext4'), blockCapability()]) {
      const refused = await csi.fails(status.INVALID_ARGUMENT, 'Node', 'NodeStageVolume', {
        volume_id: id,
        staging_target_path: file,
        volume_capability: capability,
      });
      expect(refused.details).toBe(
        `staging_target_path ${file} is a regular file; expected a directory`,
      );
    }
    expect(await mapExists(id)).toBe(false);
    expect(await readFile(file, 'utf8')).toBe('not a directory\n');
    // a relative path would have been made in the driver's working directory (this process's)
    const relative = `relative-staging-${id}`;
    await csi.fails(status.INVALID_ARGUMENT, 'Node', 'NodeStageVolume', {
      volume_id: id,
      staging_target_path: relative,
      volume_capability: mountCapability('ext4'),
    });
    expect(existsSync(join(process.cwd(), relative))).toBe(false);
    expect(await mapExists(id)).toBe(false);
    // and a target path that climbs out of kubelet's directory
    await csi.fails(status.INVALID_ARGUMENT, 'Node', 'NodePublishVolume', {
      volume_id: id,
      staging_target_path: stagingOf(id),
      target_path: join(dir, 'pods') + '/../../escaped',
      volume_capability: blockCapability(),
    });
    expect(await mapExists(id)).toBe(false);
  });
});

describe('two copies of one filesystem on a node', () => {
  it('a dd copy of an xfs volume stages next to its origin (same UUID), never reformatted', async () => {
    const xfs = mountCapability('xfs');
    // mkfs.xfs (xfsprogs 6.1) refuses filesystems below 300 MiB
    const origin = await create(unique('xfs-origin'), 300 * MiB, xfs);
    const copy = await create(unique('xfs-copy'), 300 * MiB, xfs);
    await stage(origin, xfs);
    await writeFile(join(stagingOf(origin), 'origin.txt'), 'written on the origin\n');
    await unstage(origin); // a clean filesystem to copy

    // the copy, as a restore or a clone would make it: the whole data area, byte for byte
    await stage(origin, blockCapability());
    await stage(copy, blockCapability());
    await shOk([
      'dd',
      `if=/dev/mapper/lvstamp-${origin}`,
      `of=/dev/mapper/lvstamp-${copy}`,
      'bs=4M',
      'conv=fsync',
      'status=none',
    ]);
    const uuid = async (id: string): Promise<string> =>
      (
        await shOk(['blkid', '-p', '-s', 'UUID', '-o', 'value', `/dev/mapper/lvstamp-${id}`])
      ).stdout.trim();

    // the failure nouuid prevents: XFS refuses a plain mount of a filesystem whose UUID is
    // already mounted (a mount with nouuid does not register its UUID, so the origin is
    // mounted plainly here, as a tool or an older driver would)
    const plainOrigin = join(dir, 'plain-origin');
    const plainCopy = join(dir, 'plain-copy');
    await mkdir(plainOrigin, { recursive: true });
    await mkdir(plainCopy, { recursive: true });
    await shOk(['mount', '-t', 'xfs', `/dev/mapper/lvstamp-${origin}`, plainOrigin]);
    const refused = await sh(['mount', '-t', 'xfs', `/dev/mapper/lvstamp-${copy}`, plainCopy]);
    expect(refused.exitCode).not.toBe(0);
    expect(await mountsAt(plainCopy)).toEqual([]);

    // lvstamp stages the copy next to it, and then the origin next to the copy
    await stage(copy, xfs);
    await shOk(['umount', plainOrigin]);
    await unstage(origin);
    await stage(origin, xfs);
    expect(await uuid(copy)).toBe(await uuid(origin));
    expect(await mountsAt(stagingOf(origin))).toHaveLength(1);
    expect(await mountsAt(stagingOf(copy))).toHaveLength(1);
    expect(await readFile(join(stagingOf(copy), 'origin.txt'), 'utf8')).toBe(
      'written on the origin\n',
    );
    // the two are separate filesystems: a write to one does not show in the other
    await writeFile(join(stagingOf(copy), 'copy.txt'), 'copy only\n');
    expect(existsSync(join(stagingOf(origin), 'copy.txt'))).toBe(false);
    await unstage(copy);
    await unstage(origin);
  });
});
