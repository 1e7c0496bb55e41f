// CSI conformance on real LVM, part 2: the Node service through the built driver's
// unix socket: argument checks, full life cycles for ext4, xfs and raw block (create → stage →
// publish → write → unpublish → unstage → delete, each step repeated to prove idempotency),
// a driver restart between stage and publish (state comes back from LVM and mountinfo only),
// then online expansion of that published volume and NodeGetVolumeStats.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, open, readFile, statfs, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLoopVg, installCleanupHooks, sh } from '../harness/index.js';
import {
  DATA_OFFSET,
  GiB,
  MiB,
  NODE_ID,
  TOPOLOGY_KEY,
  blockCapability,
  driverDir,
  headerOf,
  lvRows,
  mountCapability,
  mountsAt,
  reportMedian,
  startDriver,
  timed,
  idOf,
  unique,
  type CsiClient,
  type RunningDriver,
  type VolumeMsg,
} from './support.js';

installCleanupHooks();

const OWNER_ID = randomBytes(16).toString('hex');

let vgName = '';
let dir = '';
let driver: RunningDriver;
let csi: CsiClient;
const createMs: number[] = [];
const stageMs: number[] = [];

beforeAll(async () => {
  const vg = await createLoopVg({ sizeBytes: 2 * GiB });
  vgName = vg.vgName;
  dir = await driverDir();
  driver = await startDriver({ dir, vgName, ownerId: OWNER_ID });
  csi = driver.client;
});

afterAll(() => {
  reportMedian('CreateVolume (node suite)', createMs);
  reportMedian('NodeStageVolume', stageMs);
});

async function create(name: string, requiredBytes: number, capability: object): Promise<VolumeMsg> {
  const response = await timed(createMs, () =>
    csi.ok<{ volume: VolumeMsg }>('Controller', 'CreateVolume', {
      name,
      capacity_range: { required_bytes: String(requiredBytes) },
      volume_capabilities: [capability],
      accessibility_requirements: { requisite: [{ segments: { [TOPOLOGY_KEY]: NODE_ID } }] },
    }),
  );
  return response.volume;
}

function pathsFor(id: string): { staging: string; target: string } {
  return { staging: join(dir, 'staging', id), target: join(dir, 'pods', id, 'volume') };
}

async function stage(id: string, staging: string, capability: object): Promise<void> {
  await timed(stageMs, () =>
    csi.ok('Node', 'NodeStageVolume', {
      volume_id: id,
      staging_target_path: staging,
      volume_capability: capability,
    }),
  );
}

/** `lvstamp-<id>` exists in device-mapper. */
async function mapExists(id: string): Promise<boolean> {
  return (await sh(['dmsetup', 'info', `lvstamp-${id}`])).exitCode === 0;
}

describe('Node argument checks', () => {
  it('every Node RPC refuses malformed requests with the spec codes', async () => {
    const unknown = idOf(unique('never'));
    const cap = mountCapability();
    const staging = join(dir, 'staging', 'x');
    const target = join(dir, 'pods', 'x', 'volume');
    await csi.fails(status.INVALID_ARGUMENT, 'Node', 'NodeStageVolume', {
      volume_id: '',
      staging_target_path: staging,
      volume_capability: cap,
    });
    await csi.fails(status.INVALID_ARGUMENT, 'Node', 'NodeStageVolume', {
      volume_id: unknown,
      staging_target_path: '',
      volume_capability: cap,
    });
    await csi.fails(status.INVALID_ARGUMENT, 'Node', 'NodeStageVolume', {
      volume_id: unknown,
      staging_target_path: staging,
    });
    await csi.fails(status.INVALID_ARGUMENT, 'Node', 'NodeStageVolume', {
      volume_id: unknown,
      staging_target_path: staging,
      volume_capability: mountCapability('ext4', 'MULTI_NODE_MULTI_WRITER'),
    });
    await csi.fails(status.NOT_FOUND, 'Node', 'NodeStageVolume', {
      volume_id: unknown,
      staging_target_path: staging,
      volume_capability: cap,
    });
    await csi.fails(status.INVALID_ARGUMENT, 'Node', 'NodeUnstageVolume', {
      volume_id: unknown,
      staging_target_path: '',
    });
    await csi.fails(status.INVALID_ARGUMENT, 'Node', 'NodePublishVolume', {
      volume_id: unknown,
      staging_target_path: staging,
      target_path: '',
      volume_capability: cap,
    });
    await csi.fails(status.INVALID_ARGUMENT, 'Node', 'NodePublishVolume', {
      volume_id: unknown,
      staging_target_path: staging,
      target_path: target,
    });
    await csi.fails(status.NOT_FOUND, 'Node', 'NodePublishVolume', {
      volume_id: unknown,
      staging_target_path: staging,
      target_path: target,
      volume_capability: cap,
    });
    await csi.fails(status.INVALID_ARGUMENT, 'Node', 'NodeUnpublishVolume', {
      volume_id: unknown,
      target_path: '',
    });
    await csi.fails(status.INVALID_ARGUMENT, 'Node', 'NodeGetVolumeStats', {
      volume_id: unknown,
      volume_path: '',
    });
    await csi.fails(status.NOT_FOUND, 'Node', 'NodeGetVolumeStats', {
      volume_id: unknown,
      volume_path: target,
    });
    await csi.fails(status.INVALID_ARGUMENT, 'Node', 'NodeExpandVolume', {
      volume_id: unknown,
      volume_path: '',
    });
    await csi.fails(status.NOT_FOUND, 'Node', 'NodeExpandVolume', {
      volume_id: unknown,
      volume_path: target,
    });
    // unpublish of a target that was never there succeeds (spec: idempotent)
    await csi.ok('Node', 'NodeUnpublishVolume', { volume_id: unknown, target_path: target });
    expect(await csi.ok('Node', 'NodeGetInfo')).toEqual({
      node_id: NODE_ID,
      max_volumes_per_node: '0',
      accessible_topology: { segments: { [TOPOLOGY_KEY]: NODE_ID } },
    });
    expect(await csi.ok('Node', 'NodeGetCapabilities')).toEqual({
      capabilities: [
        'STAGE_UNSTAGE_VOLUME',
        'GET_VOLUME_STATS',
        'EXPAND_VOLUME',
        'VOLUME_CONDITION',
        'SINGLE_NODE_MULTI_WRITER',
      ].map((type) => ({ rpc: { type }, type: 'rpc' })),
    });
  });
});

describe('life cycles', () => {
  /** mkfs.xfs (xfsprogs 6.1) refuses filesystems below 300 MiB. */
  const cases = [
    { fsType: 'ext4', bytes: 64 * MiB },
    { fsType: 'xfs', bytes: 300 * MiB },
  ] as const;

  for (const { fsType, bytes } of cases) {
    it(`${fsType}: create → stage → publish → write → unpublish → unstage → delete, each twice`, async () => {
      const name = unique(`life-${fsType}`);
      const id = idOf(name);
      const cap = mountCapability(fsType);
      const { staging, target } = pathsFor(id);
      // the xfs volume lands on the extents of the deleted ext4 one: it must still stage as a
      // blank volume and get its own filesystem, never the old one (DESIGN.md §5)
      expect((await create(name, bytes, cap)).volume_id).toBe(id);

      await stage(id, staging, cap);
      await stage(id, staging, cap);
      const staged = await mountsAt(staging);
      expect(staged).toHaveLength(1);
      expect((await sh(['findmnt', '-n', '-o', 'FSTYPE', staging])).stdout.trim()).toBe(fsType);
      // publishing an unstaged path is refused, never mounted
      await csi.fails(status.FAILED_PRECONDITION, 'Node', 'NodePublishVolume', {
        volume_id: id,
        staging_target_path: join(dir, 'staging', 'elsewhere'),
        target_path: join(dir, 'pods', 'elsewhere'),
        volume_capability: cap,
      });

      const publish = {
        volume_id: id,
        staging_target_path: staging,
        target_path: target,
        volume_capability: cap,
        readonly: false,
      };
      await csi.ok('Node', 'NodePublishVolume', publish);
      await csi.ok('Node', 'NodePublishVolume', publish);
      expect(await mountsAt(target)).toHaveLength(1);
      await csi.fails(status.ALREADY_EXISTS, 'Node', 'NodePublishVolume', {
        ...publish,
        readonly: true,
      });
      expect(await mountsAt(target)).toHaveLength(1);

      await writeFile(join(target, 'hello.txt'), `hello ${fsType}\n`);
      expect(await readFile(join(staging, 'hello.txt'), 'utf8')).toBe(`hello ${fsType}\n`);

      // a staged volume cannot be deleted out from under its user
      const busy = await csi.outcome('Controller', 'DeleteVolume', { volume_id: id });
      expect(status[busy.code]).toBe('FAILED_PRECONDITION');

      await csi.ok('Node', 'NodeUnpublishVolume', { volume_id: id, target_path: target });
      await csi.ok('Node', 'NodeUnpublishVolume', { volume_id: id, target_path: target });
      expect(existsSync(target)).toBe(false);
      await csi.ok('Node', 'NodeUnstageVolume', { volume_id: id, staging_target_path: staging });
      await csi.ok('Node', 'NodeUnstageVolume', { volume_id: id, staging_target_path: staging });
      expect(await mountsAt(staging)).toEqual([]);
      expect(await mapExists(id)).toBe(false);

      // staged again: the filesystem and the file are still there (never reformatted)
      await stage(id, staging, cap);
      expect(await readFile(join(staging, 'hello.txt'), 'utf8')).toBe(`hello ${fsType}\n`);
      // the same volume staged as the other filesystem is refused, not reformatted
      await csi.ok('Node', 'NodeUnstageVolume', { volume_id: id, staging_target_path: staging });
      await csi.fails(status.FAILED_PRECONDITION, 'Node', 'NodeStageVolume', {
        volume_id: id,
        staging_target_path: staging,
        volume_capability: mountCapability(fsType === 'ext4' ? 'xfs' : 'ext4'),
      });
      await csi.ok('Node', 'NodeUnstageVolume', { volume_id: id, staging_target_path: staging });

      await csi.ok('Controller', 'DeleteVolume', { volume_id: id });
      await csi.ok('Controller', 'DeleteVolume', { volume_id: id });
      expect((await lvRows(vgName)).filter((r) => r.lv_name.endsWith(id))).toEqual([]);
    });
  }

  it('raw block: bytes written through the published device file read back, behind the header', async () => {
    const name = unique('life-block');
    const id = idOf(name);
    const cap = blockCapability();
    const { staging, target } = pathsFor(id);
    const volume = await create(name, 16 * MiB, cap);
    // exactly what was asked for (DESIGN.md §4 "Capacity"); 1 MiB header + 16 MiB -> 20 MiB LV
    expect(volume.capacity_bytes).toBe(String(16 * MiB));
    await stage(id, staging, cap);
    await stage(id, staging, cap);
    expect(await mapExists(id)).toBe(true);
    await mkdir(join(dir, 'pods', id), { recursive: true });
    const publish = {
      volume_id: id,
      staging_target_path: staging,
      target_path: target,
      volume_capability: cap,
      readonly: false,
    };
    await csi.ok('Node', 'NodePublishVolume', publish);
    await csi.ok('Node', 'NodePublishVolume', publish);
    expect(await mountsAt(target)).toHaveLength(1);
    expect((await sh(['blockdev', '--getsize64', target])).stdout.trim()).toBe(String(16 * MiB));
    // The LV sits on extents that the deleted ext4 and xfs volumes used (wipe: none): a new
    // volume still shows no filesystem (CSI spec CreateVolume without volume_content_source;
    // DESIGN.md §5): its data area's first and last MiB are zeroed before the header is written.
    const probe = await sh(['blkid', '-p', target]);
    expect(probe.exitCode, probe.stdout).toBe(2);
    const head = Buffer.alloc(MiB);
    const fresh = await open(target, 'r');
    try {
      await fresh.read(head, 0, MiB, 0);
    } finally {
      await fresh.close();
    }
    expect(head.every((b) => b === 0)).toBe(true);

    const payload = randomBytes(8192);
    const atEnd = 16 * MiB - payload.length;
    const device = await open(target, 'r+');
    try {
      await device.write(payload, 0, payload.length, 0);
      await device.write(payload, 0, payload.length, atEnd);
      await device.sync();
    } finally {
      await device.close();
    }
    const readBack = Buffer.alloc(payload.length);
    const again = await open(target, 'r');
    try {
      await again.read(readBack, 0, readBack.length, atEnd);
    } finally {
      await again.close();
    }
    expect(readBack.equals(payload)).toBe(true);
    // on the LV the bytes sit at the 1 MiB data offset; sector 0 still holds the header
    const [lv] = (await lvRows(vgName)).filter((r) => r.lv_name === `lvstamp_${id}`);
    const lvDevice = lv?.lv_dm_path ?? '';
    const onLv = Buffer.alloc(payload.length);
    const raw = await open(lvDevice, 'r');
    try {
      await raw.read(onLv, 0, onLv.length, DATA_OFFSET);
    } finally {
      await raw.close();
    }
    expect(onLv.equals(payload)).toBe(true);
    expect((await headerOf(lvDevice)).volumeId).toBe(id);

    const stats = await csi.ok('Node', 'NodeGetVolumeStats', {
      volume_id: id,
      volume_path: target,
    });
    expect(stats).toEqual({
      usage: [{ unit: 'BYTES', total: String(16 * MiB), available: '0', used: '0' }],
      volume_condition: { abnormal: false, message: 'ok' },
    });

    await csi.ok('Node', 'NodeUnpublishVolume', { volume_id: id, target_path: target });
    await csi.ok('Node', 'NodeUnpublishVolume', { volume_id: id, target_path: target });
    expect(existsSync(target)).toBe(false);
    await csi.ok('Node', 'NodeUnstageVolume', { volume_id: id, staging_target_path: staging });
    await csi.ok('Node', 'NodeUnstageVolume', { volume_id: id, staging_target_path: staging });
    expect(await mapExists(id)).toBe(false);
    await csi.ok('Controller', 'DeleteVolume', { volume_id: id });
    expect((await lvRows(vgName)).filter((r) => r.lv_name.endsWith(id))).toEqual([]);
  });
});

describe('driver restart, then expansion and stats of the published volume', () => {
  // One volume for both (each create, stage and delete costs seconds under emulation): the
  // restarted driver knows the volume only from LVM and mountinfo, and grows it from there.
  it('SIGTERM between stage and publish: the restarted driver publishes from LVM and mountinfo alone; NodeExpandVolume grows the published ext4 online; stats follow', async () => {
    const name = unique('restart');
    const id = idOf(name);
    const cap = mountCapability('ext4');
    const { staging, target } = pathsFor(id);
    await create(name, 32 * MiB, cap);
    await stage(id, staging, cap);
    await writeFile(join(staging, 'before-restart.txt'), 'staged\n');

    expect(await driver.stop()).toBe(0);
    expect(existsSync(driver.socket)).toBe(false);
    driver = await startDriver({ dir, vgName, ownerId: OWNER_ID });
    csi = driver.client;

    // staging again after the restart is a no-op; publish finds the staged mount
    await stage(id, staging, cap);
    expect(await mountsAt(staging)).toHaveLength(1);
    await csi.ok('Node', 'NodePublishVolume', {
      volume_id: id,
      staging_target_path: staging,
      target_path: target,
      volume_capability: cap,
      readonly: false,
    });
    expect(await mountsAt(target)).toHaveLength(1);
    expect(await readFile(join(target, 'before-restart.txt'), 'utf8')).toBe('staged\n');
    const before = await statfs(target);

    const stats = await csi.ok<{
      usage: { unit: string; total: string; available: string; used: string }[];
      volume_condition: { abnormal: boolean; message: string };
    }>('Node', 'NodeGetVolumeStats', { volume_id: id, volume_path: target });
    expect(stats.usage.map((u) => u.unit)).toEqual(['BYTES', 'INODES']);
    expect(Number(stats.usage[0]?.total)).toBe(before.blocks * before.bsize);
    expect(Number(stats.usage[1]?.total)).toBe(before.files);
    expect(Number(stats.usage[0]?.used)).toBeGreaterThan(0);
    expect(stats.volume_condition).toEqual({ abnormal: false, message: 'ok' });

    // lvstamp expands on the node only (DESIGN.md §7 "Expansion on the node"): the first call
    // grows the LV, the header, the map and the mounted ext4; the repeat converges
    const nodeExpanded = {
      volume_id: id,
      volume_path: target,
      capacity_range: { required_bytes: String(128 * MiB) },
      volume_capability: cap,
    };
    // exactly what was asked for; 1 MiB header + 128 MiB -> 132 MiB LV
    expect(await csi.ok('Node', 'NodeExpandVolume', nodeExpanded)).toEqual({
      capacity_bytes: String(128 * MiB),
    });
    expect(await csi.ok('Node', 'NodeExpandVolume', nodeExpanded)).toEqual({
      capacity_bytes: String(128 * MiB),
    });
    const after = await statfs(target);
    expect(after.blocks * after.bsize).toBeGreaterThan(before.blocks * before.bsize + 70 * MiB);
    expect(await readFile(join(target, 'before-restart.txt'), 'utf8')).toBe('staged\n');
    const [lv] = (await lvRows(vgName)).filter((r) => r.lv_name === `lvstamp_${id}`);
    expect(lv?.lv_size).toBe(String(132 * MiB));
    const grown = await csi.ok<{ usage: { unit: string; total: string }[] }>(
      'Node',
      'NodeGetVolumeStats',
      { volume_id: id, volume_path: target },
    );
    expect(Number(grown.usage[0]?.total)).toBe(after.blocks * after.bsize);
    // shrinking is out of range, never done
    await csi.fails(status.OUT_OF_RANGE, 'Node', 'NodeExpandVolume', {
      ...nodeExpanded,
      capacity_range: { required_bytes: String(32 * MiB), limit_bytes: String(64 * MiB) },
    });

    await csi.ok('Node', 'NodeUnpublishVolume', { volume_id: id, target_path: target });
    await csi.ok('Node', 'NodeUnstageVolume', { volume_id: id, staging_target_path: staging });
    await csi.ok('Controller', 'DeleteVolume', { volume_id: id });
    expect(await lvRows(vgName)).toEqual([]);
  });
});
