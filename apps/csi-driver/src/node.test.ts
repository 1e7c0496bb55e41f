import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  AlreadyExistsError,
  CommandFailedError,
  FailedPreconditionError,
  volumeIdForName,
} from '@lvstamp/core';
import {
  codeOf,
  failureOf,
  GIB,
  mountEntry,
  NODE_ID,
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
  it('reports bytes and inodes of a filesystem, exact above 2^32', async () => {
    await stage();
    h.paths.kinds.set(TARGET, 'directory');
    const response = await h.call('Node', 'NodeGetVolumeStats', {
      volume_id: id,
      volume_path: TARGET,
    });
    expect(response).toEqual({
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
  });

  it('reports the capacity of a block volume', async () => {
    await stage({ volume_capability: BLOCK });
    h.paths.kinds.set(TARGET, 'block-device');
    const response = await h.call('Node', 'NodeGetVolumeStats', {
      volume_id: id,
      volume_path: TARGET,
    });
    expect(response.usage).toEqual([
      { unit: 'BYTES', total: String(GIB), available: '0', used: '0' },
    ]);
  });

  it('says abnormal when the data device or the LV is missing', async () => {
    h.paths.kinds.set(TARGET, 'directory');
    const noMap = await h.call('Node', 'NodeGetVolumeStats', {
      volume_id: id,
      volume_path: TARGET,
    });
    expect(noMap.volume_condition).toEqual({
      abnormal: true,
      message: `the data device of ${id} is missing`,
    });
    const gone = await h.call('Node', 'NodeGetVolumeStats', {
      volume_id: 'f'.repeat(32),
      volume_path: TARGET,
    });
    expect(gone.volume_condition).toEqual({
      abnormal: true,
      message: `the logical volume of ${'f'.repeat(32)} is missing`,
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
  it('grows through the core and returns the real capacity', async () => {
    h.paths.kinds.set(TARGET, 'directory');
    const response = await h.call('Node', 'NodeExpandVolume', {
      volume_id: id,
      volume_path: TARGET,
      capacity_range: { required_bytes: String(2 * GIB) },
    });
    expect(response).toEqual({ capacity_bytes: String(2 * GIB) });
    expect(h.core.calls).toEqual([['expand', id, 2 * GIB, {}]]);
  });

  it('converges without a size: keeps the current capacity', async () => {
    h.paths.kinds.set(TARGET, 'directory');
    const response = await h.call('Node', 'NodeExpandVolume', {
      volume_id: id,
      volume_path: TARGET,
    });
    // at least one byte: the core keeps the capacity, still reloads the map and grows the filesystem
    expect(h.core.calls).toEqual([['expand', id, 1, {}]]);
    expect(response).toEqual({ capacity_bytes: String(GIB) });
  });

  it.each([
    [{ volume_id: '', volume_path: TARGET }, 'INVALID_ARGUMENT'],
    [{ volume_path: '' }, 'INVALID_ARGUMENT'],
    [{ volume_id: 'f'.repeat(32) }, 'NOT_FOUND'],
    [{ volume_path: '/nowhere' }, 'NOT_FOUND'],
    [{ capacity_range: { required_bytes: '1', limit_bytes: '2' } }, 'OUT_OF_RANGE'],
  ])('answers %j with %s', async (request, code) => {
    h.paths.kinds.set(TARGET, 'directory');
    expect(
      await codeOf(
        h.call('Node', 'NodeExpandVolume', { volume_id: id, volume_path: TARGET, ...request }),
      ),
    ).toBe(code);
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

it('uses the same per-volume lock for node calls (ABORTED while one runs)', async () => {
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const original = h.core.volumes.attach;
  (h.core.volumes as { attach: typeof original }).attach = async (volumeId) => {
    await gate;
    return original(volumeId);
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
