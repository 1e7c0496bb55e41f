import {
  NotOwnedError,
  snapshotIdForName,
  STANDALONE_OWNER_ID,
  ThickVolumeError,
  volumeIdForName,
  type Snapshot,
} from '@lvstamp/core';
import { describe, expect, it, vi } from 'vitest';
import type { CliServices } from './services.js';
import { harness } from './testing/harness.js';

const VOLUME_ID = volumeIdForName('data');
const SNAPSHOT_ID = snapshotIdForName('nightly');
const SNAPSHOT: Snapshot = {
  snapshotId: SNAPSHOT_ID,
  vgName: 'vg0',
  lvName: `lvstamp_snap_${SNAPSHOT_ID}`,
  sourceVolumeId: VOLUME_ID,
  sizeBytes: 512 * 1024 * 1024,
  createdMs: 1_700_000_000_000,
};

const volumes = (extra: object = {}) =>
  ({
    resolve: vi.fn((ref: string) => Promise.resolve(volumeIdForName(ref))),
    discoverVolumeGroups: vi.fn(() => Promise.resolve(['vg0'])),
    ...extra,
  }) as unknown as CliServices['volumes'];

describe('lvstamp snapshot', () => {
  it('create NAME --from VOLUME takes the snapshot of the resolved volume in the scope', async () => {
    const createSnapshot = vi.fn(() => Promise.resolve(SNAPSHOT));
    const h = harness({
      volumes: volumes(),
      snapshots: { createSnapshot } as unknown as CliServices['snapshots'],
    });
    expect(await h.run('snapshot', 'create', 'nightly', '--from', 'data', '--vg', 'vg0')).toBe(0);
    expect(createSnapshot).toHaveBeenCalledWith({
      name: 'nightly',
      sourceVolumeId: VOLUME_ID,
      scope: { vgNames: ['vg0'], source: '--vg', ownerId: STANDALONE_OWNER_ID },
    });
    expect(h.stdout()).toBe(
      `snapshot nightly ready: id ${SNAPSHOT_ID}, of volume ${VOLUME_ID} (512 MiB) on vg0/lvstamp_snap_${SNAPSHOT_ID}\n`,
    );
  });

  it('create of a thick volume is a one-line refusal, exit 2, no stack trace', async () => {
    const thick = {
      vgName: 'vg0',
      lvName: `lvstamp_${VOLUME_ID}`,
    } as unknown as ConstructorParameters<typeof ThickVolumeError>[1];
    const h = harness({
      volumes: volumes(),
      snapshots: {
        createSnapshot: () => Promise.reject(new ThickVolumeError(`volume ${VOLUME_ID}`, thick)),
      } as unknown as CliServices['snapshots'],
    });
    expect(await h.run('snapshot', 'create', 'nightly', '--from', 'data', '--vg', 'vg0')).toBe(2);
    expect(h.stderr()).toMatch(
      /^… volume group: vg0 \(--vg\)\n… taking snapshot nightly of data\nlvstamp: volume \w+ is the thick logical volume vg0\/lvstamp_\w+; snapshots and clones need a thin class \(docs\/DESIGN.md §5\)\n$/,
    );
  });

  it('list --source VOLUME --json lists only that volume’s snapshots', async () => {
    const other = { ...SNAPSHOT, snapshotId: 'f'.repeat(32), sourceVolumeId: 'e'.repeat(32) };
    const h = harness({
      volumes: volumes(),
      snapshots: {
        listSnapshots: () => Promise.resolve([SNAPSHOT, other]),
      } as unknown as CliServices['snapshots'],
    });
    expect(await h.run('--json', 'snapshot', 'list', '--source', 'data', '--vg', 'vg0')).toBe(0);
    expect(JSON.parse(h.stdout())).toEqual({
      volumeGroups: ['vg0'],
      snapshots: [
        {
          snapshotId: SNAPSHOT_ID,
          sourceVolumeId: VOLUME_ID,
          sizeBytes: 512 * 1024 * 1024,
          createdAt: '2023-11-14T22:13:20.000Z',
          vg: 'vg0',
          lv: `lvstamp_snap_${SNAPSHOT_ID}`,
        },
      ],
    });
  });

  it('delete REF resolves the snapshot, deletes it; an ownership refusal names --force-unowned, exit 1', async () => {
    const deleteSnapshot = vi.fn(() => Promise.resolve({ existed: true }));
    const snapshots = {
      resolveSnapshot: () => Promise.resolve(SNAPSHOT_ID),
      deleteSnapshot,
    } as unknown as CliServices['snapshots'];
    const h = harness({ volumes: volumes(), snapshots });
    expect(await h.run('snapshot', 'delete', 'nightly', '--vg', 'vg0', '--force-unowned')).toBe(0);
    expect(deleteSnapshot).toHaveBeenCalledWith(
      SNAPSHOT_ID,
      { vgNames: ['vg0'], source: '--vg', ownerId: STANDALONE_OWNER_ID },
      { forceUnowned: true },
    );
    expect(h.stdout()).toBe('deleted snapshot nightly\n');

    const refused = harness({
      volumes: volumes(),
      snapshots: {
        resolveSnapshot: () => Promise.resolve(SNAPSHOT_ID),
        deleteSnapshot: () =>
          Promise.reject(
            new NotOwnedError('vg0/lvstamp_snap_x', 'header-id', 'refusing to delete'),
          ),
      } as unknown as CliServices['snapshots'],
    });
    expect(await refused.run('snapshot', 'delete', 'nightly', '--vg', 'vg0')).toBe(1);
    expect(refused.stderr()).toMatch(
      /lvstamp snapshot delete --force-unowned skips these checks\)\n$/,
    );
  });

  it('delete of an absent snapshot exits 0; an LV name given as REF is said to have been read as a name', async () => {
    const snapshots = {
      resolveSnapshot: () => Promise.resolve(SNAPSHOT_ID),
      deleteSnapshot: () => Promise.resolve({ existed: false }),
    } as unknown as CliServices['snapshots'];
    const plain = harness({ volumes: volumes(), snapshots });
    expect(await plain.run('snapshot', 'delete', 'nightly', '--vg', 'vg0')).toBe(0);
    expect(plain.stdout()).toBe('snapshot nightly did not exist (nothing to do)\n');
    const lvName = harness({ volumes: volumes(), snapshots });
    expect(await lvName.run('snapshot', 'delete', 'vg0/lvstamp_snap_x', '--vg', 'vg0')).toBe(0);
    expect(lvName.stdout()).toBe(
      'snapshot vg0/lvstamp_snap_x did not exist (nothing to do); "vg0/lvstamp_snap_x" was read as a ' +
        `name (ID ${SNAPSHOT_ID}), not as an LV or device: give a name or an ID that \`lvstamp snapshot list\` shows\n`,
    );
  });
});

describe('lvstamp create --from-snapshot | --from-volume', () => {
  const status = {
    volume: {
      volumeId: volumeIdForName('restored'),
      vgName: 'vg0',
      lvName: `lvstamp_${volumeIdForName('restored')}`,
      sizeBytes: 516 * 1024 * 1024,
      capacityBytes: 512 * 1024 * 1024,
    },
    header: { status: 'ok' },
    name: 'restored',
    dataDevice: null,
    mountPoints: [],
  };

  it('restores into the snapshot’s group with the source capacity when no --size is given', async () => {
    const createVolumeFrom = vi.fn(() => Promise.resolve(status.volume));
    const h = harness({
      volumes: volumes({ status: () => Promise.resolve(status) }),
      snapshots: {
        resolveSnapshot: () => Promise.resolve(SNAPSHOT_ID),
        findSnapshot: () => Promise.resolve(SNAPSHOT),
        createVolumeFrom,
      } as unknown as CliServices['snapshots'],
    });
    expect(await h.run('create', 'restored', '--from-snapshot', 'nightly')).toBe(0);
    expect(createVolumeFrom).toHaveBeenCalledWith({
      name: 'restored',
      source: { kind: 'snapshot', id: SNAPSHOT_ID },
      requiredBytes: 0,
      vgName: 'vg0',
      scope: { vgNames: ['vg0'], source: 'discovered', ownerId: STANDALONE_OWNER_ID },
    });
    expect(h.stdout()).toMatch(/^volume restored ready: id \w+, 512 MiB usable on vg0\//);
  });

  it('clones a volume; an unknown source is exit 1 with one line', async () => {
    const createVolumeFrom = vi.fn(() => Promise.resolve(status.volume));
    const h = harness({
      volumes: volumes({
        findVolume: () => Promise.resolve({ vgName: 'vg0' }),
        status: () => Promise.resolve(status),
      }),
      snapshots: { createVolumeFrom } as unknown as CliServices['snapshots'],
    });
    expect(await h.run('create', 'restored', '--from-volume', 'data', '--size', '1Gi')).toBe(0);
    expect(createVolumeFrom).toHaveBeenCalledWith(
      expect.objectContaining({
        source: { kind: 'volume', id: VOLUME_ID },
        requiredBytes: 2 ** 30,
      }),
    );
    const missing = harness({
      volumes: volumes({ findVolume: () => Promise.resolve(null) }),
      snapshots: {} as CliServices['snapshots'],
    });
    expect(await missing.run('create', 'restored', '--from-volume', 'nope')).toBe(1);
    expect(missing.stderr()).toMatch(/lvstamp: volume nope does not exist\n$/);
  });

  it('both sources, or neither source nor --size, are usage errors (exit 2) before any service call', async () => {
    const h = harness({});
    expect(await h.run('create', 'x', '--from-snapshot', 'a', '--from-volume', 'b')).toBe(2);
    expect(h.stderr()).toBe('lvstamp: --from-snapshot and --from-volume exclude each other\n');
    const none = harness({});
    expect(await none.run('create', 'x')).toBe(2);
    expect(none.stderr()).toBe("lvstamp: required option '--size <size>' not specified\n");
  });
});
