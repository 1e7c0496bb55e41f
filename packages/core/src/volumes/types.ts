/**
 * The volume module's types: what a volume is, where a call may look, and
 * the requests and answers of its operations (DESIGN.md §3, §5).
 */
import type { DataDevice } from '../device/types.js';
import type { LogicalVolume } from '../lvm/types.js';
import type { Provisioning, ThinProvisioning } from '../provisioning.js';
import type { HeaderReading } from './header-reading.js';

/** An lvstamp volume: an LV whose name carries the lvstamp prefix. */
export interface Volume extends LogicalVolume {
  /** 32-hex-digit volume ID from the LV name. */
  readonly volumeId: string;
  /** True for `lvstamp_new_<id>`: an interrupted or running create. */
  readonly creating: boolean;
  /**
   * What the user sees, in bytes: the data device's length, from the
   * header (DESIGN.md §4 "Capacity"); never the LV size. Null when it was
   * not read or cannot be known (inactive LV, header unreadable or not ok).
   */
  readonly capacityBytes: number | null;
}

/** What a create returns: the volume's place and sizes (a Volume is one too). */
export interface CreatedVolume {
  readonly volumeId: string;
  readonly vgName: string;
  readonly lvName: string;
  /** The data device's length in bytes (DESIGN.md §4 "Capacity"). */
  readonly capacityBytes: number;
}

/**
 * Where a call may look and whose LVs it may change (DESIGN.md §2.3): the
 * volume groups by name (never every volume group on the node) and the owner
 * ID of this installation (32 hex digits), which an LV's
 * `lvstamp.owner=<ownerId>` tag and its header must carry.
 */
export interface VolumeScope {
  readonly vgNames: readonly string[];
  readonly ownerId: string;
}

/** The volume groups a look-up searches (DESIGN.md §2.3). */
export type VgScope = Pick<VolumeScope, 'vgNames'>;

/** How a deleted volume's blocks are treated before the LV is removed. */
export type WipePolicy = 'none' | 'discard' | 'zero';

/** A create request (DESIGN.md §5). Sizes in bytes of capacity (the data area). */
export interface CreateVolumeRequest {
  /** Volume name, 1–128 bytes of UTF-8 (DESIGN.md §3). */
  readonly name: string;
  /** Smallest acceptable capacity in bytes; 0 = not given (then limitBytes is). */
  readonly requiredBytes: number;
  /** Largest acceptable capacity in bytes; ≥ requiredBytes when given. */
  readonly limitBytes?: number;
  /** Smallest capacity the volume's filesystem can be made on, in bytes (FILESYSTEM_MINIMUM_BYTES); default 0. */
  readonly minimumBytes?: number;
  readonly vgName: string;
  /** Further volume groups searched for an existing LV of this volume, so that a create never makes a second copy. */
  readonly otherVgNames?: readonly string[];
  /** 32 hex digits; STANDALONE_OWNER_ID for standalone use. */
  readonly ownerId: string;
  /** Thick (default) or a thin LV in a pool of `vgName` (DESIGN.md §4 "Thin device classes"). */
  readonly provisioning?: Provisioning;
}

/** A thin class's pool: its volume group and settings (for expand's budget check). */
export interface ThinClassPool {
  readonly vgName: string;
  readonly thin: ThinProvisioning;
}

/** Options of delete. */
export interface DeleteVolumeOptions {
  readonly wipe?: WipePolicy;
  /**
   * Skip the ownership checks (lvstamp tag, owner tag, header with matching
   * ID and owner): an operator's explicit override (`--force-unowned`). The
   * scope, the name prefix and the "not open" check still apply.
   */
  readonly forceUnowned?: boolean;
}

/** What delete found and did. */
export interface DeleteVolumeResult {
  /** False when neither an LV nor a data device of this volume ID existed. */
  readonly existed: boolean;
  /** `vg/lv` of every LV removed, in order. */
  readonly removed: readonly string[];
}

/** A volume with everything a person or a CO asks about it. */
export interface VolumeStatus {
  readonly volume: Volume;
  readonly header: HeaderReading;
  /** The volume name from a valid header whose ID matches; null otherwise. */
  readonly name: string | null;
  /** The data device when attached. */
  readonly dataDevice: (DataDevice & { readonly openCount: number }) | null;
  /** Mount points of the data device (from mountinfo, by major:minor). */
  readonly mountPoints: readonly string[];
}

/** A snapshot of a volume (docs/DESIGN.md §3, §5 "Snapshots"). */
export interface Snapshot {
  /** 32 hex digits: SHA-256 of the snapshot name, first 16 bytes. */
  readonly snapshotId: string;
  readonly vgName: string;
  /** `lvstamp_snap_<snapshotId>`. */
  readonly lvName: string;
  /** The volume it was taken of (`lvstamp.source`); that volume may be gone since. */
  readonly sourceVolumeId: string;
  /** The source's capacity at snapshot time, in bytes (`lvstamp.size`). */
  readonly sizeBytes: number;
  /** When lvstamp took it, Unix milliseconds (`lvstamp.created`). */
  readonly createdMs: number;
}

/** Where a restored or cloned volume's data comes from. */
export interface ContentSource {
  readonly kind: 'snapshot' | 'volume';
  /** The snapshot ID or the volume ID, 32 hex digits. */
  readonly id: string;
}

/** A create from a content source (docs/DESIGN.md §5 "Restore and clone"). */
export interface CreateVolumeFromRequest {
  /** Volume name, 1–128 bytes of UTF-8 (DESIGN.md §3). */
  readonly name: string;
  readonly source: ContentSource;
  /** Smallest capacity in bytes; 0 = the source's capacity. Below the source's → OutOfRangeError. */
  readonly requiredBytes: number;
  /** Largest capacity in bytes; undefined or 0 = no limit. */
  readonly limitBytes?: number;
  /** Smallest capacity the volume's filesystem can be made on, in bytes; default 0. */
  readonly minimumBytes?: number;
  /** The new volume's group: it must be the source's (a thin copy lives in its origin's pool). */
  readonly vgName: string;
  /** Every group searched for the source and for an existing LV of the new volume. */
  readonly scope: VolumeScope;
  /**
   * The target class's pool: the source must be a thin LV of it, and the
   * pool's budget must admit the copy (DESIGN.md §4 "Thin capacity"). Null:
   * not checked (standalone use, where no class names a pool).
   */
  readonly thin?: ThinProvisioning | null;
}
