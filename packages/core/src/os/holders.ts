import { readdir, readFile, readlink } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { parseMountInfo } from './mountinfo.js';
import { formatDeviceNumber } from './devnum.js';
import type { DeviceNumber } from './devnum.js';

/** A block device that holds another open (sysfs `holders/`), e.g. a device-mapper map on top of it. */
export interface DeviceHolder {
  /** Kernel name, e.g. `dm-5` or `loop3`. */
  readonly kernelName: string;
  /** The device-mapper name (`/sys/block/<dm-N>/dm/name`), or null for other devices. */
  readonly dmName: string | null;
  /** `major:minor`, or null when sysfs did not say. */
  readonly device: string | null;
  /** Kernel name of the device it holds (the queried device, or a holder of it). */
  readonly holds: string;
}

/** A mount of the device or of one of its holders (mountinfo, proc(5)). */
export interface DeviceMount {
  /** Kernel name of the mounted device. */
  readonly kernelName: string;
  readonly mountPoint: string;
  readonly fsType: string;
}

/** Who keeps a block device open, as far as the kernel shows it. */
export interface DeviceUsers {
  /** `major:minor` of the queried device. */
  readonly device: string;
  /** Kernel name of the queried device, or null when sysfs does not know it. */
  readonly kernelName: string | null;
  /** Holders, recursively (a holder's holders follow it). */
  readonly holders: readonly DeviceHolder[];
  /** Mounts of the device and of every holder, in mountinfo order. */
  readonly mounts: readonly DeviceMount[];
}

/** How deep holders of holders are followed. */
const MAX_DEPTH = 8;

/**
 * Finds who keeps the block device `dev` open: its holders from sysfs
 * (`/sys/dev/block/<major:minor>` → `/sys/block/<name>/holders/*`, each
 * holder's own holders too, with `dm/name` and `dev` of each; sysfs-rules
 * in the kernel documentation) and the mountinfo entries (proc(5)) whose
 * major:minor is the device or one of its holders. Open file descriptors of
 * processes are not looked for.
 *
 * For error messages only: it never throws; whatever cannot be read (the
 * device is gone, no sysfs, an unreadable mount table) is left out.
 * @param options.hostRoot the directory that holds `sys/` and `proc/`;
 *   default `/` (tests pass a fake tree).
 */
export async function findDeviceUsers(
  dev: DeviceNumber,
  options: { readonly hostRoot?: string | undefined } = {},
): Promise<DeviceUsers> {
  const root = options.hostRoot ?? '/';
  const device = formatDeviceNumber(dev);
  let kernelName: string | null = null;
  try {
    kernelName = basename(await readlink(join(root, 'sys/dev/block', device)));
  } catch {
    // Not known to sysfs (gone, or no sysfs): no holders to report.
  }
  const holders: DeviceHolder[] = [];
  const seen = new Set<string>(kernelName === null ? [] : [kernelName]);
  const visit = async (name: string, depth: number): Promise<void> => {
    if (depth >= MAX_DEPTH) return;
    let names: string[];
    try {
      names = (await readdir(join(root, 'sys/block', name, 'holders'))).sort();
    } catch {
      return;
    }
    for (const holder of names) {
      if (seen.has(holder)) continue;
      seen.add(holder);
      holders.push({
        kernelName: holder,
        dmName: await readTrimmed(join(root, 'sys/block', holder, 'dm/name')),
        device: await readTrimmed(join(root, 'sys/block', holder, 'dev')),
        holds: name,
      });
      await visit(holder, depth + 1);
    }
  };
  if (kernelName !== null) await visit(kernelName, 0);

  const byDevice = new Map<string, string>([[device, kernelName ?? device]]);
  for (const h of holders) if (h.device !== null) byDevice.set(h.device, h.kernelName);
  const mounts: DeviceMount[] = [];
  try {
    const text = await readFile(join(root, 'proc/self/mountinfo'));
    for (const entry of parseMountInfo(text)) {
      const name = byDevice.get(`${entry.major}:${entry.minor}`);
      if (name !== undefined) {
        mounts.push({ kernelName: name, mountPoint: entry.mountPoint, fsType: entry.fsType });
      }
    }
  } catch {
    // An unreadable mount table: the holders alone are reported.
  }
  return { device, kernelName, holders, mounts };
}

/**
 * One line for an error message, e.g.
 * `held by dm-5 (lvstamp-<id>); mounted: dm-5 on /mnt/a (ext4)`, or
 * `no holder or mount of dm-3 found in sysfs or mountinfo: a process may hold
 * it open (fuser -v /dev/dm-3)`.
 */
export function describeDeviceUsers(users: DeviceUsers): string {
  const parts: string[] = [];
  if (users.holders.length > 0) {
    const held = users.holders.map((h) => {
      const label = h.dmName === null ? h.kernelName : `${h.kernelName} (${h.dmName})`;
      return h.holds === users.kernelName ? label : `${label} on ${h.holds}`;
    });
    parts.push(`held by ${held.join(', ')}`);
  }
  if (users.mounts.length > 0) {
    const mounted = users.mounts.map((m) => `${m.kernelName} on ${m.mountPoint} (${m.fsType})`);
    parts.push(`mounted: ${mounted.join(', ')}`);
  }
  if (parts.length === 0) {
    // what is left is a process with the device open, which only /proc/*/fd shows
    const who =
      users.kernelName === null ? 'fuser -v on its device' : `fuser -v /dev/${users.kernelName}`;
    return `no holder or mount of ${users.kernelName ?? users.device} found in sysfs or mountinfo: a process may hold it open (${who})`;
  }
  return parts.join('; ');
}

/**
 * `findDeviceUsers` and `describeDeviceUsers` in one: the text an "open" or
 * "busy" error appends. Never throws.
 */
export async function deviceUsersText(
  dev: DeviceNumber,
  options: { readonly hostRoot?: string | undefined } = {},
): Promise<string> {
  return describeDeviceUsers(await findDeviceUsers(dev, options));
}

async function readTrimmed(path: string): Promise<string | null> {
  try {
    const text = (await readFile(path, 'utf8')).trim();
    return text === '' ? null : text;
  } catch {
    return null;
  }
}
