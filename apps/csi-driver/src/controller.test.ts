import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  CommandFailedError,
  CommandTimeoutError,
  FILESYSTEM_MINIMUM_BYTES,
  NotOwnedError,
  OutOfSpaceError,
  volumeIdForName,
} from '@lvstamp/core';
import {
  codeOf,
  failureOf,
  GIB,
  MIB,
  NODE_ID,
  OWNER_ID,
  startHarness,
  type Harness,
} from './testing/harness.js';
import { parseConfig } from './config.js';

const MOUNT = {
  mount: { fs_type: '', mount_flags: [] },
  access_mode: { mode: 'SINGLE_NODE_WRITER' },
};
const BLOCK = { block: {}, access_mode: { mode: 'SINGLE_NODE_WRITER' } };
const TOPOLOGY = [{ segments: { 'topology.lvstamp.io/node': NODE_ID } }];

let h: Harness;
beforeEach(async () => {
  h = await startHarness();
});
afterEach(async () => {
  await h.close();
});

const create = (request: object) =>
  h.call('Controller', 'CreateVolume', { name: 'pvc-1', volume_capabilities: [MOUNT], ...request });

describe('CreateVolume', () => {
  it('creates in the default class with the node topology and exactly the capacity asked for', async () => {
    const response = await create({ capacity_range: { required_bytes: String(202 * MIB) } });
    expect(response.volume).toEqual({
      capacity_bytes: String(202 * MIB),
      volume_id: volumeIdForName('pvc-1'),
      volume_context: {},
      content_source: null,
      accessible_topology: TOPOLOGY,
    });
    expect(h.core.calls[0]).toEqual([
      'create',
      {
        name: 'pvc-1',
        requiredBytes: 202 * MIB,
        minimumBytes: FILESYSTEM_MINIMUM_BYTES.ext4,
        vgName: 'vg0',
        otherVgNames: ['vg0', 'vg1'],
        ownerId: OWNER_ID,
        provisioning: { type: 'thick' },
      },
    ]);
  });

  it.each([
    [
      'required == limit, an odd whole-4 KiB size',
      { required_bytes: '40964096', limit_bytes: '40964096' },
      '40964096',
    ],
    ['required rounded up to whole 4 KiB blocks', { required_bytes: '40960001' }, '40964096'],
    [
      'only a limit: the limit, rounded down to whole 4 KiB blocks',
      { limit_bytes: '40967000' },
      '40964096',
    ],
  ])('capacity_bytes: %s', async (_label, capacity_range, expected) => {
    const response = await create({ capacity_range });
    expect((response.volume as { capacity_bytes: string }).capacity_bytes).toBe(expected);
  });

  it('raises an xfs volume below the mkfs.xfs minimum to it, and says so in capacity_bytes', async () => {
    const response = await create({
      capacity_range: { required_bytes: String(16 * MIB) },
      volume_capabilities: [{ ...MOUNT, mount: { fs_type: 'xfs', mount_flags: [] } }],
    });
    expect((response.volume as { capacity_bytes: string }).capacity_bytes).toBe(
      String(FILESYSTEM_MINIMUM_BYTES.xfs),
    );
    expect(h.core.calls[0]?.[1]).toMatchObject({
      requiredBytes: 16 * MIB,
      minimumBytes: FILESYSTEM_MINIMUM_BYTES.xfs,
    });
  });

  it('answers OUT_OF_RANGE, creating nothing, when the limit forbids the filesystem minimum', async () => {
    expect(
      await failureOf(
        create({
          capacity_range: { required_bytes: String(16 * MIB), limit_bytes: String(16 * MIB) },
          volume_capabilities: [{ ...MOUNT, mount: { fs_type: 'xfs', mount_flags: [] } }],
        }),
      ),
    ).toEqual({
      code: 'OUT_OF_RANGE',
      details: `the filesystem needs at least ${FILESYSTEM_MINIMUM_BYTES.xfs} bytes, above limitBytes ${16 * MIB}`,
    });
    expect(h.core.store.size).toBe(0);
  });

  it("a raw block volume has no filesystem minimum; mount and block together take the filesystem's", async () => {
    await create({ capacity_range: { required_bytes: String(MIB) }, volume_capabilities: [BLOCK] });
    expect(h.core.calls[0]?.[1]).toMatchObject({ minimumBytes: 0 });
    await create({
      name: 'pvc-2',
      capacity_range: { required_bytes: String(MIB) },
      volume_capabilities: [BLOCK, { ...MOUNT, mount: { fs_type: 'xfs', mount_flags: [] } }],
    });
    expect(h.core.calls[1]?.[1]).toMatchObject({ minimumBytes: FILESYSTEM_MINIMUM_BYTES.xfs });
  });

  it('refuses a limit below the requirement with OUT_OF_RANGE, creating nothing', async () => {
    const request = {
      capacity_range: { required_bytes: String(2 * GIB), limit_bytes: String(GIB) },
    };
    expect(await codeOf(create(request))).toBe('OUT_OF_RANGE');
    expect(h.core.store.size).toBe(0);
  });

  it('is idempotent: the same name and size returns the same volume', async () => {
    const first = await create({ capacity_range: { required_bytes: String(GIB) } });
    const second = await create({ capacity_range: { required_bytes: String(GIB) } });
    expect(second).toEqual(first);
    expect(h.core.store.size).toBe(1);
  });

  it('answers ALREADY_EXISTS for the same name with another size or class', async () => {
    await create({ capacity_range: { required_bytes: String(GIB) } });
    expect(await codeOf(create({ capacity_range: { required_bytes: String(2 * GIB) } }))).toBe(
      'ALREADY_EXISTS',
    );
    const otherClass = create({
      capacity_range: { required_bytes: String(GIB) },
      parameters: { deviceClass: 'secure' },
      volume_capabilities: [{ ...MOUNT, mount: { fs_type: 'xfs', mount_flags: [] } }],
    });
    expect(await codeOf(otherClass)).toBe('ALREADY_EXISTS');
  });

  it('a name over 128 bytes (CSI "Size Limits") is INVALID_ARGUMENT before the core is asked; 128 bytes pass', async () => {
    const failure = await failureOf(create({ name: 'é'.repeat(64) + 'x' }));
    expect(failure).toEqual({
      code: 'INVALID_ARGUMENT',
      details: 'volume name must be 1–128 bytes of UTF-8, the CSI limit on a string field, got 129',
    });
    expect(h.core.calls).toEqual([]);
    await create({ name: 'p'.repeat(128) });
    expect(h.core.calls.map(([what]) => what)).toEqual(['create']);
  });

  it.each([
    ['no name', { name: '' }, 'INVALID_ARGUMENT'],
    ['a name with a newline', { name: 'pvc-1\nforged log line' }, 'INVALID_ARGUMENT'],
    ['a name with an escape sequence', { name: 'pvc-\u001b[31m' }, 'INVALID_ARGUMENT'],
    ['no capabilities', { volume_capabilities: [] }, 'INVALID_ARGUMENT'],
    [
      'a multi-node access mode',
      { volume_capabilities: [{ ...MOUNT, access_mode: { mode: 'MULTI_NODE_MULTI_WRITER' } }] },
      'INVALID_ARGUMENT',
    ],
    ['no access mode', { volume_capabilities: [{ mount: { fs_type: '' } }] }, 'INVALID_ARGUMENT'],
    [
      'no access type',
      { volume_capabilities: [{ access_mode: { mode: 'SINGLE_NODE_WRITER' } }] },
      'INVALID_ARGUMENT',
    ],
    [
      'an unknown filesystem',
      { volume_capabilities: [{ ...MOUNT, mount: { fs_type: 'btrfs' } }] },
      'INVALID_ARGUMENT',
    ],
    [
      'a filesystem the class does not allow',
      { parameters: { deviceClass: 'secure' } },
      'INVALID_ARGUMENT',
    ],
    ['an unknown device class', { parameters: { deviceClass: 'gold' } }, 'INVALID_ARGUMENT'],
    ['an unknown wipe value', { parameters: { wipe: 'shred' } }, 'INVALID_ARGUMENT'],
    ['a wipe other than the class policy', { parameters: { wipe: 'none' } }, 'INVALID_ARGUMENT'],
    ['an unknown parameter', { parameters: { color: 'red' } }, 'INVALID_ARGUMENT'],
    [
      'a snapshot source without an ID',
      { volume_content_source: { snapshot: { snapshot_id: '' } } },
      'INVALID_ARGUMENT',
    ],
    [
      'a clone source without an ID',
      { volume_content_source: { volume: { volume_id: '' } } },
      'INVALID_ARGUMENT',
    ],
    // no thin class here, so no snapshots or clones: "Source incompatible or not supported"
    [
      'a snapshot source with no thin class',
      { volume_content_source: { snapshot: { snapshot_id: 'x' } } },
      'INVALID_ARGUMENT',
    ],
    [
      'a clone source with no thin class',
      { volume_content_source: { volume: { volume_id: 'a'.repeat(32) } } },
      'INVALID_ARGUMENT',
    ],
    ['a negative size', { capacity_range: { required_bytes: '-1' } }, 'INVALID_ARGUMENT'],
    [
      'a size above 2^53 - 1',
      { capacity_range: { required_bytes: '9007199254740993' } },
      'OUT_OF_RANGE',
    ],
    [
      'a requisite topology without this node',
      {
        accessibility_requirements: {
          requisite: [{ segments: { 'topology.lvstamp.io/node': 'node-b' } }],
          preferred: [],
        },
      },
      'RESOURCE_EXHAUSTED',
    ],
  ])('refuses %s with %s', async (_what, request, code) => {
    expect(await codeOf(create(request))).toBe(code);
    expect(h.core.calls.filter((c) => c[0] === 'create')).toEqual([]);
  });

  it('accepts block, xfs, the other single-node modes and a requisite naming this node', async () => {
    await create({
      volume_capabilities: [
        BLOCK,
        {
          mount: { fs_type: 'xfs', mount_flags: ['noatime'] },
          access_mode: { mode: 'SINGLE_NODE_MULTI_WRITER' },
        },
        { ...MOUNT, access_mode: { mode: 'SINGLE_NODE_READER_ONLY' } },
        { ...MOUNT, access_mode: { mode: 'SINGLE_NODE_SINGLE_WRITER' } },
      ],
      parameters: { deviceClass: 'fast', wipe: 'discard', 'csi.storage.k8s.io/pvc/name': 'x' },
      accessibility_requirements: { requisite: TOPOLOGY, preferred: TOPOLOGY },
    });
    expect(h.core.store.size).toBe(1);
  });

  it('answers OUT_OF_RANGE when whole 4 KiB blocks cannot stay within the limit', async () => {
    expect(
      await failureOf(
        create({
          capacity_range: {
            required_bytes: String(202 * MIB + 1),
            limit_bytes: String(202 * MIB + 2),
          },
        }),
      ),
    ).toEqual({
      code: 'OUT_OF_RANGE',
      details: `whole 4096-byte blocks make ${202 * MIB + 4096} bytes, above limitBytes ${202 * MIB + 2}`,
    });
    expect(h.core.store.size).toBe(0);
  });

  it('answers FAILED_PRECONDITION when the class volume group does not exist (no lvm look-up of its own)', async () => {
    h.core.groups = h.core.groups.filter((g) => g.name !== 'vg0');
    expect(await failureOf(create({}))).toEqual({
      code: 'FAILED_PRECONDITION',
      details: 'volume group vg0 of device class "fast" does not exist',
    });
    expect(h.core.calls.map((c) => c[0])).toEqual(['create']);
  });

  it('uses the configured default capacity (1 GiB) when no size is given', async () => {
    const response = await create({});
    expect((response.volume as { capacity_bytes: string }).capacity_bytes).toBe(String(GIB));
  });

  it('keeps 64-bit sizes exact: 2^40 round trip', async () => {
    h.core.groups = h.core.groups.map((g) => ({ ...g, freeBytes: 2 ** 41, sizeBytes: 2 ** 41 }));
    const response = await create({
      capacity_range: { required_bytes: String(2 ** 40), limit_bytes: String(2 ** 40 + 3 * MIB) },
    });
    expect((response.volume as { capacity_bytes: string }).capacity_bytes).toBe(String(2 ** 40));
    expect(h.core.calls[0]?.[1]).toMatchObject({
      requiredBytes: 2 ** 40,
      limitBytes: 2 ** 40 + 3 * MIB,
    });
  });

  it('maps a full volume group to RESOURCE_EXHAUSTED', async () => {
    h.core.failNext.set('create', new OutOfSpaceError('volume group vg0 has 0 bytes free'));
    expect(await failureOf(create({}))).toEqual({
      code: 'RESOURCE_EXHAUSTED',
      details: 'volume group vg0 has 0 bytes free',
    });
  });

  it('answers ABORTED while another operation on the same volume runs', async () => {
    let release: () => void = () => undefined;
    h.core.createGate = new Promise((resolve) => {
      release = resolve;
    });
    const first = create({});
    await new Promise((resolve) => setTimeout(resolve, 20));
    const second = await failureOf(create({}));
    expect(second).toEqual({
      code: 'ABORTED',
      details: `an operation on volume ${volumeIdForName('pvc-1')} is already in progress`,
    });
    release();
    expect(await codeOf(first)).toBe('OK');
  });
});

describe('DeleteVolume', () => {
  it('passes the configured volume groups and the owner ID as the scope', async () => {
    const volume = h.core.add('pvc-1', GIB, 'vg1');
    await h.call('Controller', 'DeleteVolume', { volume_id: volume.volumeId });
    expect(h.core.scopes).toEqual([{ vgNames: ['vg0', 'vg1'], ownerId: OWNER_ID }]);
  });

  it('an LV that fails an ownership check is FAILED_PRECONDITION naming the LV and the check', async () => {
    const volume = h.core.add('pvc-1', GIB, 'vg1');
    const lv = `vg1/lvstamp_${volume.volumeId}`;
    h.core.failNext.set(
      'delete',
      new NotOwnedError(lv, 'tag', 'refusing to delete: it lacks the tag lvstamp (tags: none)'),
    );
    expect(
      await failureOf(h.call('Controller', 'DeleteVolume', { volume_id: volume.volumeId })),
    ).toEqual({
      code: 'FAILED_PRECONDITION',
      details: `${lv} is not provably this installation's volume: refusing to delete: it lacks the tag lvstamp (tags: none); left untouched`,
    });
    expect(h.core.store.has(volume.volumeId)).toBe(true);
  });

  it('deletes with the wipe policy of the volume group class', async () => {
    const volume = h.core.add('pvc-1', GIB, 'vg1');
    await h.call('Controller', 'DeleteVolume', { volume_id: volume.volumeId });
    expect(h.core.calls).toEqual([['delete', volume.volumeId, { wipe: 'zero' }]]);
  });

  it('succeeds for an unknown or malformed ID (CSI spec DeleteVolume)', async () => {
    await h.call('Controller', 'DeleteVolume', { volume_id: 'f'.repeat(32) });
    await h.call('Controller', 'DeleteVolume', { volume_id: 'not-an-id' });
    expect(h.core.calls).toEqual([['delete', 'f'.repeat(32), { wipe: 'none' }]]);
  });

  it('uses the one wipe policy of a uniform configuration without a look-up', async () => {
    await h.close();
    h = await startHarness({
      config: parseConfig(
        'deviceClasses:\n  fast: { volumeGroup: vg0, wipe: discard, default: true }\n',
      ),
    });
    const volume = h.core.add('pvc-1', GIB);
    // a look-up would fail: it is not made
    h.core.failNext.set('findVolume', new TypeError('findVolume was called'));
    await h.call('Controller', 'DeleteVolume', { volume_id: volume.volumeId });
    await h.call('Controller', 'DeleteVolume', { volume_id: 'f'.repeat(32) });
    expect(h.core.calls).toEqual([
      ['delete', volume.volumeId, { wipe: 'discard' }],
      ['delete', 'f'.repeat(32), { wipe: 'discard' }],
    ]);
  });

  it('requires a volume ID, and refuses one with control characters, deleting nothing', async () => {
    expect(await codeOf(h.call('Controller', 'DeleteVolume', { volume_id: '' }))).toBe(
      'INVALID_ARGUMENT',
    );
    expect(
      await failureOf(h.call('Controller', 'DeleteVolume', { volume_id: `${'f'.repeat(32)}\n` })),
    ).toEqual({
      code: 'INVALID_ARGUMENT',
      details: 'volume_id must not contain control characters (found U+000A)',
    });
    expect(h.core.calls).toEqual([]);
  });

  it('reports an lvm failure as INTERNAL with one line, never as gone', async () => {
    h.core.failNext.set(
      'findVolume',
      new CommandFailedError({
        argv: ['lvs', 'x'],
        exitCode: 5,
        stdout: '',
        stderr: 'Volume group "vg9" not found\n',
      }),
    );
    expect(
      await failureOf(h.call('Controller', 'DeleteVolume', { volume_id: 'f'.repeat(32) })),
    ).toEqual({
      code: 'INTERNAL',
      details: 'lvs x exited 5: Volume group "vg9" not found',
    });
  });

  it('maps a command timeout to DEADLINE_EXCEEDED', async () => {
    h.core.add('pvc-1', GIB);
    h.core.failNext.set(
      'delete',
      new CommandTimeoutError({ argv: ['lvremove'], exitCode: null, stdout: '', stderr: '' }, 5000),
    );
    expect(
      await codeOf(h.call('Controller', 'DeleteVolume', { volume_id: volumeIdForName('pvc-1') })),
    ).toBe('DEADLINE_EXCEEDED');
  });

  it('answers INTERNAL "internal error" for an unexpected error, without its stack', async () => {
    h.core.failNext.set('findVolume', new TypeError('boom at secret place'));
    const failure = await failureOf(
      h.call('Controller', 'DeleteVolume', { volume_id: 'f'.repeat(32) }),
    );
    expect(failure).toEqual({ code: 'INTERNAL', details: 'internal error' });
  });
});

describe('ValidateVolumeCapabilities', () => {
  it('confirms supported capabilities and explains unsupported ones', async () => {
    const volume = h.core.add('pvc-1', GIB);
    const ok = await h.call('Controller', 'ValidateVolumeCapabilities', {
      volume_id: volume.volumeId,
      volume_capabilities: [MOUNT, BLOCK],
    });
    expect((ok.confirmed as { volume_capabilities: unknown[] }).volume_capabilities).toHaveLength(
      2,
    );
    const no = await h.call('Controller', 'ValidateVolumeCapabilities', {
      volume_id: volume.volumeId,
      volume_capabilities: [{ ...MOUNT, access_mode: { mode: 'MULTI_NODE_READER_ONLY' } }],
    });
    expect(no.confirmed).toBeNull();
    expect(no.message).toMatch(/MULTI_NODE_READER_ONLY is not supported/);
  });

  it.each([
    [{ volume_id: '', volume_capabilities: [MOUNT] }, 'INVALID_ARGUMENT'],
    [{ volume_id: '\t', volume_capabilities: [MOUNT] }, 'INVALID_ARGUMENT'],
    [{ volume_id: 'f'.repeat(32), volume_capabilities: [] }, 'INVALID_ARGUMENT'],
    [{ volume_id: 'f'.repeat(32), volume_capabilities: [MOUNT] }, 'NOT_FOUND'],
    [{ volume_id: 'bogus', volume_capabilities: [MOUNT] }, 'NOT_FOUND'],
  ])('answers %j with %s', async (request, code) => {
    expect(await codeOf(h.call('Controller', 'ValidateVolumeCapabilities', request))).toBe(code);
  });
});

describe('ListVolumes', () => {
  it('pages by volume ID with next_token', async () => {
    for (let i = 0; i < 5; i += 1) h.core.add(`pvc-${i}`, GIB);
    h.core.add('elsewhere', GIB, 'vg-other');
    const ids = [0, 1, 2, 3, 4].map((i) => volumeIdForName(`pvc-${i}`)).sort();
    const seen: string[] = [];
    let token = '';
    let pages = 0;
    do {
      const page = await h.call('Controller', 'ListVolumes', {
        max_entries: 2,
        starting_token: token,
      });
      const entries = page.entries as { volume: { volume_id: string; capacity_bytes: string } }[];
      seen.push(...entries.map((e) => e.volume.volume_id));
      token = page.next_token as string;
      pages += 1;
    } while (token !== '');
    expect(seen).toEqual(ids);
    expect(pages).toBe(3);
    // Each page read the headers of its own volumes only: every volume once, in order.
    expect(h.core.capacityReads).toEqual(ids);
  });

  it('reports each volume of a page with the capacity its header gives', async () => {
    h.core.add('pvc-a', GIB);
    const page = await h.call('Controller', 'ListVolumes', { max_entries: 1 });
    const entries = page.entries as { volume: { volume_id: string; capacity_bytes: string } }[];
    expect(entries.map((e) => [e.volume.volume_id, e.volume.capacity_bytes])).toEqual([
      [volumeIdForName('pvc-a'), String(GIB)],
    ]);
  });

  it('answers ABORTED for a starting_token it never issued', async () => {
    expect(await codeOf(h.call('Controller', 'ListVolumes', { starting_token: 'garbage' }))).toBe(
      'ABORTED',
    );
  });

  it('answers INVALID_ARGUMENT for negative max_entries', async () => {
    expect(await codeOf(h.call('Controller', 'ListVolumes', { max_entries: -1 }))).toBe(
      'INVALID_ARGUMENT',
    );
  });
});

describe('GetCapacity', () => {
  it('reports free bytes and the maximum volume size of the class', async () => {
    const response = await h.call('Controller', 'GetCapacity', {
      parameters: { deviceClass: 'secure' },
    });
    expect(response).toEqual({
      available_capacity: String(4 * GIB),
      maximum_volume_size: { value: String(4 * GIB - MIB) },
      minimum_volume_size: null,
    });
  });

  it('reports 0 for another node or an unsupported capability', async () => {
    const other = await h.call('Controller', 'GetCapacity', {
      accessible_topology: { segments: { 'topology.lvstamp.io/node': 'node-b' } },
    });
    expect(other.available_capacity).toBe('0');
    const multi = await h.call('Controller', 'GetCapacity', {
      volume_capabilities: [{ ...MOUNT, access_mode: { mode: 'MULTI_NODE_MULTI_WRITER' } }],
    });
    expect(multi.available_capacity).toBe('0');
  });

  it("answers the external-provisioner's question: a mount capability with access mode UNKNOWN", async () => {
    // what external-provisioner's capacity controller sends (v2.1 to v5: pkg/capacity)
    const response = await h.call('Controller', 'GetCapacity', {
      parameters: { deviceClass: 'secure', 'csi.storage.k8s.io/fstype': 'xfs' },
      volume_capabilities: [{ mount: {}, access_mode: { mode: 'UNKNOWN' } }],
      accessible_topology: { segments: { 'topology.lvstamp.io/node': NODE_ID } },
    });
    expect(response.available_capacity).toBe(String(4 * GIB));
    const noMode = await h.call('Controller', 'GetCapacity', {
      parameters: { deviceClass: 'secure' },
      volume_capabilities: [{ mount: {} }],
    });
    expect(noMode.available_capacity).toBe(String(4 * GIB));
    const badFs = await h.call('Controller', 'GetCapacity', {
      parameters: { deviceClass: 'secure' },
      volume_capabilities: [{ mount: { fs_type: 'btrfs' }, access_mode: { mode: 'UNKNOWN' } }],
    });
    expect(badFs.available_capacity).toBe('0');
    const ext4Class = await h.call('Controller', 'GetCapacity', {
      parameters: { deviceClass: 'secure', 'csi.storage.k8s.io/fstype': 'ext4' },
      volume_capabilities: [{ mount: {}, access_mode: { mode: 'UNKNOWN' } }],
    });
    expect(ext4Class.available_capacity).toBe('0');
  });

  it('refuses an unknown device class', async () => {
    expect(
      await codeOf(h.call('Controller', 'GetCapacity', { parameters: { deviceClass: 'x' } })),
    ).toBe('INVALID_ARGUMENT');
  });
});

describe('capabilities', () => {
  it('declares its capabilities: no EXPAND_VOLUME, the node expands', async () => {
    const caps = await h.call('Controller', 'ControllerGetCapabilities', {});
    expect(caps.capabilities).toEqual(
      ['CREATE_DELETE_VOLUME', 'LIST_VOLUMES', 'GET_CAPACITY', 'SINGLE_NODE_MULTI_WRITER'].map(
        (type) => ({ rpc: { type }, type: 'rpc' }),
      ),
    );
  });

  it('answers ControllerExpandVolume UNIMPLEMENTED before any side effect', async () => {
    const volume = h.core.add('pvc-1', GIB);
    h.core.calls.length = 0;
    expect(
      await failureOf(
        h.call('Controller', 'ControllerExpandVolume', {
          volume_id: volume.volumeId,
          capacity_range: { required_bytes: String(2 * GIB) },
          volume_capability: MOUNT,
        }),
      ),
    ).toEqual({ code: 'UNIMPLEMENTED', details: 'EXPAND_VOLUME is not offered by lvstamp' });
    expect(h.core.calls).toEqual([]);
    expect(h.core.store.get(volume.volumeId)?.volume.capacityBytes).toBe(GIB);
  });

  it('answers UNIMPLEMENTED for the other RPCs it does not offer', async () => {
    for (const method of [
      'ControllerPublishVolume',
      'ControllerUnpublishVolume',
      'CreateSnapshot',
      'DeleteSnapshot',
      'ListSnapshots',
      'GetSnapshot',
      'ControllerGetVolume',
    ]) {
      expect(await codeOf(h.call('Controller', method, {}))).toBe('UNIMPLEMENTED');
    }
  });
});
