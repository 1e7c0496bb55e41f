// Sector-0 header: constants, the pure codec and block-device I/O (DESIGN.md §4).
export type * from './types.js';
export * from './constants.js';
export { crc32 } from './crc32.js';
export { decodeHeader, describeDecode, encodeHeader } from './codec.js';
export {
  BlockHeaderIo,
  clearDataAreaSignatures,
  DEFAULT_SYSFS_ROOT,
  defaultDeviceIo,
  logicalBlockSize,
  logicalBlockSizeOfDevice,
  readHeader,
  readHeaderBlock,
  SIGNATURE_AREA_BYTES,
  writeHeaderBlock,
  type BlockIoOptions,
  type DataArea,
} from './block-io.js';
export {
  DEFAULT_IO_TIMEOUT_MS,
  DEFAULT_MAX_STUCK_THREADS,
  DeviceIo,
  type DeviceIoOptions,
  type DeviceRead,
  type WriteRange,
} from './device-io.js';
