import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  AlreadyExistsError,
  CommandFailedError,
  FailedPreconditionError,
  NotOwnedError,
  OutOfSpaceError,
  volumeIdForName,
} from '@lvstamp/core';
import {
  codeOf,
  failureOf,
  GIB,
  mountEntry,
  NODE_ID,
  OWNER_ID,
  startHarness,
  type Harness,
} from './testing/harness.js';

const MOUNT = {
  mount: { fs_type: 'xfs', mount_flags: ['noatime,nodiscard'] },
  access_mode: { mode: 'SINGLE_NODE_WRITER' },
};
const BLOCK = { block: {}, access_mode: { mode: 'SINGLE_NODE_WRITER' } };
const STAGING = '/var/lib/kubelet/staging/pv1';
const TARGET = '/var/lib/kubelet/pods/p/volumes/pv1';

let h: Harness;
let id: string;
let device: string;
beforeEach(async () => {
  h = await startHarness();
  id = h.core.add('pvc-1', GIB).volumeId;
  device = `/dev/mapper/lvstamp-${id}`;
});
afterEach(async () => {
  await h.close();
});

const stage = (extra: object = {}) =>
  h.call('Node', 'NodeStageVolume', {
    volume_id: id,
    staging_target_path: STAGING,
    volume_capability: MOUNT,
    ...extra,
  });
const publish = (extra: object = {}) =>
  h.call('Node', 'NodePublishVolume', {
    volume_id: id,
    staging_target_path: STAGING,
    target_path: TARGET,
    volume_capability: MOUNT,
    ...extra,
  });

describe('NodeStageVolume', () => {
  it('attaches, formats when blank and mounts at the staging path', async () => {
    await stage();
    expect(h.core.calls).toEqual([
      ['attach', id],
      ['format', device, 'xfs'],
      ['mount', device, STAGING, { fsType: 'xfs', options: ['noatime', 'nodiscard'] }],
    ]);
    expect(h.paths.log).toEqual([`mkdir ${STAGING}`]);
  });

  it('only attaches a block volume', async () => {
    await stage({ volume_capability: BLOCK });
    expect(h.core.calls).toEqual([['attach', id]]);
  });

  it('attaches within the configured volume groups and owner (the core activates an inactive LV of that owner)', async () => {
    await stage({ volume_capability: BLOCK });
    expect(h.core.scopes).toEqual([{ vgNames: ['vg0', 'vg1'], ownerId: OWNER_ID }]);
  });

  it("an inactive LV without this owner's tags: FAILED_PRECONDITION naming it, nothing attached", async () => {
    const lv = `vg0/lvstamp_${id}`;
    h.core.failNext.set(
      'attach',
      new NotOwnedError(lv, 'owner-tag', 'refusing to activate: it lacks the owner tag'),
    );
    expect(await failureOf(stage({ volume_capability: BLOCK }))).toEqual({
      code: 'FAILED_PRECONDITION',
      details: `${lv} is not provably this installation's volume: refusing to activate: it lacks the owner tag; left untouched`,
    });
    expect(h.core.devices.size).toBe(0);
  });

  it('refuses another filesystem with FAILED_PRECONDITION, never formatting', async () => {
    h.core.failNext.set(
      'format',
      new FailedPreconditionError(`${device} already holds a ext4 filesystem, not xfs`),
    );
    expect(await failureOf(stage())).toEqual({
      code: 'FAILED_PRECONDITION',
      details: `${device} already holds a ext4 filesystem, not xfs`,
    });
  });

  it.each([
    [{ volume_id: '' }, 'INVALID_ARGUMENT'],
    [{ staging_target_path: '' }, 'INVALID_ARGUMENT'],
    [{ volume_capability: null }, 'INVALID_ARGUMENT'],
    [
      { volume_capability: { ...MOUNT, access_mode: { mode: 'MULTI_NODE_READER_ONLY' } } },
      'INVALID_ARGUMENT',
    ],
    [{ volume_id: 'bogus' }, 'NOT_FOUND'],
    [{ volume_id: 'f'.repeat(32) }, 'NOT_FOUND'],
  ])('answers %j with %s', async (request, code) => {
    expect(await codeOf(stage(request))).toBe(code);
    expect(h.core.calls).toEqual([]);
  });
});

describe('NodeUnstageVolume', () => {
  it('unmounts the staging path and detaches; a repeat succeeds', async () => {
    await h.call('Node', 'NodeUnstageVolume', { volume_id: id, staging_target_path: STAGING });
    await h.call('Node', 'NodeUnstageVolume', { volume_id: id, staging_target_path: STAGING });
    expect(h.core.calls).toEqual([
      ['unmount', STAGING],
      ['detach', id],
      ['unmount', STAGING],
      ['detach', id],
    ]);
  });

  it('requires its arguments', async () => {
    expect(await codeOf(h.call('Node', 'NodeUnstageVolume', { volume_id: id }))).toBe(
      'INVALID_ARGUMENT',
    );
    expect(
      await codeOf(h.call('Node', 'NodeUnstageVolume', { staging_target_path: STAGING })),
    ).toBe('INVALID_ARGUMENT');
  });
});

describe('NodePublishVolume', () => {
  it('bind-mounts the staging path on the target, read-only when asked', async () => {
    await stage();
    h.core.calls.length = 0;
    await publish({ readonly: true });
    expect(h.core.calls).toEqual([['bindMount', STAGING, TARGET, { readonly: true }]]);
    expect(h.paths.log).toContain(`mkdir ${TARGET}`);
  });

  it('publishes SINGLE_NODE_READER_ONLY read-only', async () => {
    await stage();
    h.core.calls.length = 0;
    await publish({
      volume_capability: { ...MOUNT, access_mode: { mode: 'SINGLE_NODE_READER_ONLY' } },
    });
    expect(h.core.calls).toEqual([['bindMount', STAGING, TARGET, { readonly: true }]]);
  });

  it('binds the data device node onto a target file for block', async () => {
    await stage({ volume_capability: BLOCK });
    h.core.calls.length = 0;
    await publish({ volume_capability: BLOCK });
    expect(h.paths.log).toEqual([`touch ${TARGET}`]);
    expect(h.core.calls).toEqual([['bindMount', device, TARGET, { readonly: false }]]);
  });

  it('answers FAILED_PRECONDITION when the volume is not staged there', async () => {
    expect(await codeOf(publish())).toBe('FAILED_PRECONDITION');
    await h.call('Node', 'NodeStageVolume', {
      volume_id: id,
      staging_target_path: STAGING,
      volume_capability: BLOCK,
    });
    h.core.mountTable = [mountEntry(STAGING, 8, 1, false)];
    expect(await codeOf(publish())).toBe('FAILED_PRECONDITION');
  });

  it('refuses a SINGLE_NODE_SINGLE_WRITER volume at a second target (FAILED_PRECONDITION, nothing made); the same target again and SINGLE_NODE_MULTI_WRITER publish', async () => {
    const single = { ...MOUNT, access_mode: { mode: 'SINGLE_NODE_SINGLE_WRITER' } };
    const other = `${TARGET}-2`;
    await stage({ volume_capability: single });
    await publish({ volume_capability: single });
    // mountinfo shows the bind mount with the data device's number (253:7)
    h.core.mountTable.push(mountEntry(TARGET, 253, 7, false));
    h.core.calls.length = 0;
    h.paths.log.length = 0;
    expect(await failureOf(publish({ volume_capability: single, target_path: other }))).toEqual({
      code: 'FAILED_PRECONDITION',
      details: `volume ${id} has access mode SINGLE_NODE_SINGLE_WRITER and is already published at ${TARGET}`,
    });
    expect(h.core.calls).toEqual([]);
    expect(h.paths.log).toEqual([]);
    await publish({ volume_capability: single });
    await publish({
      volume_capability: { ...MOUNT, access_mode: { mode: 'SINGLE_NODE_MULTI_WRITER' } },
      target_path: other,
    });
    expect(h.core.calls).toEqual([
      ['bindMount', STAGING, TARGET, { readonly: false }],
      ['bindMount', STAGING, other, { readonly: false }],
    ]);
  });

  it('answers ALREADY_EXISTS when the target holds another mount', async () => {
    await stage();
    h.core.failNext.set(
      'bindMount',
      new AlreadyExistsError(`${TARGET} is already a mount point: it is mounted read-write`),
    );
    expect(await codeOf(publish({ readonly: true }))).toBe('ALREADY_EXISTS');
  });

  it.each([
    [{ volume_id: '' }, 'INVALID_ARGUMENT'],
    [{ target_path: '' }, 'INVALID_ARGUMENT'],
    [{ staging_target_path: '' }, 'INVALID_ARGUMENT'],
    [{ volume_capability: null }, 'INVALID_ARGUMENT'],
    [{ volume_id: 'f'.repeat(32) }, 'NOT_FOUND'],
  ])('answers %j with %s', async (request, code) => {
    expect(await codeOf(publish(request))).toBe(code);
  });
});

describe('NodeUnpublishVolume', () => {
  it('unmounts and removes the target; a missing target succeeds', async () => {
    await h.call('Node', 'NodeUnpublishVolume', { volume_id: id, target_path: TARGET });
    expect(h.core.calls).toEqual([['unmount', TARGET]]);
    expect(h.paths.log).toEqual([`remove ${TARGET}`]);
  });

  it('reports a busy unmount as an error and keeps the target', async () => {
    h.core.failNext.set(
      'unmount',
      new CommandFailedError({
        argv: ['umount', TARGET],
        exitCode: 32,
        stdout: '',
        stderr: `umount: ${TARGET}: target is busy.\n`,
      }),
    );
    expect(
      await failureOf(
        h.call('Node', 'NodeUnpublishVolume', { volume_id: id, target_path: TARGET }),
      ),
    ).toEqual({
      code: 'INTERNAL',
      details: `umount ${TARGET} exited 32: umount: ${TARGET}: target is busy.`,
    });
    expect(h.paths.log).toEqual([]);
  });

  it('requires its arguments', async () => {
    expect(await codeOf(h.call('Node', 'NodeUnpublishVolume', { volume_id: id }))).toBe(
      'INVALID_ARGUMENT',
    );
    expect(await codeOf(h.call('Node', 'NodeUnpublishVolume', { target_path: TARGET }))).toBe(
      'INVALID_ARGUMENT',
    );
  });
});

describe('NodeGetVolumeStats', () => {
  const stats = (extra: object = {}) =>
    h.call('Node', 'NodeGetVolumeStats', { volume_id: id, volume_path: TARGET, ...extra });

  /** Staged and published as kubelet does: the data device (253:7) on STAGING, bound on TARGET. */
  const published = async () => {
    await stage();
    h.core.mountTable.push(mountEntry(TARGET, 253, 7, false));
    h.paths.kinds.set(TARGET, 'directory');
    h.core.calls.length = 0;
  };

  it('reports bytes and inodes of the volume mounted at volume_path, exact above 2^32', async () => {
    await published();
    expect(await stats()).toEqual({
      usage: [
        {
          unit: 'BYTES',
          total: String(2 ** 40),
          available: String(2 ** 39),
          used: String(2 ** 39),
        },
        { unit: 'INODES', total: '1000', available: '900', used: '100' },
      ],
      volume_condition: { abnormal: false, message: 'ok' },
    });
    expect(h.core.calls).toEqual([['usage', TARGET]]);
  });

  it('compares the mount table with the path as mountinfo shows it (symlinks resolved)', async () => {
    await published();
    h.paths.kinds.set('/link/volume', 'directory');
    h.paths.links.set('/link/volume', TARGET);
    expect((await stats({ volume_path: '/link/volume' })).volume_condition).toEqual({
      abnormal: false,
      message: 'ok',
    });
  });

  it('reports the capacity of its published block device (st_rdev of the node)', async () => {
    await stage({ volume_capability: BLOCK });
    h.paths.kinds.set(TARGET, 'block-device');
    h.paths.devices.set(TARGET, { major: 253, minor: 7 });
    expect((await stats()).usage).toEqual([
      { unit: 'BYTES', total: String(GIB), available: '0', used: '0' },
    ]);
  });

  it('says abnormal, without numbers, for its mount that cannot be read (a corrupted mount)', async () => {
    await published();
    h.paths.kinds.set(TARGET, 'unreadable');
    expect(await stats()).toEqual({
      usage: [],
      volume_condition: {
        abnormal: true,
        message: `the filesystem mounted at ${TARGET} cannot be read (a corrupted mount)`,
      },
    });
    expect(h.core.calls).toEqual([]);
  });

  it('says abnormal when the LV is not active', async () => {
    await published();
    const entry = h.core.store.get(id);
    if (entry === undefined) throw new Error('no volume');
    entry.volume = { ...entry.volume, active: false };
    expect((await stats()).volume_condition).toEqual({
      abnormal: true,
      message: `the logical volume of ${id} is not active`,
    });
  });

  // never the numbers of another filesystem reported as healthy (CSI spec: NOT_FOUND)
  it.each<[string, () => void, string]>([
    ['a path that does not exist', () => undefined, 'it does not exist'],
    [
      'an unmounted directory (statfs would report the parent filesystem)',
      () => h.paths.kinds.set(TARGET, 'directory'),
      'nothing is mounted there',
    ],
    [
      "another volume's mount",
      () => {
        h.paths.kinds.set(TARGET, 'directory');
        h.core.mountTable.push(mountEntry(TARGET, 253, 9, false));
      },
      '/dev/mapper/x (253:9) is mounted there, not its data device (253:7)',
    ],
    [
      "another volume's block device",
      () => {
        h.paths.kinds.set(TARGET, 'block-device');
        h.paths.devices.set(TARGET, { major: 253, minor: 9 });
      },
      'it is block device 253:9, not its data device (253:7)',
    ],
    ['a regular file', () => h.paths.kinds.set(TARGET, 'file'), 'it is a regular file'],
  ])('answers NOT_FOUND for %s', async (_label, arrange, why) => {
    await stage();
    h.core.mountTable = h.core.mountTable.filter((m) => m.mountPoint !== TARGET);
    arrange();
    h.core.calls.length = 0;
    expect(await failureOf(stats())).toEqual({
      code: 'NOT_FOUND',
      details: `${TARGET} is not a volume path of volume ${id}: ${why}`,
    });
    expect(h.core.calls).toEqual([]);
  });

  it('answers NOT_FOUND when the volume is not staged (no data device)', async () => {
    h.paths.kinds.set(TARGET, 'directory');
    h.core.mountTable.push(mountEntry(TARGET, 253, 7, false));
    expect(await failureOf(stats())).toEqual({
      code: 'NOT_FOUND',
      details: `${TARGET} is not a volume path of volume ${id}: the volume is not staged on this node (no data device)`,
    });
  });

  it('answers NOT_FOUND for an unknown volume, even at a mounted path', async () => {
    await published();
    expect(await failureOf(stats({ volume_id: 'f'.repeat(32) }))).toEqual({
      code: 'NOT_FOUND',
      details: `volume ${'f'.repeat(32)} does not exist`,
    });
  });

  it.each([
    [{ volume_id: '', volume_path: TARGET }, 'INVALID_ARGUMENT'],
    [{ volume_id: 'x', volume_path: '' }, 'INVALID_ARGUMENT'],
    [{ volume_id: 'bogus', volume_path: TARGET }, 'NOT_FOUND'],
    [{ volume_id: 'f'.repeat(32), volume_path: '/nowhere' }, 'NOT_FOUND'],
  ])('answers %j with %s', async (request, code) => {
    expect(await codeOf(h.call('Node', 'NodeGetVolumeStats', request))).toBe(code);
  });
});

describe('NodeExpandVolume', () => {
  const expand = (extra: object = {}) =>
    h.call('Node', 'NodeExpandVolume', { volume_id: id, volume_path: TARGET, ...extra });

  beforeEach(async () => {
    await stage();
    h.core.mountTable.push(mountEntry(TARGET, 253, 7, false));
    h.paths.kinds.set(TARGET, 'directory');
    h.core.calls.length = 0;
  });

  it('grows through the core and returns the real capacity', async () => {
    const response = await expand({ capacity_range: { required_bytes: String(2 * GIB) } });
    expect(response).toEqual({ capacity_bytes: String(2 * GIB) });
    expect(h.core.calls).toEqual([['expand', id, 2 * GIB, { thinPools: [] }]]);
  });

  it('converges without a size: keeps the current capacity', async () => {
    const response = await expand();
    // at least one byte: the core keeps the capacity, still reloads the map and grows the filesystem
    expect(h.core.calls).toEqual([['expand', id, 1, { thinPools: [] }]]);
    expect(response).toEqual({ capacity_bytes: String(GIB) });
  });

  it('grows a raw block volume published at volume_path', async () => {
    h.paths.kinds.set('/dev/block-target', 'block-device');
    h.paths.devices.set('/dev/block-target', { major: 253, minor: 7 });
    await expand({ volume_path: '/dev/block-target' });
    expect(h.core.calls).toEqual([['expand', id, 1, { thinPools: [] }]]);
  });

  it.each<[string, () => void]>([
    ['an unmounted directory', () => (h.core.mountTable = h.core.mountTable.slice(0, 1))],
    ["another volume's mount", () => (h.core.mountTable[1] = mountEntry(TARGET, 253, 9, false))],
  ])('answers NOT_FOUND for %s and grows nothing', async (_label, arrange) => {
    arrange();
    expect(await codeOf(expand({ capacity_range: { required_bytes: String(2 * GIB) } }))).toBe(
      'NOT_FOUND',
    );
    expect(h.core.calls).toEqual([]);
  });

  // OUT_OF_RANGE, not RESOURCE_EXHAUSTED: the kubelet marks it NodeResizeInfeasible and the user
  // can lower the request (docs/DESIGN.md "Expansion on the node").
  it.each([
    [
      'the volume group',
      () => `volume group vg0 has ${GIB} bytes free, growing volume ${id} needs ${63 * GIB}`,
    ],
    [
      'the thin pool',
      () =>
        `thin pool vg0/pool0 cannot grow volume ${id} by ${63 * GIB} bytes: the thin pool admits ${GIB} bytes more (pool ${4 * GIB}, used ${GIB}, promised ${2 * GIB}, budget ${2 * GIB}), the volume needs ${63 * GIB}`,
    ],
  ])('answers OUT_OF_RANGE "cannot grow here" when %s lacks the space', async (_label, text) => {
    const message = text();
    h.core.failNext.set('expand', new OutOfSpaceError(message));
    expect(
      await failureOf(expand({ capacity_range: { required_bytes: String(64 * GIB) } })),
    ).toEqual({ code: 'OUT_OF_RANGE', details: `cannot grow here: ${message}` });
    expect(h.core.calls).toEqual([['expand', id, 64 * GIB, { thinPools: [] }]]);
  });

  it.each([
    [{ volume_id: '', volume_path: TARGET }, 'INVALID_ARGUMENT'],
    [{ volume_path: '' }, 'INVALID_ARGUMENT'],
    [{ volume_id: 'f'.repeat(32) }, 'NOT_FOUND'],
    [{ volume_path: '/nowhere' }, 'NOT_FOUND'],
    [{ capacity_range: { required_bytes: '1', limit_bytes: '2' } }, 'OUT_OF_RANGE'],
  ])('answers %j with %s', async (request, code) => {
    expect(await codeOf(expand(request))).toBe(code);
  });
});

describe('path and ID arguments of every Node RPC, checked before any side effect', () => {
  const rpcs: [string, (extra: object) => object][] = [
    [
      'NodeStageVolume',
      (x) => ({ volume_id: id, staging_target_path: STAGING, volume_capability: MOUNT, ...x }),
    ],
    ['NodeUnstageVolume', (x) => ({ volume_id: id, staging_target_path: STAGING, ...x })],
    [
      'NodePublishVolume',
      (x) => ({
        volume_id: id,
        staging_target_path: STAGING,
        target_path: TARGET,
        volume_capability: MOUNT,
        ...x,
      }),
    ],
    ['NodeUnpublishVolume', (x) => ({ volume_id: id, target_path: TARGET, ...x })],
    ['NodeGetVolumeStats', (x) => ({ volume_id: id, volume_path: TARGET, ...x })],
    ['NodeExpandVolume', (x) => ({ volume_id: id, volume_path: TARGET, ...x })],
  ];
  const fieldsOf: Record<string, string[]> = {
    NodeStageVolume: ['staging_target_path'],
    NodeUnstageVolume: ['staging_target_path'],
    NodePublishVolume: ['staging_target_path', 'target_path'],
    NodeUnpublishVolume: ['target_path'],
    NodeGetVolumeStats: ['volume_path', 'staging_target_path'],
    NodeExpandVolume: ['volume_path', 'staging_target_path'],
  };
  const bad: [string, string, string][] = [
    ['relative', 'var/lib/kubelet/x', 'must be an absolute path, got "var/lib/kubelet/x"'],
    ['..', '/var/lib/kubelet/../../etc', 'must not contain "." or ".." segments'],
    ['.', '/var/lib/kubelet/./x', 'must not contain "." or ".." segments'],
    ['newline', '/var/lib/kubelet/x\ny', 'must not contain control characters (found U+000A)'],
    ['NUL', '/var/lib/kubelet/x\0y', 'must not contain control characters (found U+0000)'],
  ];
  for (const [rpc, request] of rpcs) {
    for (const field of fieldsOf[rpc] ?? []) {
      // A malformed volume_path names no place the volume can be at: NOT_FOUND (CSI spec
      // NodeGetVolumeStats / NodeExpandVolume errors, as csi-sanity checks); other paths are
      // malformed arguments.
      const code = field === 'volume_path' ? 'NOT_FOUND' : 'INVALID_ARGUMENT';
      it.each(bad)(`${rpc}: a %s ${field} → ${code}, nothing done`, async (_l, path, why) => {
        const failure = await failureOf(h.call('Node', rpc, request({ [field]: path })));
        expect(failure.code).toBe(code);
        expect(failure.details).toContain(`${field} ${why}`);
        expect(h.core.calls).toEqual([]);
        expect(h.paths.log).toEqual([]);
      });
    }
    it(`${rpc}: a volume ID with a control character → INVALID_ARGUMENT`, async () => {
      expect(await failureOf(h.call('Node', rpc, request({ volume_id: `${id}\n` })))).toEqual({
        code: 'INVALID_ARGUMENT',
        details: 'volume_id must not contain control characters (found U+000A)',
      });
      expect(h.core.calls).toEqual([]);
    });
  }

  it.each<[string, 'file' | 'block-device' | 'other']>([
    ['a regular file', 'file'],
    ['a block device', 'block-device'],
    ['neither a file nor a directory (a symlink, socket or FIFO)', 'other'],
  ])(
    'NodeStageVolume: a staging path that is %s → INVALID_ARGUMENT, nothing attached or formatted',
    async (what, kind) => {
      h.paths.kinds.set(STAGING, kind);
      for (const volume_capability of [MOUNT, BLOCK]) {
        expect(await failureOf(stage({ volume_capability }))).toEqual({
          code: 'INVALID_ARGUMENT',
          details: `staging_target_path ${STAGING} is ${what}; expected a directory`,
        });
      }
      expect(h.core.calls).toEqual([]);
      expect(h.paths.log).toEqual([]);
    },
  );

  it('NodeUnstageVolume: a staging path that is a regular file → INVALID_ARGUMENT, nothing unmounted or detached', async () => {
    h.paths.kinds.set(STAGING, 'file');
    expect(
      await codeOf(
        h.call('Node', 'NodeUnstageVolume', { volume_id: id, staging_target_path: STAGING }),
      ),
    ).toBe('INVALID_ARGUMENT');
    expect(h.core.calls).toEqual([]);
  });

  it('NodeUnstageVolume: a corrupted staging mount is still unmounted', async () => {
    h.paths.kinds.set(STAGING, 'unreadable');
    await h.call('Node', 'NodeUnstageVolume', { volume_id: id, staging_target_path: STAGING });
    expect(h.core.calls).toEqual([
      ['unmount', STAGING],
      ['detach', id],
    ]);
  });

  it('NodePublishVolume: a mount target that is a file, a block target that is a directory → INVALID_ARGUMENT', async () => {
    await stage();
    h.core.calls.length = 0;
    h.paths.kinds.set(TARGET, 'file');
    expect(await failureOf(publish())).toEqual({
      code: 'INVALID_ARGUMENT',
      details: `target_path ${TARGET} is a regular file; expected a directory`,
    });
    h.paths.kinds.set(TARGET, 'directory');
    expect(await failureOf(publish({ volume_capability: BLOCK }))).toEqual({
      code: 'INVALID_ARGUMENT',
      details: `target_path ${TARGET} is a directory; expected a regular file or a block device`,
    });
    expect(h.core.calls).toEqual([]);
    expect(h.paths.log).toEqual([`mkdir ${STAGING}`]);
  });

  it('NodePublishVolume: a block target that already shows the device node publishes again', async () => {
    await stage({ volume_capability: BLOCK });
    h.paths.kinds.set(TARGET, 'block-device');
    h.core.calls.length = 0;
    await publish({ volume_capability: BLOCK });
    expect(h.core.calls).toEqual([['bindMount', device, TARGET, { readonly: false }]]);
  });

  it('NodeUnpublishVolume: a symlink as target → INVALID_ARGUMENT, nothing removed', async () => {
    h.paths.kinds.set(TARGET, 'other');
    expect(
      await codeOf(h.call('Node', 'NodeUnpublishVolume', { volume_id: id, target_path: TARGET })),
    ).toBe('INVALID_ARGUMENT');
    expect(h.core.calls).toEqual([]);
    expect(h.paths.log).toEqual([]);
  });
});

describe('NodeGetInfo and NodeGetCapabilities', () => {
  it('reports the node ID and topology', async () => {
    expect(await h.call('Node', 'NodeGetInfo', {})).toEqual({
      node_id: NODE_ID,
      max_volumes_per_node: '0',
      accessible_topology: { segments: { 'topology.lvstamp.io/node': NODE_ID } },
    });
  });

  it('declares its capabilities', async () => {
    const response = await h.call('Node', 'NodeGetCapabilities', {});
    expect((response.capabilities as { rpc: { type: string } }[]).map((c) => c.rpc.type)).toEqual([
      'STAGE_UNSTAGE_VOLUME',
      'GET_VOLUME_STATS',
      'EXPAND_VOLUME',
      'VOLUME_CONDITION',
      'SINGLE_NODE_MULTI_WRITER',
    ]);
  });
});

it('uses the same per-RPC lock for node calls (ABORTED while one runs)', async () => {
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const original = h.core.volumes.attach;
  (h.core.volumes as { attach: typeof original }).attach = async (volumeId, scope) => {
    await gate;
    return original(volumeId, scope);
  };
  const first = stage();
  await new Promise((resolve) => setTimeout(resolve, 20));
  expect(await failureOf(publish())).toEqual({
    code: 'ABORTED',
    details: `an operation on volume ${volumeIdForName('pvc-1')} is already in progress`,
  });
  release();
  expect(await codeOf(first)).toBe('OK');
});
