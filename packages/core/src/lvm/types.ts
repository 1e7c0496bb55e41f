import type { VolumeGroupProblem } from '../errors.js';
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

/**
 * One PV of a group as the look-up's `lvm fullreport` lists it: `pv_uuid`,
 * `pv_name` (`[unknown]` for a missing PV) and its kernel device number
 * (`pv_major`:`pv_minor`; null when lvm has no device for it).
 */
export interface PvDevice {
  readonly uuid: string;
  readonly name: string;
  readonly major: number | null;
  readonly minor: number | null;
}

/**
 * A volume group of a report that lvm refuses to change
 * (VolumeGroups.usable threw VolumeGroupUnusableError for it).
 */
export interface UnusableGroup {
  readonly vgName: string;
  readonly problem: VolumeGroupProblem;
  /**
   * What names the devices: lvm's warning lines about this group or its PVs
   * (e.g. "VG qm is missing PV … (last written to /dev/loop3)"), joined
   * with ` | `; else the error's detail.
   */
  readonly detail: string;
}
