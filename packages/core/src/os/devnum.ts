import { stat } from 'node:fs/promises';
import { FailedPreconditionError, NotFoundError } from '../errors.js';
import { errorCode, errorMessage } from './errno.js';

/** A kernel device number, split as Linux does (`major(3)`, `minor(3)`). */
export interface DeviceNumber {
  readonly major: number;
  readonly minor: number;
}

/**
 * Splits a Linux `dev_t` into major and minor numbers, exactly as glibc's
 * `major(3)` / `minor(3)` do (32-bit major and minor):
 * major = bits 8–19 and 44–63, minor = bits 0–7 and 20–43.
 */
export function splitDeviceNumber(dev: bigint): DeviceNumber {
  const major = ((dev >> 8n) & 0xfffn) | ((dev >> 32n) & 0xfffff000n);
  const minor = (dev & 0xffn) | ((dev >> 12n) & 0xffffff00n);
  return { major: Number(major), minor: Number(minor) };
}

/** True when both name the same device (same major and minor). */
export function sameDevice(a: DeviceNumber, b: DeviceNumber): boolean {
  return a.major === b.major && a.minor === b.minor;
}

/** `major:minor`, as dmsetup tables and /proc/self/mountinfo write it. */
export function formatDeviceNumber(dev: DeviceNumber): string {
  return `${dev.major}:${dev.minor}`;
}

/**
 * The device number (`st_rdev`) of a block device node, or null when the
 * path does not exist.
 * @throws FailedPreconditionError when the path is not a block device or
 *   cannot be examined (permissions, I/O error).
 */
export async function blockDeviceNumber(path: string): Promise<DeviceNumber | null> {
  let st;
  try {
    st = await stat(path, { bigint: true });
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return null;
    throw new FailedPreconditionError(`cannot stat ${path}: ${errorMessage(error)}`, {
      cause: error,
    });
  }
  if (!st.isBlockDevice()) throw new FailedPreconditionError(`${path} is not a block device`);
  return splitDeviceNumber(st.rdev);
}

/**
 * Like `blockDeviceNumber`, but a missing path is an error.
 * @throws NotFoundError when the path does not exist.
 * @throws FailedPreconditionError when it is not a block device or cannot be examined.
 */
export async function requireBlockDeviceNumber(path: string): Promise<DeviceNumber> {
  const dev = await blockDeviceNumber(path);
  if (dev === null) throw new NotFoundError(`device ${path} does not exist`);
  return dev;
}
