import type {
  DeviceNumber,
  FilesystemManager,
  QuarantineService,
  SnapshotService,
  VolumeService,
} from '@lvstamp/core';

/**
 * The part of the core's node facade the driver calls (tests fake it at
 * this interface). Production passes `createNodeServices()` from
 * @lvstamp/core. CreateVolume calls `createVolume`, not `create`: the
 * response needs only the capacity, so the status look-up after it is skipped.
 */
export interface DriverCore {
  readonly volumes: Pick<
    VolumeService,
    | 'status'
    | 'attach'
    | 'detach'
    | 'expand'
    | 'delete'
    | 'createVolume'
    | 'listVolumeGroups'
    | 'capacity'
    | 'thinPoolCapacity'
    | 'findVolume'
    | 'listLogicalVolumes'
    | 'withCapacities'
  >;
  /** Snapshots, restore and clone; `thawDataDeviceMounts` runs once at start. */
  readonly snapshots: Pick<
    SnapshotService,
    | 'createSnapshot'
    | 'deleteSnapshot'
    | 'listSnapshots'
    | 'createVolumeFrom'
    | 'thawDataDeviceMounts'
  >;
  /**
   * Quarantined LVs (DESIGN.md §6 "Quarantine"), for the metrics only; the
   * driver never acts on them. Absent: the quarantine gauges have no samples.
   */
  readonly quarantine?: Pick<QuarantineService, 'listQuarantined'>;
  readonly filesystems: Pick<
    FilesystemManager,
    'format' | 'mount' | 'bindMount' | 'unmount' | 'usage' | 'mounts' | 'grow'
  >;
}

/**
 * What a path on the node is (lstat(2): a symlink is `other`). `unreadable`:
 * lstat failed as on a corrupted mount (ENOTCONN, ESTALE, EIO, EHOSTDOWN:
 * kubernetes/mount-utils `IsCorruptedMnt`), which still counts as mounted.
 */
export type PathKind = 'missing' | 'directory' | 'block-device' | 'file' | 'other' | 'unreadable';

/**
 * Plain file operations on the node's paths (kubelet's staging and target
 * paths). Production: node:fs; tests: a temp directory or a fake.
 */
export interface NodePaths {
  kind(path: string): Promise<PathKind>;
  /**
   * The path as mountinfo shows it (symlinks resolved, realpath(3)); the
   * path itself when it cannot be resolved (missing, unreadable).
   */
  canonical(path: string): Promise<string>;
  /** The device number (st_rdev) of a block device node; null when it is none or missing. */
  blockDeviceNumber(path: string): Promise<DeviceNumber | null>;
  /** mkdir -p. */
  ensureDirectory(path: string): Promise<void>;
  /** Creates an empty file (and its parent directories) unless it exists. */
  ensureFile(path: string): Promise<void>;
  /** Removes a file or an empty directory, non-recursively; a missing path is success. */
  remove(path: string): Promise<void>;
}
