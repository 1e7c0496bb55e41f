import type { LogicalVolume } from '../lvm/types.js';
import type { DeviceNumber } from '../device/types.js';

// Small helpers shared by the GC modules; not part of the public API.

/** The LV's kernel device number, or null when lvm reports none (inactive). */
export function kernelNumber(lv: LogicalVolume): DeviceNumber | null {
  if (lv.kernelMajor === null || lv.kernelMinor === null) return null;
  return { major: lv.kernelMajor, minor: lv.kernelMinor };
}

/** `major:minor`, the key under which devices are matched. */
export function numberKey(n: DeviceNumber): string {
  return `${n.major}:${n.minor}`;
}

/** `<vg>/<lv>`. */
export function lvDevice(lv: { readonly vgName: string; readonly lvName: string }): string {
  return `${lv.vgName}/${lv.lvName}`;
}

/** Code-unit order: the same on every host and locale. */
export function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The message of any thrown value, for reasons and details. */
export function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A Unix time in milliseconds as ISO 8601 UTC, for reasons. */
export function formatTime(ms: number): string {
  return Number.isFinite(ms) && Math.abs(ms) <= 8.64e15 ? new Date(ms).toISOString() : `${ms} ms`;
}

/**
 * A duration in milliseconds for reasons: `1d 2h 3m 4s` from one minute up
 * (sub-second rest dropped), `1.5s` below one minute.
 */
export function formatDuration(ms: number): string {
  if (ms < 60_000) return `${ms / 1000}s`;
  let rest = Math.floor(ms / 1000);
  const parts: string[] = [];
  for (const [unit, seconds] of [
    ['d', 86400],
    ['h', 3600],
    ['m', 60],
  ] as const) {
    if (rest >= seconds) {
      parts.push(`${Math.floor(rest / seconds)}${unit}`);
      rest %= seconds;
    }
  }
  if (rest > 0) parts.push(`${rest}s`);
  return parts.join(' ');
}
