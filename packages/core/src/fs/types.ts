/** Filesystems lvstamp formats and mounts (CSI mount access type). */
export type FsType = 'ext4' | 'xfs';

/** Every FsType, for validation and `--help`. */
export const FS_TYPES: readonly FsType[] = Object.freeze(['ext4', 'xfs'] as const);

/**
 * What `blkid -p` found on a device (kubernetes/mount-utils' "safe format
 * and mount" model): a filesystem, a partition table (never format), another
 * signature (swap, LVM PV, RAID, crypto: never format), or nothing at all on
 * a device that is readable (the only state that may be formatted).
 */
export type ProbeResult =
  | { readonly kind: 'filesystem'; readonly type: string }
  | { readonly kind: 'partition-table'; readonly type: string }
  | { readonly kind: 'other'; readonly type: string }
  | { readonly kind: 'blank' };

/** Options of a filesystem mount. */
export interface MountOptions {
  readonly fsType: FsType;
  /** Mount read-only (`-o ro`); default false. */
  readonly readonly?: boolean;
  /** Extra mount options, e.g. `noatime`, `discard` (CSI `mount_flags`). */
  readonly options?: readonly string[];
}

/** Whether an idempotent operation changed anything. */
export interface ChangeResult {
  /** False when the desired state already held (already formatted, mounted, unmounted). */
  readonly changed: boolean;
}

/** Space and inodes of a mounted filesystem, from statfs(2). */
export interface FsUsage {
  /** Size of the filesystem's data blocks, in bytes (f_blocks × f_bsize). */
  readonly totalBytes: number;
  /** Bytes an unprivileged user can still write (f_bavail × f_bsize). */
  readonly availableBytes: number;
  /** Bytes in use ((f_blocks − f_bfree) × f_bsize). */
  readonly usedBytes: number;
  /** Inodes in total (f_files); 0 on filesystems that allocate them dynamically. */
  readonly totalInodes: number;
  /** Free inodes (f_ffree). */
  readonly freeInodes: number;
}

export type { MountInfoEntry } from '../os/mountinfo.js';
