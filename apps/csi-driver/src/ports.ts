import type { FilesystemManager, LvmManager, VolumeService } from '@lvstamp/core';

/**
 * The part of the core the driver calls (tests fake it at this interface).
 * Production passes `createNodeServices()` from @lvstamp/core.
 */
export interface DriverCore {
  readonly volumes: Pick<VolumeService, 'status' | 'attach' | 'detach' | 'expand' | 'delete'>;
  /**
   * CreateVolume calls `createVolume` here, not `VolumeService.create`: the
   * response needs only the capacity, which the create reads back already,
   * so the status look-up after it (lvs, dmsetup info, header read) is skipped.
   */
  readonly lvm: Pick<
    LvmManager,
    'createVolume' | 'listVolumeGroups' | 'capacity' | 'findVolume' | 'listVolumes'
  >;
  readonly filesystems: Pick<
    FilesystemManager,
    'format' | 'mount' | 'bindMount' | 'unmount' | 'usage' | 'mounts'
  >;
}

/** What a path on the node is, for publish and stats. */
export type PathKind = 'missing' | 'directory' | 'block-device' | 'file' | 'other';

/**
 * Plain file operations on the node's paths (kubelet's staging and target
 * paths). Production: node:fs; tests: a temp directory or a fake.
 */
export interface NodePaths {
  kind(path: string): Promise<PathKind>;
  /** mkdir -p. */
  ensureDirectory(path: string): Promise<void>;
  /** Creates an empty file (and its parent directories) unless it exists. */
  ensureFile(path: string): Promise<void>;
  /** Removes a file or an empty directory, non-recursively; a missing path is success. */
  remove(path: string): Promise<void>;
}
