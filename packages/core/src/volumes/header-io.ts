import type { DataArea } from '../header/block-io.js';
import type { DecodeResult, HeaderFields } from '../header/types.js';

/**
 * Reads and writes the sector-0 header of an LV (DESIGN.md §4). The real
 * implementation is BlockHeaderIo (header/block-io.ts); the volume module
 * needs only this much, so tests pass a fake.
 */
export interface HeaderIo {
  /**
   * Encodes `header` as header v2 and writes it at byte 0 of `devicePath` as
   * one whole logical block (512 or 4096 bytes, the rest zero), then flushes
   * it to stable storage before resolving.
   */
  writeHeader(devicePath: string, header: HeaderFields): Promise<void>;
  /**
   * Zeroes the first and last MiB of the data area of a new LV and flushes
   * them, so that no signature a deleted volume left on the same extents
   * shows through (header/block-io.ts `clearDataAreaSignatures`). Called
   * before `writeHeader`, while the LV still has its `lvstamp_new_` name.
   */
  clearDataArea(devicePath: string, area: DataArea): Promise<void>;
  /** Reads sector 0 of `devicePath` and decodes it; decoding never throws. */
  readHeader(devicePath: string): Promise<DecodeResult>;
}
