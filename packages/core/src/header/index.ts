// Sector-0 header: the codec and block-device I/O (DESIGN.md §4).
export type { DecodeResult } from './types.js';
export { DATA_OFFSET_BYTES } from './constants.js';
export { encodeHeader } from './codec.js';
export { BlockHeaderIo, clearDataAreaSignatures, writeHeaderBlock } from './block-io.js';
