import type { DecodeResult } from '../header/types.js';
import type { LogicalVolume } from '../lvm/types.js';

/**
 * What sector 0 of an LV says (DESIGN.md §4 decode results), or
 * `unreadable` with the reason: the LV is inactive or the read failed.
 */
export type HeaderReading =
  DecodeResult | { readonly status: 'unreadable'; readonly reason: string };

/**
 * Reads and decodes the header of an LV through the device path lvm
 * reports; never throws (an inactive LV has no device to read).
 */
export async function readHeaderSafely(
  lv: LogicalVolume,
  headers: { readHeader(devicePath: string): Promise<DecodeResult> },
): Promise<HeaderReading> {
  if (!lv.active || lv.kernelMajor === null || lv.kernelMinor === null) {
    return { status: 'unreadable', reason: 'LV is inactive' };
  }
  if (lv.dmPath === null) {
    return { status: 'unreadable', reason: 'lvm reported no device path for the active LV' };
  }
  try {
    return await headers.readHeader(lv.dmPath);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return { status: 'unreadable', reason: `reading ${lv.dmPath} failed: ${message}` };
  }
}
