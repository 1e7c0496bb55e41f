// CSI conformance on real LVM, part 1: Identity and Controller through the built
// driver's unix socket: every RPC's argument checks and exact codes, idempotency, ListVolumes
// pagination (over the 16 concurrent volumes), GetCapacity around a create, and concurrent
// CreateVolume (16 distinct names, 8 of one name).
import { readFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, createLoopVg, installCleanupHooks } from '../harness/index.js';
import {
  DEVICE_CLASS,
  GiB,
  MiB,
  NODE_ID,
  TOPOLOGY_KEY,
  blockCapability,
  driverDir,
  headerOf,
  lvRows,
  mountCapability,
  reportMedian,
  sleep,
  startDriver,
  timed,
  vgFreeBytes,
  idOf,
  unique,
  type CsiClient,
  type RunningDriver,
  type VolumeMsg,
} from './support.js';

installCleanupHooks();

const OWNER_ID = randomBytes(16).toString('hex');

let vgName = '';
let driver: RunningDriver;
let csi: CsiClient;
/** Wall times of CreateVolume calls made one at a time, and of the 16 made at once. */
const createMs: number[] = [];
const concurrentCreateMs: number[] = [];

beforeAll(async () => {
  const vg = await createLoopVg({ sizeBytes: 2 * GiB });
  vgName = vg.vgName;
  driver = await startDriver({ dir: await driverDir(), vgName, ownerId: OWNER_ID });
  csi = driver.client;
});

afterAll(() => {
  reportMedian('CreateVolume, one at a time (controller suite)', createMs);
  // all 16 queue for the host lock, so this is mostly waiting: not a per-call cost
  reportMedian('CreateVolume, 16 at once (controller suite)', concurrentCreateMs);
});

/** CreateVolume of `name` with a mount capability; its wall time goes to `into`. */
async function create(
  name: string,
  requiredBytes: number,
  extra: object = {},
  into: number[] = createMs,
): Promise<VolumeMsg> {
  const response = await timed(into, () =>
    csi.ok<{ volume: VolumeMsg }>('Controller', 'CreateVolume', {
      name,
      capacity_range: { required_bytes: String(requiredBytes) },
      volume_capabilities: [mountCapability()],
      ...extra,
    }),
  );
  return response.volume;
}

async function lvNames(): Promise<string[]> {
  return (await lvRows(vgName)).map((r) => r.lv_name).sort();
}

describe('Identity', () => {
  it('GetPluginInfo names lvstamp.io with the package version; capabilities and Probe are exact', async () => {
    const pkg = JSON.parse(await readFile(`${REPO_ROOT}apps/csi-driver/package.json`, 'utf8')) as {
      version: string;
    };
    expect(await csi.ok('Identity', 'GetPluginInfo')).toEqual({
      name: 'lvstamp.io',
      vendor_version: pkg.version,
      manifest: {},
    });
    expect(await csi.ok('Identity', 'GetPluginCapabilities')).toEqual({
      capabilities: [
        { service: { type: 'CONTROLLER_SERVICE' }, type: 'service' },
        { service: { type: 'VOLUME_ACCESSIBILITY_CONSTRAINTS' }, type: 'service' },
        { volume_expansion: { type: 'ONLINE' }, type: 'volume_expansion' },
        { volume_expansion: { type: 'OFFLINE' }, type: 'volume_expansion' },
      ],
    });
    expect(await csi.ok('Identity', 'Probe')).toEqual({ ready: { value: true } });
  });
});

describe('Controller argument checks (nothing is created)', () => {
  it('CreateVolume refuses malformed requests with the spec codes', async () => {
    const name = unique('bad');
    const base = {
      name,
      capacity_range: { required_bytes: String(8 * MiB) },
      volume_capabilities: [mountCapability()],
    };
    const cases: [status, object][] = [
      [status.INVALID_ARGUMENT, { ...base, name: '' }],
      [status.INVALID_ARGUMENT, { ...base, volume_capabilities: [] }],
      [status.INVALID_ARGUMENT, { ...base, volume_capabilities: [{ mount: { fs_type: 'ext4' } }] }],
      [
        status.INVALID_ARGUMENT,
        { ...base, volume_capabilities: [mountCapability('ext4', 'MULTI_NODE_MULTI_WRITER')] },
      ],
      [status.INVALID_ARGUMENT, { ...base, volume_capabilities: [mountCapability('btrfs')] }],
      [
        status.INVALID_ARGUMENT,
        { ...base, volume_capabilities: [{ access_mode: { mode: 'SINGLE_NODE_WRITER' } }] },
      ],
      [status.INVALID_ARGUMENT, { ...base, parameters: { color: 'blue' } }],
      [status.INVALID_ARGUMENT, { ...base, parameters: { deviceClass: 'nope' } }],
      [status.INVALID_ARGUMENT, { ...base, parameters: { wipe: 'shred' } }],
      [status.INVALID_ARGUMENT, { ...base, parameters: { wipe: 'zero' } }],
      [
        status.INVALID_ARGUMENT,
        { ...base, volume_content_source: { snapshot: { snapshot_id: 'x' } } },
      ],
      [status.INVALID_ARGUMENT, { ...base, capacity_range: { required_bytes: '-1' } }],
      [
        status.OUT_OF_RANGE,
        {
          ...base,
          capacity_range: { required_bytes: String(8 * MiB), limit_bytes: String(4 * MiB) },
        },
      ],
      // 5 MiB + 1 byte is 5 MiB + 4 KiB in whole 4 KiB blocks, above the limit
      [
        status.OUT_OF_RANGE,
        {
          ...base,
          capacity_range: {
            required_bytes: String(5 * MiB + 1),
            limit_bytes: String(5 * MiB + 100),
          },
        },
      ],
      // mkfs.xfs never formats 16 MiB, and the limit forbids its 300 MiB minimum
      [
        status.OUT_OF_RANGE,
        {
          ...base,
          capacity_range: { required_bytes: String(16 * MiB), limit_bytes: String(16 * MiB) },
          volume_capabilities: [mountCapability('xfs')],
        },
      ],
      [status.OUT_OF_RANGE, { ...base, capacity_range: { required_bytes: String(2 ** 60) } }],
      [
        status.RESOURCE_EXHAUSTED,
        { ...base, capacity_range: { required_bytes: String(64 * GiB) } },
      ],
      [
        status.RESOURCE_EXHAUSTED,
        {
          ...base,
          accessibility_requirements: {
            requisite: [{ segments: { [TOPOLOGY_KEY]: 'another-node' } }],
          },
        },
      ],
    ];
    for (const [code, request] of cases)
      await csi.fails(code, 'Controller', 'CreateVolume', request);
    expect(await lvNames()).toEqual([]);
  });

  it('DeleteVolume, ValidateVolumeCapabilities, ListVolumes, GetCapacity check their arguments; ControllerExpandVolume is UNIMPLEMENTED', async () => {
    const unknown = idOf(unique('never-created'));
    await csi.fails(status.INVALID_ARGUMENT, 'Controller', 'DeleteVolume', { volume_id: '' });
    await csi.fails(status.INVALID_ARGUMENT, 'Controller', 'ValidateVolumeCapabilities', {
      volume_id: '',
      volume_capabilities: [mountCapability()],
    });
    await csi.fails(status.INVALID_ARGUMENT, 'Controller', 'ValidateVolumeCapabilities', {
      volume_id: unknown,
      volume_capabilities: [],
    });
    await csi.fails(status.NOT_FOUND, 'Controller', 'ValidateVolumeCapabilities', {
      volume_id: unknown,
      volume_capabilities: [mountCapability()],
    });
    await csi.fails(status.INVALID_ARGUMENT, 'Controller', 'ListVolumes', { max_entries: -1 });
    await csi.fails(status.ABORTED, 'Controller', 'ListVolumes', { starting_token: 'garbage' });
    await csi.fails(status.INVALID_ARGUMENT, 'Controller', 'GetCapacity', {
      parameters: { deviceClass: 'nope' },
    });
    // lvstamp expands on the node only (DESIGN.md §7 "Expansion on the node")
    await csi.fails(status.UNIMPLEMENTED, 'Controller', 'ControllerExpandVolume', {
      volume_id: unknown,
      capacity_range: { required_bytes: String(64 * MiB) },
    });
    for (const method of [
      'ControllerPublishVolume',
      'ControllerUnpublishVolume',
      'CreateSnapshot',
      'DeleteSnapshot',
      'ListSnapshots',
      'ControllerGetVolume',
      'ControllerModifyVolume',
    ]) {
      await csi.fails(status.UNIMPLEMENTED, 'Controller', method, { volume_id: unknown });
    }
    expect(await csi.ok('Controller', 'ControllerGetCapabilities')).toEqual({
      capabilities: [
        'CREATE_DELETE_VOLUME',
        'LIST_VOLUMES',
        'GET_CAPACITY',
        'SINGLE_NODE_MULTI_WRITER',
      ].map((type) => ({ rpc: { type }, type: 'rpc' })),
    });
    expect(await lvNames()).toEqual([]);
  });
});

describe('Controller idempotency', () => {
  it('same name and size: same volume, one LV, header written once; another size: ALREADY_EXISTS; GetCapacity follows', async () => {
    const name = unique('twice');
    const id = idOf(name);
    const before = await csi.ok<{
      available_capacity: string;
      maximum_volume_size: { value: string };
    }>('Controller', 'GetCapacity', {
      volume_capabilities: [mountCapability()],
      parameters: { deviceClass: DEVICE_CLASS },
    });
    expect(Number(before.available_capacity)).toBe(await vgFreeBytes(vgName));
    // largest volume: free space minus the 1 MiB header area, whole extents
    expect(Number(before.maximum_volume_size.value)).toBe(Number(before.available_capacity) - MiB);

    const first = await create(name, 20 * MiB);
    // exactly 20 MiB (DESIGN.md §4 "Capacity"); 1 MiB header + 20 MiB -> 24 MiB LV (4 MiB extents)
    expect(first).toEqual({
      volume_id: id,
      capacity_bytes: String(20 * MiB),
      volume_context: {},
      content_source: null,
      accessible_topology: [{ segments: { [TOPOLOGY_KEY]: NODE_ID } }],
    });
    const [lv] = (await lvRows(vgName)).filter((r) => r.lv_name === `lvstamp_${id}`);
    expect(lv?.lv_size).toBe(String(24 * MiB));
    // GetCapacity drops by the LV size (CSI spec GetCapacity: the capacity available now)
    const after = await csi.ok<{ available_capacity: string }>('Controller', 'GetCapacity', {
      volume_capabilities: [blockCapability()],
      parameters: {},
    });
    expect(Number(before.available_capacity) - Number(after.available_capacity)).toBe(24 * MiB);
    // another node's topology has none (distributed provisioning, DESIGN.md §7)
    expect(
      await csi.ok('Controller', 'GetCapacity', {
        accessible_topology: { segments: { [TOPOLOGY_KEY]: 'another-node' } },
      }),
    ).toEqual({
      available_capacity: '0',
      maximum_volume_size: { value: '0' },
      minimum_volume_size: null,
    });
    const header = await headerOf(lv?.lv_dm_path ?? '');
    expect(header).toEqual({
      volumeId: id,
      ownerId: OWNER_ID,
      createdAtMs: header.createdAtMs,
      requestedBytes: 20 * MiB,
      name,
    });
    await sleep(50);
    expect(await create(name, 20 * MiB)).toEqual(first);
    // a compatible range (the existing 20 MiB lies inside) is the same volume too
    expect(
      await create(name, 16 * MiB, {
        capacity_range: { required_bytes: String(16 * MiB), limit_bytes: String(32 * MiB) },
      }),
    ).toEqual(first);
    await csi.fails(status.ALREADY_EXISTS, 'Controller', 'CreateVolume', {
      name,
      capacity_range: { required_bytes: String(40 * MiB) },
      volume_capabilities: [mountCapability()],
    });
    const rows = (await lvRows(vgName)).filter((r) => r.lv_name.endsWith(id));
    expect(rows).toEqual([lv]);
    expect(await headerOf(lv?.lv_dm_path ?? '')).toEqual(header);

    // ValidateVolumeCapabilities on the real volume
    const validated = await csi.ok<{ confirmed: object | null; message: string }>(
      'Controller',
      'ValidateVolumeCapabilities',
      { volume_id: id, volume_capabilities: [mountCapability('xfs'), blockCapability()] },
    );
    expect(validated.message).toBe('');
    expect(validated.confirmed).not.toBeNull();
    const refused = await csi.ok<{ confirmed: object | null; message: string }>(
      'Controller',
      'ValidateVolumeCapabilities',
      { volume_id: id, volume_capabilities: [mountCapability('ext4', 'MULTI_NODE_READER_ONLY')] },
    );
    expect(refused.confirmed).toBeNull();
    expect(refused.message).toMatch(/MULTI_NODE_READER_ONLY is not supported/);

    // delete twice, then an unknown and a malformed ID: all succeed
    await csi.ok('Controller', 'DeleteVolume', { volume_id: id });
    expect((await lvNames()).filter((n) => n.endsWith(id))).toEqual([]);
    const restored = await csi.ok<{ available_capacity: string }>('Controller', 'GetCapacity', {});
    expect(restored.available_capacity).toBe(before.available_capacity);
    await csi.ok('Controller', 'DeleteVolume', { volume_id: id });
    await csi.ok('Controller', 'DeleteVolume', { volume_id: idOf(unique('unknown')) });
    await csi.ok('Controller', 'DeleteVolume', { volume_id: 'not-a-volume-id' });
  });
});

describe('Controller concurrency', () => {
  it('16 concurrent CreateVolume calls with distinct names all succeed; ListVolumes pages through them exactly once', async () => {
    const names = Array.from({ length: 16 }, (_, i) => unique(`many${i}`));
    const volumes = await Promise.all(
      names.map((name) => create(name, 4 * MiB, {}, concurrentCreateMs)),
    );
    expect(volumes.map((v) => v.volume_id)).toEqual(names.map(idOf));
    expect(await lvNames()).toEqual(names.map((n) => `lvstamp_${idOf(n)}`).sort());
    for (const row of await lvRows(vgName)) {
      const header = await headerOf(row.lv_dm_path);
      expect(row.lv_name).toBe(`lvstamp_${header.volumeId}`);
    }

    // ListVolumes, 5 per page (CSI spec ListVolumes: next_token until it is empty)
    const expected = names.map(idOf).sort();
    const seen: string[] = [];
    const pages: number[] = [];
    let token = '';
    for (let guard = 0; guard < 10; guard++) {
      const page = await csi.ok<{
        entries: { volume: VolumeMsg }[];
        next_token: string;
      }>('Controller', 'ListVolumes', { max_entries: 5, starting_token: token });
      pages.push(page.entries.length);
      for (const entry of page.entries) {
        // exactly 4 MiB, from each volume's header (an 8 MiB LV)
        expect(entry.volume.capacity_bytes).toBe(String(4 * MiB));
        expect(entry.volume.accessible_topology).toEqual([
          { segments: { [TOPOLOGY_KEY]: NODE_ID } },
        ]);
        seen.push(entry.volume.volume_id);
      }
      token = page.next_token;
      if (token === '') break;
    }
    expect(pages).toEqual([5, 5, 5, 1]);
    expect(seen).toEqual(expected);
    const all = await csi.ok<{ entries: unknown[]; next_token: string }>(
      'Controller',
      'ListVolumes',
      {},
    );
    expect(all.entries).toHaveLength(16);
    expect(all.next_token).toBe('');

    await Promise.all(
      names.map((n) => csi.ok('Controller', 'DeleteVolume', { volume_id: idOf(n) })),
    );
    expect(await lvNames()).toEqual([]);
  });

  it('8 concurrent CreateVolume calls with one name: one LV, one header write (ABORTED for calls while one runs)', async () => {
    const name = unique('same');
    const id = idOf(name);
    const request = {
      name,
      capacity_range: { required_bytes: String(8 * MiB) },
      volume_capabilities: [mountCapability()],
    };
    const outcomes = await Promise.all(
      Array.from({ length: 8 }, () => csi.outcome('Controller', 'CreateVolume', request)),
    );
    const codes = outcomes.map((o) => status[o.code]);
    for (const code of codes) expect(['OK', 'ABORTED']).toContain(code);
    expect(codes).toContain('OK');
    for (const outcome of outcomes.filter((o) => o.code === status.OK)) {
      expect((outcome.response as { volume: VolumeMsg }).volume.volume_id).toBe(id);
    }
    const rows = await lvRows(vgName);
    expect(rows.map((r) => r.lv_name)).toEqual([`lvstamp_${id}`]);
    const [lv] = rows;
    const header = await headerOf(lv?.lv_dm_path ?? '');
    await sleep(50);
    // the retries a CO makes after ABORTED, one at a time (CSI spec "Concurrency": ABORTED means
    // "an operation is pending for the volume"; the CO retries with backoff, never in parallel
    // with its own retry): the same volume each time, nothing rewritten
    for (let retry = 0; retry < 3; retry++) {
      const response = await csi.ok<{ volume: VolumeMsg }>('Controller', 'CreateVolume', request);
      expect(response.volume.volume_id).toBe(id);
    }
    expect(await lvRows(vgName)).toEqual(rows);
    expect(await headerOf(lv?.lv_dm_path ?? '')).toEqual(header);
    console.log(`[csi-e2e] 8 concurrent same-name CreateVolume: ${codes.join(' ')}`);
    await csi.ok('Controller', 'DeleteVolume', { volume_id: id });
  });
});
