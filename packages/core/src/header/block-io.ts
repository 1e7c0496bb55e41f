import { readFile, stat } from 'node:fs/promises';
import {
  FailedPreconditionError,
  InvalidArgumentError,
  IoTimeoutError,
  NotFoundError,
} from '../errors.js';
import { splitDeviceNumber } from '../os/devnum.js';
import { errorCode, errorMessage } from '../os/errno.js';
import type { DeviceNumber } from '../os/devnum.js';
import { decodeHeader, encodeHeader } from './codec.js';
import { DeviceIo } from './device-io.js';
import { HEADER_SIZE } from './constants.js';
import type { DecodeResult, HeaderFields } from './types.js';

/** Where the kernel's sysfs is mounted; tests point this at a fake tree. */
export const DEFAULT_SYSFS_ROOT = '/sys';

/** Options of the block I/O functions. */
export interface BlockIoOptions {
  /** Root of sysfs; default `/sys`. */
  readonly sysfsRoot?: string;
  /**
   * Logical block size in bytes to use instead of asking the device, for a
   * caller that already knows it; must be a power of two in 512–65536.
   */
  readonly blockSizeBytes?: number;
  /**
   * Where the reads and writes run, with their deadline; default one
   * DeviceIo shared by the process (60 s per operation).
   */
  readonly io?: DeviceIo;
}

let sharedIo: DeviceIo | undefined;

/** The process-wide DeviceIo used when a caller passes none (default deadline). */
export function defaultDeviceIo(): DeviceIo {
  sharedIo ??= new DeviceIo();
  return sharedIo;
}

/**
 * The logical block size of a device in bytes: the smallest unit it can
 * write without a read-modify-write (512 or 4096 on real disks).
 *
 * A block device (an LV, a dm map, a partition, a loop device) answers
 * through `<sysfs>/dev/block/<major>:<minor>/queue/logical_block_size`
 * (Documentation/ABI/stable/sysfs-block); a partition has no `queue/` of its
 * own, so its parent disk's is read. A regular file (a disk image) is 512.
 * @throws NotFoundError when the path does not exist.
 * @throws FailedPreconditionError when it is neither a block device nor a
 *   regular file, or sysfs does not give a power of two in 512–65536.
 */
export async function logicalBlockSize(
  path: string,
  options: BlockIoOptions = {},
): Promise<number> {
  let st;
  try {
    st = await stat(path, { bigint: true });
  } catch (error) {
    throw ioError('examine', path, error);
  }
  if (st.isFile()) return HEADER_SIZE;
  if (!st.isBlockDevice()) {
    throw new FailedPreconditionError(`${path} is neither a block device nor a regular file`);
  }
  return logicalBlockSizeOfDevice(splitDeviceNumber(st.rdev), options);
}

/**
 * The logical block size in bytes of the block device `major:minor`, read
 * from sysfs as `logicalBlockSize` describes.
 * @throws FailedPreconditionError when sysfs has no readable, valid value.
 */
export async function logicalBlockSizeOfDevice(
  dev: DeviceNumber,
  options: BlockIoOptions = {},
): Promise<number> {
  // String concatenation, not path.join: `..` must be resolved by the
  // kernel after following the `<major>:<minor>` symlink (a partition's
  // parent is its disk), not lexically.
  const base = `${options.sysfsRoot ?? DEFAULT_SYSFS_ROOT}/dev/block/${dev.major}:${dev.minor}`;
  let text: string | undefined;
  for (const candidate of [
    `${base}/queue/logical_block_size`,
    `${base}/../queue/logical_block_size`,
  ]) {
    try {
      text = await readFile(candidate, 'utf8');
      break;
    } catch (error) {
      if (errorCode(error) !== 'ENOENT') {
        throw new FailedPreconditionError(`cannot read ${candidate}: ${errorMessage(error)}`, {
          cause: error,
        });
      }
    }
  }
  if (text === undefined) {
    throw new FailedPreconditionError(
      `sysfs has no logical_block_size for block device ${dev.major}:${dev.minor}`,
    );
  }
  const size = /^\d+$/.test(text.trim()) ? Number(text.trim()) : Number.NaN;
  if (!isValidBlockSize(size)) {
    throw new FailedPreconditionError(
      `block device ${dev.major}:${dev.minor} reports an impossible logical block size "${text.trim()}"`,
    );
  }
  return size;
}

/**
 * Reads exactly one logical block from byte 0 of `path` (DESIGN.md §4: the
 * header is one whole logical block).
 * @returns a Buffer of the device's logical block size (512 or 4096 bytes).
 * @throws NotFoundError when the path does not exist.
 * @throws FailedPreconditionError when it cannot be read or is shorter than one block.
 * @throws InvalidArgumentError when `options.blockSizeBytes` is not a valid block size.
 * @throws IoTimeoutError when the device does not answer within the deadline (DeviceIo).
 */
export async function readHeaderBlock(path: string, options: BlockIoOptions = {}): Promise<Buffer> {
  const blockSize = await blockSizeFor(path, options);
  let bytes: Buffer;
  try {
    ({ bytes } = await (options.io ?? defaultDeviceIo()).read(path, 0, blockSize));
  } catch (error) {
    throw ioError('read', path, error);
  }
  if (bytes.length < blockSize) throw shortRead(path, bytes.length, blockSize, 'one block');
  return bytes;
}

/**
 * Writes a 512-byte header as one whole logical block at byte 0 of `path`,
 * the rest of the block zero, and flushes it to stable storage (opened with
 * O_DSYNC, then `fdatasync(2)`) before resolving (DESIGN.md §4). Bytes after
 * the block are left untouched; a regular file is never created or truncated.
 * @throws InvalidArgumentError when `header` is not 512 bytes or
 *   `options.blockSizeBytes` is not a valid block size.
 * @throws NotFoundError when the path does not exist.
 * @throws FailedPreconditionError when it cannot be opened, written or flushed.
 * @throws IoTimeoutError when the device does not answer within the deadline (DeviceIo).
 */
export async function writeHeaderBlock(
  path: string,
  header: Uint8Array,
  options: BlockIoOptions = {},
): Promise<void> {
  if (header.byteLength !== HEADER_SIZE) {
    throw new InvalidArgumentError(`a header is ${HEADER_SIZE} bytes, got ${header.byteLength}`);
  }
  const blockSize = await blockSizeFor(path, options);
  const block = Buffer.alloc(blockSize);
  block.set(header, 0);
  try {
    await (options.io ?? defaultDeviceIo()).write(path, [{ offset: 0, data: block }]);
  } catch (error) {
    throw ioError('write', path, error);
  }
}

/**
 * Bytes zeroed at each end of a new volume's data area by
 * `clearDataAreaSignatures`: 1 MiB, which covers every place `blkid -p`
 * looks for a superblock or label at the start of a device (ext2/3/4 at
 * 1 KiB, xfs at 0, btrfs at 64 KiB, swap, LUKS, LVM PV, partition tables,
 * ZFS labels L0/L1) and at its end (md 0.90/1.0 superblocks, the backup
 * GPT, ZFS labels L2/L3).
 */
export const SIGNATURE_AREA_BYTES = 1048576;

/** Where a volume's data area lies on its LV, in bytes. */
export interface DataArea {
  /** Bytes from LV start to the data area (DESIGN.md §4; 1 MiB in v1); > 0. */
  readonly dataOffsetBytes: number;
  /**
   * End of the data area in bytes from LV start: data offset + capacity
   * (DESIGN.md §4 "Capacity"; the LV size for a v1 volume); > dataOffsetBytes.
   */
  readonly sizeBytes: number;
}

/**
 * Zeroes the first and the last `SIGNATURE_AREA_BYTES` of the data area of
 * `path` (clamped to the data area, never touching the header area before
 * `dataOffsetBytes`) and flushes them to stable storage (O_DSYNC, then
 * `fdatasync(2)`). A new LV can sit on extents that a deleted volume used
 * (the wipe policy `none` leaves its blocks): without this, the data area of
 * a brand-new volume shows the old tenant's filesystem to `blkid -p`, so
 * NodeStageVolume would mount that filesystem (with its files) or refuse
 * the volume as "holds another filesystem". DESIGN.md §5 (create), CSI spec
 * CreateVolume (no `volume_content_source`: a volume with no prior content).
 * Bytes in between are left as they are (wiping them is the wipe policy's job).
 * @throws InvalidArgumentError when the offsets are not whole, positive
 *   multiples of 512 bytes, or the data area is empty.
 * @throws NotFoundError when the path does not exist.
 * @throws FailedPreconditionError when it cannot be opened, written or flushed.
 * @throws IoTimeoutError when the device does not answer within the deadline (DeviceIo).
 */
export async function clearDataAreaSignatures(
  path: string,
  area: DataArea,
  options: Pick<BlockIoOptions, 'io'> = {},
): Promise<void> {
  const { dataOffsetBytes, sizeBytes } = area;
  for (const [field, value] of [
    ['dataOffsetBytes', dataOffsetBytes],
    ['sizeBytes', sizeBytes],
  ] as const) {
    if (!Number.isSafeInteger(value) || value <= 0 || value % HEADER_SIZE !== 0) {
      throw new InvalidArgumentError(
        `${field} must be a positive multiple of ${HEADER_SIZE} bytes, got ${value}`,
      );
    }
  }
  if (sizeBytes <= dataOffsetBytes) {
    throw new InvalidArgumentError(
      `an LV of ${sizeBytes} bytes has no data area after the ${dataOffsetBytes}-byte offset`,
    );
  }
  const headLength = Math.min(SIGNATURE_AREA_BYTES, sizeBytes - dataOffsetBytes);
  const tailStart = Math.max(sizeBytes - SIGNATURE_AREA_BYTES, dataOffsetBytes + headLength);
  const ranges: [number, number][] = [[dataOffsetBytes, headLength]];
  if (tailStart < sizeBytes) ranges.push([tailStart, sizeBytes - tailStart]);
  try {
    await (options.io ?? defaultDeviceIo()).write(
      path,
      ranges.map(([offset, zeroBytes]) => ({ offset, zeroBytes })),
    );
  } catch (error) {
    throw ioError('write', path, error);
  }
}

/**
 * Reads the first HEADER_SIZE (512) bytes of `path` (a block device or an
 * image file) and decodes its header.
 * @returns the decode result; decoding itself never throws.
 * @throws NotFoundError when the path does not exist.
 * @throws FailedPreconditionError when it is neither a block device nor a
 *   regular file, cannot be read, or is shorter than 512 bytes.
 * @throws IoTimeoutError when the device does not answer within the deadline (DeviceIo).
 */
export async function readHeader(
  path: string,
  options: Pick<BlockIoOptions, 'io'> = {},
): Promise<DecodeResult> {
  // The decoder looks at the first HEADER_SIZE bytes only, and a buffered read needs no
  // alignment, so the block size (a stat and a sysfs file per header) is not looked up: the GC
  // reads 1,000 headers per run (bench/ group `listing`). fstat on the open file keeps the type check.
  let read;
  try {
    read = await (options.io ?? defaultDeviceIo()).read(path, 0, HEADER_SIZE);
  } catch (error) {
    throw ioError('read', path, error);
  }
  if (read.kind === 'other') {
    throw new FailedPreconditionError(`${path} is neither a block device nor a regular file`);
  }
  if (read.bytes.length < HEADER_SIZE) {
    throw shortRead(path, read.bytes.length, HEADER_SIZE, 'a header');
  }
  return decodeHeader(read.bytes);
}

/**
 * The header I/O of real block devices and image files: `encodeHeader` +
 * `writeHeaderBlock`, `readHeaderBlock` + `decodeHeader`. Fits the LVM
 * manager's `HeaderIo` (lvm/header-io.ts) and the GC's `GcHeaderPort`.
 */
export class BlockHeaderIo {
  readonly #options: BlockIoOptions;

  constructor(options: BlockIoOptions = {}) {
    this.#options = options;
  }

  /**
   * @throws InvalidArgumentError when the fields are invalid (see encodeHeader).
   * @throws NotFoundError when the device does not exist.
   * @throws FailedPreconditionError when it cannot be written or flushed.
   * @throws IoTimeoutError when the device does not answer in time (all three methods).
   */
  async writeHeader(devicePath: string, fields: HeaderFields): Promise<void> {
    await writeHeaderBlock(devicePath, encodeHeader(fields), this.#options);
  }

  /** `clearDataAreaSignatures` (HeaderIo.clearDataArea); throws as that function. */
  async clearDataArea(devicePath: string, area: DataArea): Promise<void> {
    await clearDataAreaSignatures(devicePath, area, this.#options);
  }

  /**
   * @throws NotFoundError when the device does not exist.
   * @throws FailedPreconditionError when it cannot be read.
   */
  async readHeader(devicePath: string): Promise<DecodeResult> {
    return readHeader(devicePath, this.#options);
  }
}

function shortRead(path: string, done: number, wanted: number, what: string): Error {
  return new FailedPreconditionError(
    `short read from ${path}: ${done} of ${wanted} bytes (the device is smaller than ${what})`,
  );
}

async function blockSizeFor(path: string, options: BlockIoOptions): Promise<number> {
  const given = options.blockSizeBytes;
  if (given === undefined) return logicalBlockSize(path, options);
  if (!isValidBlockSize(given)) {
    throw new InvalidArgumentError(
      `blockSizeBytes must be a power of two in 512–65536, got ${given}`,
    );
  }
  return given;
}

function isValidBlockSize(size: number): boolean {
  return Number.isInteger(size) && size >= 512 && size <= 65536 && (size & (size - 1)) === 0;
}

function ioError(action: string, path: string, error: unknown): Error {
  if (
    error instanceof FailedPreconditionError ||
    error instanceof NotFoundError ||
    error instanceof IoTimeoutError
  ) {
    return error;
  }
  if (errorCode(error) === 'ENOENT') {
    return new NotFoundError(`device ${path} does not exist`, { cause: error });
  }
  return new FailedPreconditionError(`cannot ${action} ${path}: ${errorMessage(error)}`, {
    cause: error,
  });
}
