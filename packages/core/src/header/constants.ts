/**
 * Constants of the on-disk header v1 and v2 (DESIGN.md §4, "Header v1",
 * "Header v2").
 */

/** Magic at byte 0 of a stamped LV: ASCII `LVSTAMP` followed by one 0x00 byte (8 bytes). */
export const HEADER_MAGIC: Uint8Array = Uint8Array.from(Buffer.from('LVSTAMP\0', 'latin1'));

/** A header version this code reads: 1 (capacity = LV size − data offset) or 2 (capacity recorded). */
export type HeaderVersion = 1 | 2;

/** The header version this code writes; it reads every HeaderVersion. */
export const HEADER_VERSION: HeaderVersion = 2;

/** Size of the header record in bytes (one 512-byte sector). */
export const HEADER_SIZE = 512;

/** Bytes from LV start to the data area in v1 and v2: 1 MiB (1048576 bytes). */
export const DATA_OFFSET_BYTES = 1048576;

/** The data offset must be a multiple of this many bytes (DESIGN.md §4). */
export const DATA_OFFSET_ALIGNMENT_BYTES = 4096;

/** Size of a device-mapper / kernel sector in bytes; dm tables count in these. */
export const SECTOR_BYTES = 512;

/**
 * Width of the header's name field in bytes (DESIGN.md §4: `nameLength`
 * 1–256). Wider than the names lvstamp accepts (MAX_NAME_BYTES, 128), so
 * the layout needs no change should that limit ever rise; the codec reads
 * and rewrites whatever fits the field.
 */
export const HEADER_NAME_FIELD_BYTES = 256;
