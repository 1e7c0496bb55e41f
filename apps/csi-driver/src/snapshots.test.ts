import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NotOwnedError, snapshotIdForName, volumeIdForName } from '@lvstamp/core';
import { parseConfig } from './config.js';
import {
  codeOf,
  failureOf,
  GIB,
  MIB,
  OWNER_ID,
  startHarness,
  type Harness,
} from './testing/harness.js';

const MOUNT = {
  mount: { fs_type: '', mount_flags: [] },
  access_mode: { mode: 'SINGLE_NODE_WRITER' },
};

// One thin class (the default), a thick class in the same group and one in another.
const THIN_CONFIG = `
deviceClasses:
  fast: { volumeGroup: vg0, type: thin, thinPool: pool0, overprovisionRatio: 10, wipe: none, default: true }
  plain: { volumeGroup: vg0, wipe: discard }
  secure: { volumeGroup: vg1, wipe: zero }
`;

let h: Harness;
beforeEach(async () => {
  h = await startHarness({ config: parseConfig(THIN_CONFIG) });
});
afterEach(async () => {
  await h.close();
});

interface SnapshotMsg {
  readonly snapshot_id: string;
}
interface ListMsg {
  readonly entries: readonly { readonly snapshot: SnapshotMsg }[];
  readonly next_token: string;
}
interface VolumeMsg {
  readonly capacity_bytes: string;
  readonly content_source: unknown;
}

const snap = (name: string, source_volume_id: string) =>
  h.call('Controller', 'CreateSnapshot', { name, source_volume_id });
const snapshotIdOf = async (name: string, source: string): Promise<string> =>
  ((await snap(name, source)).snapshot as SnapshotMsg).snapshot_id;

describe('capabilities', () => {
  it('with a thin class: CREATE_DELETE_SNAPSHOT, LIST_SNAPSHOTS and CLONE_VOLUME besides the others', async () => {
    const caps = (await h.call('Controller', 'ControllerGetCapabilities', {})) as {
      capabilities: { rpc: { type: string } }[];
    };
    expect(caps.capabilities.map((c) => c.rpc.type)).toEqual([
      'CREATE_DELETE_VOLUME',
      'LIST_VOLUMES',
      'GET_CAPACITY',
      'SINGLE_NODE_MULTI_WRITER',
      'CREATE_DELETE_SNAPSHOT',
      'LIST_SNAPSHOTS',
      'CLONE_VOLUME',
    ]);
  });
});

describe('CreateSnapshot', () => {
  it('answers the snapshot ready to use, with its ID, source, size and the creation time of the core', async () => {
    const source = h.core.add('pvc-src', GIB);
    const response = await snap('snap-1', source.volumeId);
    expect(response.snapshot).toEqual({
      size_bytes: String(GIB),
      snapshot_id: snapshotIdForName('snap-1'),
      source_volume_id: source.volumeId,
      creation_time: { seconds: '1732900000', nanos: 123_000_000 },
      ready_to_use: true,
      group_snapshot_id: '',
    });
    expect(h.core.scopes.at(-1)).toEqual({ vgNames: ['vg0', 'vg1'], ownerId: OWNER_ID });
    // a retry gives the same answer
    expect((await snap('snap-1', source.volumeId)).snapshot).toEqual(response.snapshot);
  });

  it.each([
    ['no name', { source_volume_id: 'a'.repeat(32) }, 'INVALID_ARGUMENT'],
    ['no source volume ID', { name: 'snap-1' }, 'INVALID_ARGUMENT'],
    [
      'a name with a control character',
      { name: 'a\nb', source_volume_id: 'x' },
      'INVALID_ARGUMENT',
    ],
    ['an unknown source', { name: 'snap-1', source_volume_id: 'a'.repeat(32) }, 'NOT_FOUND'],
  ])('refuses %s', async (_what, request, code) => {
    expect(await codeOf(h.call('Controller', 'CreateSnapshot', request))).toBe(code);
  });

  it('a name over 128 bytes (CSI "Size Limits") is INVALID_ARGUMENT before the core is asked; 128 bytes pass', async () => {
    const source = h.core.add('pvc-src', GIB);
    h.core.calls.length = 0;
    // 43 three-byte characters: 129 bytes of UTF-8 in 43 characters
    const failure = await failureOf(snap('€'.repeat(43), source.volumeId));
    expect(failure).toEqual({
      code: 'INVALID_ARGUMENT',
      details: 'name must be 1–128 bytes of UTF-8, the CSI limit on a string field, got 129',
    });
    expect(h.core.calls).toEqual([]);
    await snap('s'.repeat(128), source.volumeId);
    expect(h.core.calls).toEqual([['createSnapshot', 's'.repeat(128), source.volumeId]]);
  });

  it('the same name for another source is ALREADY_EXISTS', async () => {
    const a = h.core.add('pvc-a', GIB);
    const b = h.core.add('pvc-b', GIB);
    await snap('snap-1', a.volumeId);
    expect(await codeOf(snap('snap-1', b.volumeId))).toBe('ALREADY_EXISTS');
  });

  it('a thick source is INVALID_ARGUMENT naming its thick device class, not the thin one of its group', async () => {
    const source = h.core.add('pvc-thick', GIB);
    h.core.thickVolumes.add(source.volumeId);
    const failure = await failureOf(snap('snap-1', source.volumeId));
    expect(failure.code).toBe('INVALID_ARGUMENT');
    expect(failure.details).toMatch(
      /^vg0\/lvstamp_\w+ is in the thick device class "plain"; snapshots and clones need a thin class \(docs\/DESIGN.md §5\)$/,
    );
  });
});

describe('the per-RPC lock on snapshots', () => {
  it('answers ABORTED for a second CreateSnapshot of one snapshot name, and for its DeleteSnapshot, while the first runs; another snapshot runs at once', async () => {
    const source = h.core.add('pvc-src', GIB);
    let release: () => void = () => undefined;
    h.core.snapshotGate = new Promise((resolve) => {
      release = resolve;
    });
    const first = snap('snap-1', source.volumeId);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const busy = `an operation on snapshot ${snapshotIdForName('snap-1')} is already in progress`;
    expect(await failureOf(snap('snap-1', source.volumeId))).toEqual({
      code: 'ABORTED',
      details: busy,
    });
    const remove = h.call('Controller', 'DeleteSnapshot', {
      snapshot_id: snapshotIdForName('snap-1'),
    });
    expect(await failureOf(remove)).toEqual({ code: 'ABORTED', details: busy });
    h.core.snapshotGate = null;
    expect(await codeOf(snap('snap-2', source.volumeId))).toBe('OK');
    release();
    expect(await codeOf(first)).toBe('OK');
  });
});

describe('DeleteSnapshot', () => {
  it('deletes; an unknown or malformed ID is success; no ID is INVALID_ARGUMENT', async () => {
    const source = h.core.add('pvc-src', GIB);
    const id = await snapshotIdOf('snap-1', source.volumeId);
    expect(await h.call('Controller', 'DeleteSnapshot', { snapshot_id: id })).toEqual({});
    expect(h.core.snapshotStore.size).toBe(0);
    expect(await h.call('Controller', 'DeleteSnapshot', { snapshot_id: id })).toEqual({});
    const calls = h.core.calls.length;
    expect(
      await h.call('Controller', 'DeleteSnapshot', { snapshot_id: 'reallyfakesnapshotid' }),
    ).toEqual({});
    expect(h.core.calls.length).toBe(calls);
    expect(await codeOf(h.call('Controller', 'DeleteSnapshot', {}))).toBe('INVALID_ARGUMENT');
  });

  it('a snapshot failing an ownership check is FAILED_PRECONDITION naming the LV', async () => {
    h.core.failNext.set(
      'deleteSnapshot',
      new NotOwnedError('vg0/lvstamp_snap_x', 'header-id', 'refusing to delete: other'),
    );
    const failure = await failureOf(
      h.call('Controller', 'DeleteSnapshot', { snapshot_id: 'a'.repeat(32) }),
    );
    expect(failure.code).toBe('FAILED_PRECONDITION');
    expect(failure.details).toMatch(/vg0\/lvstamp_snap_x/);
  });
});

describe('ListSnapshots', () => {
  const list = async (request: object): Promise<ListMsg> =>
    (await h.call('Controller', 'ListSnapshots', request)) as unknown as ListMsg;

  it('filters by snapshot ID and source, pages by ID token, and refuses bad tokens and sizes', async () => {
    const a = h.core.add('pvc-a', GIB);
    const b = h.core.add('pvc-b', GIB);
    const ids: string[] = [];
    for (const [name, source] of [
      ['s1', a],
      ['s2', a],
      ['s3', b],
      ['s4', a],
      ['s5', b],
    ] as const) {
      ids.push(await snapshotIdOf(name, source.volumeId));
    }
    const sorted = [...ids].sort();
    const all = await list({});
    expect(all.entries.map((e) => e.snapshot.snapshot_id)).toEqual(sorted);
    expect(all.next_token).toBe('');

    expect((await list({ snapshot_id: ids[2] })).entries).toHaveLength(1);
    expect((await list({ snapshot_id: 'none-exist-id' })).entries).toEqual([]);
    expect((await list({ snapshot_id: 'f'.repeat(32) })).entries).toEqual([]);
    const ofB = await list({ source_volume_id: b.volumeId });
    expect(ofB.entries).toHaveLength(2);
    expect((await list({ source_volume_id: 'nope' })).entries).toEqual([]);

    const first = await list({ max_entries: 2 });
    expect(first.entries).toHaveLength(2);
    expect(first.next_token).toBe(sorted[1]);
    // a snapshot deleted between two pages does not break the walk
    await h.call('Controller', 'DeleteSnapshot', { snapshot_id: sorted[2] });
    const rest = await list({ starting_token: first.next_token });
    expect(rest.entries.map((e) => e.snapshot.snapshot_id)).toEqual(sorted.slice(3));

    expect(await codeOf(list({ starting_token: 'garbage' }))).toBe('ABORTED');
    expect(await codeOf(list({ max_entries: -1 }))).toBe('INVALID_ARGUMENT');
  });
});

describe('CreateVolume from a content source', () => {
  const create = (request: object) =>
    h.call('Controller', 'CreateVolume', {
      name: 'pvc-copy',
      volume_capabilities: [MOUNT],
      ...request,
    });

  it('restores from a snapshot with the source capacity, and answers with content_source', async () => {
    const source = h.core.add('pvc-src', GIB);
    const sid = await snapshotIdOf('snap-1', source.volumeId);
    const response = await create({ volume_content_source: { snapshot: { snapshot_id: sid } } });
    expect(response.volume).toMatchObject({
      capacity_bytes: String(GIB),
      volume_id: volumeIdForName('pvc-copy'),
      content_source: { snapshot: { snapshot_id: sid }, type: 'snapshot' },
    });
    expect(h.core.calls.at(-1)).toEqual([
      'createVolumeFrom',
      expect.objectContaining({
        name: 'pvc-copy',
        source: { kind: 'snapshot', id: sid },
        requiredBytes: 0,
        vgName: 'vg0',
        scope: { vgNames: ['vg0', 'vg1'], ownerId: OWNER_ID },
        thin: { type: 'thin', thinPool: 'pool0', thinPoolSizeBytes: null, overprovisionRatio: 10 },
      }),
    ]);
  });

  it('clones a volume; a larger size is passed on, a smaller one is OUT_OF_RANGE', async () => {
    const source = h.core.add('pvc-src', GIB);
    const clone = (await create({
      volume_content_source: { volume: { volume_id: source.volumeId } },
      capacity_range: { required_bytes: String(2 * GIB) },
    })) as { volume: VolumeMsg };
    expect(clone.volume.capacity_bytes).toBe(String(2 * GIB));
    expect(clone.volume.content_source).toMatchObject({ volume: { volume_id: source.volumeId } });
    expect(
      await codeOf(
        h.call('Controller', 'CreateVolume', {
          name: 'pvc-small',
          volume_capabilities: [MOUNT],
          volume_content_source: { volume: { volume_id: source.volumeId } },
          capacity_range: { required_bytes: String(512 * MIB) },
        }),
      ),
    ).toBe('OUT_OF_RANGE');
  });

  it('a copy carries the volume context that makes NodeStageVolume grow its filesystem; a plain volume does not', async () => {
    const source = h.core.add('pvc-src', GIB);
    const copy = (await create({
      volume_content_source: { volume: { volume_id: source.volumeId } },
      capacity_range: { required_bytes: String(2 * GIB) },
    })) as { volume: { volume_id: string; volume_context: Record<string, string> } };
    expect(copy.volume.volume_context).toEqual({ 'lvstamp.io/copy': 'true' });
    const stage = (volumeId: string, context: Record<string, string>) =>
      h.call('Node', 'NodeStageVolume', {
        volume_id: volumeId,
        staging_target_path: `/stage/${volumeId}`,
        volume_capability: MOUNT,
        volume_context: context,
      });
    await stage(copy.volume.volume_id, copy.volume.volume_context);
    expect(h.core.calls.at(-1)).toEqual(['grow', `/stage/${copy.volume.volume_id}`, 'ext4']);
    await stage(source.volumeId, {});
    expect(h.core.calls.at(-1)?.[0]).toBe('mount');
  });

  it('a thick target class is INVALID_ARGUMENT naming it, before the core is asked', async () => {
    const source = h.core.add('pvc-src', GIB);
    const calls = h.core.calls.length;
    const failure = await failureOf(
      create({
        parameters: { deviceClass: 'secure' },
        volume_capabilities: [{ ...MOUNT, mount: { fs_type: 'xfs', mount_flags: [] } }],
        volume_content_source: { volume: { volume_id: source.volumeId } },
      }),
    );
    expect(failure.code).toBe('INVALID_ARGUMENT');
    expect(failure.details).toMatch(/device class "secure" is thick/);
    expect(h.core.calls.length).toBe(calls);
  });

  it('an unknown snapshot or volume is NOT_FOUND', async () => {
    expect(
      await codeOf(
        create({
          volume_content_source: { snapshot: { snapshot_id: 'non-existing-snapshot-id' } },
        }),
      ),
    ).toBe('NOT_FOUND');
    expect(
      await codeOf(create({ volume_content_source: { volume: { volume_id: 'fake-vol-id' } } })),
    ).toBe('NOT_FOUND');
  });
});
