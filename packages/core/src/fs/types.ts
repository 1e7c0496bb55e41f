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

/**
 * One line of /proc/<pid>/mountinfo (proc(5), "/proc/pid/mountinfo"), with
 * the octal escapes (`\040` space, `\011` tab, `\012` newline, `\134`
 * backslash) decoded.
 */
export interface MountInfoEntry {
  /** (1) Unique ID of the mount. */
  readonly mountId: number;
  /** (2) ID of the parent mount (itself for the root of the tree). */
  readonly parentId: number;
  /** (3) st_dev of files on this filesystem: the block device for a disk filesystem. */
  readonly major: number;
  readonly minor: number;
  /** (4) Pathname of the directory in the filesystem that forms this mount's root (`/` unless a bind mount of a subtree). */
  readonly root: string;
  /** (5) Mount point, relative to the process's root. */
  readonly mountPoint: string;
  /** (6) Per-mount options, e.g. `rw`, `relatime`. */
  readonly mountOptions: readonly string[];
  /** (7) Optional fields such as `shared:1`, `master:7` (may be empty). */
  readonly optionalFields: readonly string[];
  /** (9) Filesystem type, e.g. `ext4`, `fuse.sshfs`. */
  readonly fsType: string;
  /** (10) Mount source, e.g. `/dev/mapper/lvstamp-…`, or `none`. */
  readonly source: string;
  /** (11) Per-superblock options. */
  readonly superOptions: readonly string[];
}
