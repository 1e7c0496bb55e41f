/**
 * SnapshotService: the facade the apps call for snapshots, restore and
 * clone. Each method is one line into snapshots.ts or copy.ts, where its
 * contract is documented. Keeps no state.
 */
import type { DataDeviceManager } from '../device/data-device.js';
import type { FilesystemManager } from '../fs/filesystem.js';
import { thaw } from '../fs/freeze.js';
import { createVolumeFrom } from './copy.js';
import { withDefaults, type ServiceParts, type SnapshotParts } from './parts.js';
import { resolveRef } from './resolve-ref.js';
import { createSnapshot, deleteSnapshot, findSnapshot, listSnapshots } from './snapshots.js';
import type { CreatedVolume, CreateVolumeFromRequest, Snapshot, VolumeScope } from './types.js';

/** Dependencies of a SnapshotService (ServiceParts). */
export type SnapshotServiceOptions = ServiceParts<
  Pick<DataDeviceManager, 'find' | 'list'>,
  Pick<FilesystemManager, 'mounts'>
>;

/** Thin snapshots, restore and clone (docs/DESIGN.md §3, §5). */
export class SnapshotService {
  readonly #p: SnapshotParts;

  constructor(options: SnapshotServiceOptions) {
    this.#p = withDefaults(options);
  }

  /** snapshots.ts createSnapshot. */
  createSnapshot(request: {
    readonly name: string;
    readonly sourceVolumeId: string;
    readonly scope: VolumeScope;
  }): Promise<Snapshot> {
    return createSnapshot(this.#p, request);
  }

  /** snapshots.ts listSnapshots. */
  listSnapshots(scope: VolumeScope): Promise<Snapshot[]> {
    return listSnapshots(this.#p, scope);
  }

  /** snapshots.ts findSnapshot. */
  findSnapshot(snapshotId: string, scope: VolumeScope): Promise<Snapshot | null> {
    return findSnapshot(this.#p, snapshotId, scope);
  }

  /**
   * A snapshot ID from what a person typed: a snapshot name, or an existing
   * snapshot's ID (resolveRef; ambiguity refused).
   * @throws InvalidArgumentError.
   */
  resolveSnapshot(ref: string, scope: VolumeScope): Promise<string> {
    return resolveRef(ref, 'snapshot', async (id) => (await this.findSnapshot(id, scope)) !== null);
  }

  /** snapshots.ts deleteSnapshot. */
  deleteSnapshot(
    snapshotId: string,
    scope: VolumeScope,
    options: { readonly forceUnowned?: boolean } = {},
  ): Promise<{ existed: boolean }> {
    return deleteSnapshot(this.#p, snapshotId, scope, options);
  }

  /** copy.ts createVolumeFrom: restore and clone. */
  createVolumeFrom(request: CreateVolumeFromRequest): Promise<CreatedVolume> {
    return createVolumeFrom(this.#p, request);
  }

  /**
   * Thaws every filesystem mounted from a data device (fs/freeze.ts thaw;
   * "not frozen" is success), so that a process that died between freeze
   * and thaw leaves none frozen. Run at driver start (docs/DESIGN.md §5
   * "Snapshots").
   * @returns the mount points thawed.
   * @throws CommandFailedError of dmsetup; a failed thaw is logged, not thrown.
   */
  async thawDataDeviceMounts(): Promise<string[]> {
    const [maps, mounts] = await Promise.all([
      this.#p.dataDevices.list(),
      this.#p.filesystems.mounts(),
    ]);
    const thawed: string[] = [];
    for (const map of maps) {
      for (const mount of mounts.filter((m) => m.major === map.major && m.minor === map.minor)) {
        if (await thaw(this.#p.runner, this.#p.logger, mount.mountPoint)) {
          thawed.push(mount.mountPoint);
        }
      }
    }
    return thawed;
  }
}
