/** A volume group as `vgs` reports it. All sizes in bytes. */
export interface VolumeGroup {
  readonly name: string;
  readonly uuid: string;
  readonly sizeBytes: number;
  readonly freeBytes: number;
  /** Physical extent size in bytes; every LV size is a multiple of it. */
  readonly extentSizeBytes: number;
  readonly tags: readonly string[];
  /** The raw `vg_attr` string (vgs(8)), e.g. `wz--n-`; `wz-pn-` is partial (a PV missing). */
  readonly attr: string;
}

/**
 * A logical volume as `lvs` reports it (one row per LV, never per segment).
 * Sizes in bytes.
 */
export interface LogicalVolume {
  readonly vgName: string;
  readonly lvName: string;
  readonly lvUuid: string;
  readonly sizeBytes: number;
  /** The raw `lv_attr` string, e.g. `-wi-a-----`. */
  readonly attr: string;
  /** True when the LV is active in the kernel (lv_attr state `a`). */
  readonly active: boolean;
  /** True when the LV's device is open (lv_attr column 6 `o`). */
  readonly open: boolean;
  /** Kernel device number, or null when inactive (lvm reports "-1"). */
  readonly kernelMajor: number | null;
  readonly kernelMinor: number | null;
  /**
   * Device-mapper path of the LV (`lv_dm_path`, e.g.
   * `/dev/mapper/vg--data-lvstamp_…`), as lvm reports it; never built by
   * concatenation.
   */
  readonly dmPath: string | null;
  /** LV creation time in Unix milliseconds, or null when lvm did not say. */
  readonly createdAtMs: number | null;
  readonly tags: readonly string[];
}

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
  /** LV size in bytes (whole extents). */
  readonly sizeBytes: number;
  /** The data device's length in bytes (DESIGN.md §4 "Capacity"). */
  readonly capacityBytes: number;
}

/** Free space of one volume group, in bytes. */
export interface VolumeGroupCapacity {
  readonly vgName: string;
  readonly totalBytes: number;
  readonly freeBytes: number;
  /** Largest capacity a new volume can have: whole free extents minus the data offset, in whole 4 KiB blocks. */
  readonly maximumVolumeBytes: number;
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

/** A thin pool LV as the thin pool report shows it. Sizes in bytes. */
export interface ThinPoolRow {
  readonly vgName: string;
  readonly poolName: string;
  /** The pool's data size in bytes (`lv_size`). */
  readonly sizeBytes: number;
  /** The raw `lv_attr`, e.g. `twi-aotz--`; char 9 `D` out of data, `M` metadata read-only, `F` failed. */
  readonly attr: string;
  /** True when `lv_attr` says thin pool (volume type `t`, segtype thin-pool). */
  readonly isThinPool: boolean;
  /** Data use in hundredths of a percent (`data_percent` 12.34 → 1234), null when lvm does not know (inactive). */
  readonly dataHundredths: number | null;
  /** Metadata use in hundredths of a percent, null when unknown. */
  readonly metadataHundredths: number | null;
  /** `lv_health_status`: "" when healthy, e.g. `out_of_data`, `metadata_read_only`, `failed`. */
  readonly healthStatus: string;
  /** `lv_when_full`: `error` (a full pool fails writes) or `queue` (writes block). */
  readonly whenFull: string;
  /** True when new chunks are zeroed before first use (`zero` = "zero"). */
  readonly zero: boolean;
}

/** A thin LV in the pool: what it promises. */
export interface ThinLvRow {
  readonly lvName: string;
  /** Virtual size in bytes. */
  readonly sizeBytes: number;
  /** `lv_permissions` is `writeable` (a read-only snapshot promises nothing new). */
  readonly writeable: boolean;
}

/** The thin pool report of one pool: the group's free space, the pool, its thin LVs. */
export interface ThinPoolReport {
  /** `vg_free` in bytes; null when the report had no row (pool absent and no thin LV). */
  readonly vgFreeBytes: number | null;
  readonly extentSizeBytes: number | null;
  /** The LV named like the pool (maybe not a pool), or null when there is none. */
  readonly pool: ThinPoolRow | null;
  readonly thinLvs: readonly ThinLvRow[];
}
