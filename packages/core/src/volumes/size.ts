import { InvalidArgumentError, OutOfRangeError } from '../errors.js';
import { DATA_OFFSET_BYTES } from '../header/constants.js';
import type { FsType } from '../fs/types.js';

/** Capacities are whole blocks of this many bytes (DESIGN.md §4 "Capacity"). */
export const CAPACITY_BLOCK_BYTES = 4096;

/**
 * The smallest data device each filesystem's mkfs formats with lvstamp's
 * options (`mkfsArgv`), in bytes, a whole number of 4 KiB blocks. Measured
 * with xfsprogs 6.1.0 and e2fsprogs 1.47.0 (docs/DESIGN.md §4 "Capacity"):
 * mkfs.xfs refuses anything below 300 MiB, mkfs.ext4 anything below 26 blocks.
 */
export const FILESYSTEM_MINIMUM_BYTES: Readonly<Record<FsType, number>> = Object.freeze({
  ext4: 106_496,
  xfs: 314_572_800,
});

/** What a volume of some capacity needs (DESIGN.md §4 "Capacity"). */
export interface SizeRequest {
  /** Smallest acceptable capacity in bytes; 0 = not given (then limitBytes is). */
  readonly requiredBytes: number;
  /** Largest acceptable capacity in bytes; 0 or undefined = no limit. */
  readonly limitBytes?: number | undefined;
  /** The volume group's extent size in bytes (vgs `vg_extent_size`), > 0. */
  readonly extentSizeBytes: number;
  /** Smallest capacity the volume's filesystem can be made on, in bytes; default 0. */
  readonly minimumBytes?: number | undefined;
  /** Bytes before the data area; default the header v1/v2 data offset, 1 MiB. */
  readonly dataOffsetBytes?: number | undefined;
}

/** The sizes of a volume: what the user sees and what lvm allocates. */
export interface VolumeSize {
  /** The data device's length in bytes: a whole number of 4 KiB blocks. */
  readonly capacityBytes: number;
  /** The LV's size in bytes: data offset + capacity, rounded up to whole extents. */
  readonly lvSizeBytes: number;
}

/**
 * The one size rule of lvstamp (DESIGN.md §4 "Capacity"), for create and
 * expansion alike: the capacity is what was asked for (requiredBytes, or
 * limitBytes when only a limit is given) in whole 4 KiB blocks: required
 * rounded up, a lone limit rounded down; then raised to the filesystem
 * minimum. The LV holds the data offset and the capacity, rounded up to
 * whole extents; the extent slack stays unused behind the data device.
 *
 * @returns capacity and LV size in bytes.
 * @throws InvalidArgumentError when a number is not a whole non-negative
 *   byte count, the extent size is 0, the data offset is not a positive
 *   multiple of 4 KiB, or neither required nor limit is given.
 * @throws OutOfRangeError when no capacity fits the range: limit < required,
 *   a limit below one 4 KiB block, required rounded up to 4 KiB or the
 *   filesystem minimum above the limit, or an LV size beyond 2^53 − 1 bytes
 *   (CSI spec CreateVolume/NodeExpandVolume: OUT_OF_RANGE).
 */
export function volumeSize(request: SizeRequest): VolumeSize {
  const required = wholeBytes('requiredBytes', request.requiredBytes);
  const limit = wholeBytes('limitBytes', request.limitBytes ?? 0);
  const minimum = wholeBytes('minimumBytes', request.minimumBytes ?? 0);
  const extent = wholeBytes('extentSizeBytes', request.extentSizeBytes);
  if (extent === 0) throw new InvalidArgumentError('extentSizeBytes must be positive');
  const offset = blockMultiple('dataOffsetBytes', request.dataOffsetBytes ?? DATA_OFFSET_BYTES);
  if (required === 0 && limit === 0) {
    throw new InvalidArgumentError('a capacity needs requiredBytes or limitBytes');
  }
  if (limit !== 0 && limit < required) {
    throw new OutOfRangeError(`limitBytes ${limit} is below requiredBytes ${required}`);
  }
  const asked =
    required !== 0
      ? roundUp(required, CAPACITY_BLOCK_BYTES)
      : roundDown(limit, CAPACITY_BLOCK_BYTES);
  const capacityBytes = Math.max(asked, roundUp(minimum, CAPACITY_BLOCK_BYTES));
  if (capacityBytes === 0) {
    throw new OutOfRangeError(
      `limitBytes ${limit} is below one ${CAPACITY_BLOCK_BYTES}-byte block`,
    );
  }
  if (limit !== 0 && capacityBytes > limit) {
    const why =
      capacityBytes > asked
        ? `the filesystem needs at least ${capacityBytes} bytes`
        : `whole ${CAPACITY_BLOCK_BYTES}-byte blocks make ${capacityBytes} bytes`;
    throw new OutOfRangeError(`${why}, above limitBytes ${limit}`);
  }
  const lvSizeBytes = roundUp(offset + capacityBytes, extent);
  if (!Number.isSafeInteger(lvSizeBytes)) {
    throw new OutOfRangeError(`capacity ${capacityBytes} bytes is too large`);
  }
  return { capacityBytes, lvSizeBytes };
}

/**
 * The capacity of an existing volume from its header (DESIGN.md §4
 * "Capacity"): header v2 records it (`requestedBytes`); a v1 volume's data
 * device always covered the whole LV after the data offset, so its capacity
 * stays LV size − data offset.
 * @param header the decoded header's version and fields.
 * @param lvSizeBytes the LV's size in bytes.
 * @returns the capacity in bytes, or null when the header does not fit the
 *   LV (a v2 capacity beyond the LV, or a data offset at or beyond its end).
 */
export function capacityOf(
  header: {
    readonly version: number;
    readonly dataOffsetBytes: number;
    readonly requestedBytes: number;
  },
  lvSizeBytes: number,
): number | null {
  const room = lvSizeBytes - header.dataOffsetBytes;
  if (room <= 0) return null;
  if (header.version === 1) return room;
  return header.requestedBytes > 0 && header.requestedBytes <= room ? header.requestedBytes : null;
}

/** `bytes` rounded up to a multiple of `unit` (both in bytes, unit > 0), e.g. an LV size to whole extents. */
export function roundUp(bytes: number, unit: number): number {
  return Math.ceil(bytes / unit) * unit;
}

function roundDown(bytes: number, unit: number): number {
  return Math.floor(bytes / unit) * unit;
}

function wholeBytes(field: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new InvalidArgumentError(`${field} must be a whole number of bytes, got ${value}`);
  }
  return value;
}

function blockMultiple(field: string, value: number): number {
  if (!Number.isSafeInteger(value) || value <= 0 || value % CAPACITY_BLOCK_BYTES !== 0) {
    throw new InvalidArgumentError(
      `${field} must be a positive multiple of ${CAPACITY_BLOCK_BYTES} bytes, got ${value}`,
    );
  }
  return value;
}

/**
 * The largest capacity a new volume can get in a volume group (DESIGN.md §4
 * "Capacity"): its whole free extents minus the data offset, in whole 4 KiB
 * blocks, never negative. Bytes in, bytes out.
 */
export function maximumCapacity(vg: {
  readonly freeBytes: number;
  readonly extentSizeBytes: number;
}): number {
  const usableBytes = roundDown(vg.freeBytes, vg.extentSizeBytes);
  return Math.max(roundDown(usableBytes - DATA_OFFSET_BYTES, CAPACITY_BLOCK_BYTES), 0);
}
