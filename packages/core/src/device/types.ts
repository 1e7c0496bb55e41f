import type { DeviceNumber } from '../os/devnum.js';
/** A device-mapper map as `dmsetup info` reports it. */
export interface DmMap {
  readonly name: string;
  readonly uuid: string;
  readonly major: number;
  readonly minor: number;
  /** Open count: how many holders have the device open. */
  readonly openCount: number;
}

/**
 * One map as `dmsetup table --concise` prints it (dmsetup(8), CONCISE
 * FORMAT), with the backslash escapes undone.
 */
export interface DmTableEntry {
  readonly name: string;
  /** "" when the map has no UUID. */
  readonly uuid: string;
  readonly minor: number;
  /** Flag `ro` (else `rw`). */
  readonly readOnly: boolean;
  /**
   * The live table, one `<start> <length> <target> <args>` per segment
   * (512-byte sectors), verbatim; empty when the map has no live table.
   */
  readonly segments: readonly string[];
}

/** An lvstamp data device: a map whose UUID starts with `LVSTAMP-`. */
export interface DataDeviceMap extends DmMap {
  /** Volume ID from the UUID. */
  readonly volumeId: string;
}

/** A data device map as sysfs shows it (`/sys/block/dm-N/{dm/name,dm/uuid,dev}`). */
export interface DataDeviceRef {
  readonly volumeId: string;
  /** The map's name, `lvstamp-<id>`. */
  readonly name: string;
  readonly major: number;
  readonly minor: number;
}

export type { DeviceNumber } from '../os/devnum.js';

/** A data device that is ready to use: its `/dev/mapper` node and device number. */
export interface DataDevice extends DeviceNumber {
  /** `/dev/mapper/lvstamp-<id>`, checked to be a block device with this major:minor. */
  readonly path: string;
}

/**
 * A single-segment device-mapper `linear` table (dm-linear, kernel
 * Documentation/admin-guide/device-mapper/linear.rst):
 * `<startSector> <sectors> linear <major>:<minor> <offsetSectors>`.
 * All counts are 512-byte sectors.
 */
export interface LinearTable {
  readonly startSector: number;
  readonly sectors: number;
  /** The underlying device (the LV). */
  readonly major: number;
  readonly minor: number;
  /** Where the map starts on the underlying device. */
  readonly offsetSectors: number;
}

/**
 * What the data device is built over: the LV's kernel device number (null
 * when the LV is inactive, as lvm reports "-1") and its size in bytes. A
 * `LogicalVolume` from the LVM manager fits as is.
 */
export interface DataDeviceSource {
  readonly kernelMajor: number | null;
  readonly kernelMinor: number | null;
  readonly sizeBytes: number;
}
