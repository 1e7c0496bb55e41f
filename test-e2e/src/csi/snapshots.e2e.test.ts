// Snapshots, restore and clone on real lvm2 through the built driver (docs/DESIGN.md §5): a thin
// class whose pool the driver creates, and a thick class on a second group. Each test is built as
// the failure it prevents: a snapshot missing the last unsynced write (no freeze), a copy that
// cannot be staged beside its origin (filesystem UUIDs), a snapshot lost with its origin, an
// interrupted restore that blocks its retry, a snapshot that plain activation cannot reach, and a
// thick volume snapshotted as if it were thin.
import { randomBytes } from 'node:crypto';
import { readFile, statfs, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { beforeAll, describe, expect, it } from 'vitest';
import { createLoopVg, installCleanupHooks, shOk } from '../harness/index.js';
import {
  GiB,
  MiB,
  NODE_ID,
  TOPOLOGY_KEY,
  driverDir,
  headerOf,
  mountCapability,
  unique,
  startDriver,
  type CsiClient,
  type VolumeMsg,
} from './support.js';

installCleanupHooks();

const OWNER_ID = randomBytes(16).toString('hex');
const POOL = 'e2epool';
/** Every volume's capacity: above mkfs.xfs's 300 MiB minimum, so both filesystems get exactly it. */
const SIZE = 320 * MiB;

let thinVg = '';
let thickVg = '';
let dir = '';
let csi: CsiClient;

interface SnapshotMsg {
  readonly snapshot_id: string;
  readonly source_volume_id: string;
  readonly size_bytes: string;
  readonly ready_to_use: boolean;
}

beforeAll(async () => {
  thinVg = (await createLoopVg({ sizeBytes: 4 * GiB })).vgName;
  thickVg = (await createLoopVg({ sizeBytes: 512 * MiB })).vgName;
  // the pool made here and adopted by the class (lvm's defaults)
  await shOk(['lvcreate', '--yes', '--type', 'thin-pool', '-L', '1g', '-n', POOL, thinVg]);
  dir = await driverDir();
  const configYaml = [
    'deviceClasses:',
    `  thin: { volumeGroup: ${thinVg}, type: thin, thinPool: ${POOL}, overprovisionRatio: 10, wipe: none, default: true, fsTypes: [ext4, xfs] }`,
    `  thick: { volumeGroup: ${thickVg}, wipe: none, fsTypes: [ext4, xfs] }`,
    `defaultCapacityBytes: ${SIZE}`,
    '',
  ].join('\n');
  const driver = await startDriver({ dir, vgName: thinVg, ownerId: OWNER_ID, configYaml });
  csi = driver.client;
});

async function createVolume(name: string, fsType: string, extra: object = {}): Promise<VolumeMsg> {
  const response = await csi.ok<{ volume: VolumeMsg }>('Controller', 'CreateVolume', {
    name,
    capacity_range: { required_bytes: String(SIZE) },
    volume_capabilities: [mountCapability(fsType)],
    accessibility_requirements: { requisite: [{ segments: { [TOPOLOGY_KEY]: NODE_ID } }] },
    ...extra,
  });
  return response.volume;
}

async function snapshot(name: string, sourceVolumeId: string): Promise<SnapshotMsg> {
  const response = await csi.ok<{ snapshot: SnapshotMsg }>('Controller', 'CreateSnapshot', {
    name,
    source_volume_id: sourceVolumeId,
  });
  return response.snapshot;
}

async function stage(
  id: string,
  fsType: string,
  context: Record<string, string> = {},
): Promise<string> {
  const staging = join(dir, 'staging', id);
  await csi.ok('Node', 'NodeStageVolume', {
    volume_id: id,
    staging_target_path: staging,
    volume_capability: mountCapability(fsType),
    volume_context: context,
  });
  return staging;
}

async function unstage(id: string): Promise<void> {
  await csi.ok('Node', 'NodeUnstageVolume', {
    volume_id: id,
    staging_target_path: join(dir, 'staging', id),
  });
}

interface LvFacts {
  readonly lv_name: string;
  readonly lv_attr: string;
  readonly lv_tags: string;
  readonly lv_dm_path: string;
}

/** The LVs of the thin group (lvs -a with the fields the tests read). */
async function lvsOf(vgName: string): Promise<LvFacts[]> {
  const result = await shOk([
    'lvs',
    '--reportformat',
    'json',
    '-o',
    'lv_name,lv_attr,lv_tags,lv_dm_path',
    vgName,
  ]);
  return (JSON.parse(result.stdout) as { report: { lv: LvFacts[] }[] }).report[0]?.lv ?? [];
}

describe.each(['ext4', 'xfs'])('%s', (fsType) => {
  it('a snapshot of a mounted volume holds the last write not yet synced; its restore stages beside the origin with the data intact', async () => {
    const origin = await createVolume(unique(`origin-${fsType}`), fsType);
    const originMount = await stage(origin.volume_id, fsType);
    const content = randomBytes(64 * 1024);
    // written, not synced: without fsfreeze the snapshot misses it (docs/SNAPSHOTS.md §1)
    await writeFile(join(originMount, 'last'), content);

    const snap = await snapshot(unique('snap'), origin.volume_id);
    expect(snap).toMatchObject({
      source_volume_id: origin.volume_id,
      size_bytes: String(SIZE),
      ready_to_use: true,
    });
    const snapLv = (await lvsOf(thinVg)).find(
      (lv) => lv.lv_name === `lvstamp_snap_${snap.snapshot_id}`,
    );
    // read-only, activation skip, inactive at rest; all tags from the one lvcreate
    expect(snapLv?.lv_attr).toBe('Vri---tz-k');
    expect(snapLv?.lv_tags.split(',')).toEqual(
      expect.arrayContaining([
        'lvstamp',
        `lvstamp.owner=${OWNER_ID}`,
        `lvstamp.source=${origin.volume_id}`,
        `lvstamp.size=${SIZE}`,
      ]),
    );

    const restored = await createVolume(unique(`restored-${fsType}`), fsType, {
      capacity_range: { required_bytes: '0' },
      volume_content_source: { snapshot: { snapshot_id: snap.snapshot_id } },
    });
    expect(restored.capacity_bytes).toBe(String(SIZE));
    expect((restored as unknown as { content_source: unknown }).content_source).toMatchObject({
      snapshot: { snapshot_id: snap.snapshot_id },
    });
    const restoredLv = (await lvsOf(thinVg)).find(
      (lv) => lv.lv_name === `lvstamp_${restored.volume_id}`,
    );
    expect(restoredLv?.lv_tags).toContain(`lvstamp.from=snapshot.${snap.snapshot_id}`);
    expect((await headerOf(restoredLv?.lv_dm_path ?? '')).volumeId).toBe(restored.volume_id);

    // staged while the origin is staged: same filesystem UUID (xfs mounts with nouuid)
    const restoredMount = await stage(restored.volume_id, fsType, restored.volume_context);
    expect(Buffer.compare(await readFile(join(restoredMount, 'last')), content)).toBe(0);

    await unstage(restored.volume_id);
    await unstage(origin.volume_id);
    await csi.ok('Controller', 'DeleteVolume', { volume_id: restored.volume_id });
    await csi.ok('Controller', 'DeleteSnapshot', { snapshot_id: snap.snapshot_id });
    await csi.ok('Controller', 'DeleteVolume', { volume_id: origin.volume_id });
  });
});

it('a clone of a mounted volume, asked twice as large, holds its data, stages beside it with its filesystem grown', async () => {
  const origin = await createVolume(unique('clone-origin'), 'xfs');
  const originMount = await stage(origin.volume_id, 'xfs');
  await writeFile(join(originMount, 'data'), 'cloned bytes');
  const clone = await createVolume(unique('clone'), 'xfs', {
    capacity_range: { required_bytes: String(2 * SIZE) },
    volume_content_source: { volume: { volume_id: origin.volume_id } },
  });
  expect(clone.capacity_bytes).toBe(String(2 * SIZE));
  const cloneLv = (await lvsOf(thinVg)).find((lv) => lv.lv_name === `lvstamp_${clone.volume_id}`);
  expect(cloneLv?.lv_tags).toContain(`lvstamp.from=volume.${origin.volume_id}`);
  const cloneMount = await stage(clone.volume_id, 'xfs', clone.volume_context);
  expect(await readFile(join(cloneMount, 'data'), 'utf8')).toBe('cloned bytes');
  // grown at stage: more than the origin's whole 320 MiB
  const fs = await statfs(cloneMount);
  expect(fs.blocks * fs.bsize).toBeGreaterThan(SIZE);
  await unstage(clone.volume_id);
  await unstage(origin.volume_id);
  await csi.ok('Controller', 'DeleteVolume', { volume_id: clone.volume_id });
  await csi.ok('Controller', 'DeleteVolume', { volume_id: origin.volume_id });
});

it('a snapshot outlives its origin: listed, restorable with the data, deletable', async () => {
  const origin = await createVolume(unique('gone-origin'), 'ext4');
  const originMount = await stage(origin.volume_id, 'ext4');
  await writeFile(join(originMount, 'kept'), 'still here');
  await unstage(origin.volume_id);
  const snap = await snapshot(unique('orphaned'), origin.volume_id);
  await csi.ok('Controller', 'DeleteVolume', { volume_id: origin.volume_id });

  const listed = await csi.ok<{ entries: { snapshot: SnapshotMsg }[] }>(
    'Controller',
    'ListSnapshots',
    { source_volume_id: origin.volume_id },
  );
  expect(listed.entries.map((e) => e.snapshot.snapshot_id)).toEqual([snap.snapshot_id]);
  const restored = await createVolume(unique('from-orphan'), 'ext4', {
    volume_content_source: { snapshot: { snapshot_id: snap.snapshot_id } },
  });
  const mount = await stage(restored.volume_id, 'ext4');
  expect(await readFile(join(mount, 'kept'), 'utf8')).toBe('still here');
  await unstage(restored.volume_id);
  await csi.ok('Controller', 'DeleteVolume', { volume_id: restored.volume_id });
  await csi.ok('Controller', 'DeleteSnapshot', { snapshot_id: snap.snapshot_id });
  expect((await lvsOf(thinVg)).map((lv) => lv.lv_name)).not.toContain(
    `lvstamp_snap_${snap.snapshot_id}`,
  );
});

it("an interrupted restore (lvstamp_new_ holding the source's header and lvstamp.from) is replaced by the retry", async () => {
  const origin = await createVolume(unique('interrupted-origin'), 'ext4');
  const snap = await snapshot(unique('interrupted'), origin.volume_id);
  const name = unique('interrupted-restore');
  const { createHash } = await import('node:crypto');
  const newId = createHash('sha256').update(name).digest('hex').slice(0, 32);
  // what a crash after the restore's lvcreate leaves: the copy under its temporary name
  await shOk([
    'lvcreate',
    '--yes',
    '-s',
    '-kn',
    '-ay',
    '-prw',
    '-n',
    `lvstamp_new_${newId}`,
    '--addtag',
    'lvstamp',
    '--addtag',
    `lvstamp.owner=${OWNER_ID}`,
    '--addtag',
    `lvstamp.from=snapshot.${snap.snapshot_id}`,
    `${thinVg}/lvstamp_snap_${snap.snapshot_id}`,
  ]);
  const leftover = (await lvsOf(thinVg)).find((lv) => lv.lv_name === `lvstamp_new_${newId}`);
  expect((await headerOf(leftover?.lv_dm_path ?? '')).volumeId).toBe(origin.volume_id);

  const restored = await createVolume(name, 'ext4', {
    volume_content_source: { snapshot: { snapshot_id: snap.snapshot_id } },
  });
  expect(restored.volume_id).toBe(newId);
  const names = (await lvsOf(thinVg)).map((lv) => lv.lv_name);
  expect(names).not.toContain(`lvstamp_new_${newId}`);
  const finished = (await lvsOf(thinVg)).find((lv) => lv.lv_name === `lvstamp_${newId}`);
  expect((await headerOf(finished?.lv_dm_path ?? '')).volumeId).toBe(newId);
  await csi.ok('Controller', 'DeleteVolume', { volume_id: restored.volume_id });
  await csi.ok('Controller', 'DeleteSnapshot', { snapshot_id: snap.snapshot_id });
  await csi.ok('Controller', 'DeleteVolume', { volume_id: origin.volume_id });
});

it('a thick volume cannot be snapshotted or cloned, and a copy cannot go into a thick class: INVALID_ARGUMENT', async () => {
  const thick = await createVolume(unique('thick'), 'ext4', {
    parameters: { deviceClass: 'thick' },
  });
  const refused = await csi.fails(status.INVALID_ARGUMENT, 'Controller', 'CreateSnapshot', {
    name: unique('thick-snap'),
    source_volume_id: thick.volume_id,
  });
  expect(refused.details).toMatch(/thick device class "thick"/);
  await csi.fails(status.INVALID_ARGUMENT, 'Controller', 'CreateVolume', {
    name: unique('thick-clone'),
    volume_capabilities: [mountCapability('ext4')],
    volume_content_source: { volume: { volume_id: thick.volume_id } },
  });
  const thin = await createVolume(unique('thin-src'), 'ext4');
  await csi.fails(status.INVALID_ARGUMENT, 'Controller', 'CreateVolume', {
    name: unique('into-thick'),
    parameters: { deviceClass: 'thick' },
    volume_capabilities: [mountCapability('ext4')],
    volume_content_source: { volume: { volume_id: thin.volume_id } },
  });
  expect((await lvsOf(thinVg)).filter((lv) => lv.lv_name.startsWith('lvstamp_snap_'))).toEqual([]);
  await csi.ok('Controller', 'DeleteVolume', { volume_id: thin.volume_id });
  await csi.ok('Controller', 'DeleteVolume', { volume_id: thick.volume_id });
});

// Last: it deactivates the whole thin group.
it('a snapshot left inactive after vgchange -an (as after a reboot) is deleted: activated with -K', async () => {
  const origin = await createVolume(unique('reboot-origin'), 'ext4');
  const snap = await snapshot(unique('reboot'), origin.volume_id);
  await shOk(['vgchange', '-an', thinVg]);
  const before = (await lvsOf(thinVg)).find(
    (lv) => lv.lv_name === `lvstamp_snap_${snap.snapshot_id}`,
  );
  expect(before?.lv_attr[4]).toBe('-');
  await csi.ok('Controller', 'DeleteSnapshot', { snapshot_id: snap.snapshot_id });
  expect((await lvsOf(thinVg)).map((lv) => lv.lv_name)).not.toContain(
    `lvstamp_snap_${snap.snapshot_id}`,
  );
  await csi.ok('Controller', 'DeleteVolume', { volume_id: origin.volume_id });
});

it('a DeleteSnapshot refused after its lvchange -ay -K (sector 0 of another volume than lvstamp.source) puts the snapshot back to rest', async () => {
  const origin = await createVolume(unique('refused-origin'), 'ext4');
  const snap = await snapshot(unique('refused'), origin.volume_id);
  const lv = `${thinVg}/lvstamp_snap_${snap.snapshot_id}`;
  const other = randomBytes(16).toString('hex');
  await shOk([
    'lvchange',
    '--deltag',
    `lvstamp.source=${origin.volume_id}`,
    '--addtag',
    `lvstamp.source=${other}`,
    lv,
  ]);
  const attr = async (): Promise<string | undefined> =>
    (await lvsOf(thinVg)).find((row) => `${thinVg}/${row.lv_name}` === lv)?.lv_attr;
  expect(await attr()).toBe('Vri---tz-k');
  const refused = await csi.fails(status.FAILED_PRECONDITION, 'Controller', 'DeleteSnapshot', {
    snapshot_id: snap.snapshot_id,
  });
  expect(refused.details).toBe(
    `${lv} is not provably this installation's volume: refusing to delete: its header belongs to volume ${origin.volume_id}, not ${other}; left untouched`,
  );
  // Snapshots rest inactive (docs/DESIGN.md §3): the refused delete deactivated what it activated.
  expect(await attr()).toBe('Vri---tz-k');
  await shOk([
    'lvchange',
    '--deltag',
    `lvstamp.source=${other}`,
    '--addtag',
    `lvstamp.source=${origin.volume_id}`,
    lv,
  ]);
  await csi.ok('Controller', 'DeleteSnapshot', { snapshot_id: snap.snapshot_id });
  await csi.ok('Controller', 'DeleteVolume', { volume_id: origin.volume_id });
});
