import * as zlib from 'node:zlib';

/**
 * CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320, initial value and
 * final XOR 0xFFFFFFFF) as the header checksum uses it (DESIGN.md §4).
 * Node's `zlib.crc32` computes exactly this; it exists from Node 20.15 and
 * 22.2, so older runtimes (the workspace allows Node ≥ 20.9) use the table.
 */

const TABLE: Uint32Array = buildTable();

function buildTable(): Uint32Array {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
}

/**
 * CRC-32 of `data` computed with a 256-entry table, in pure JavaScript.
 * @returns an unsigned 32-bit integer.
 */
export function crc32Table(data: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of data) {
    crc = (TABLE[(crc ^ byte) & 0xff] ?? 0) ^ (crc >>> 8);
  }
  return (crc ^ 0xffffffff) >>> 0;
}

type Crc32 = (data: Uint8Array) => number;

/** `zlib.crc32` where the runtime has it (Node ≥ 20.15 / 22.2), else undefined. */
const nativeCrc32: Crc32 | undefined = (zlib as { readonly crc32?: Crc32 }).crc32;

/**
 * CRC-32 of `data`: Node's `zlib.crc32` when present, else `crc32Table`.
 * Both give the same result for every input.
 * @returns an unsigned 32-bit integer.
 */
export const crc32: Crc32 = nativeCrc32 ?? crc32Table;
