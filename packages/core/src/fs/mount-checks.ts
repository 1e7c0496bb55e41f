/**
 * The checks of mount, bind mount and format: is what mountinfo shows on a
 * path the mount asked for (kubernetes/mount-utils semantics), where a
 * mount point really is, and whether a device can be read.
 */
import { constants } from 'node:fs';
import { open, realpath, type FileHandle } from 'node:fs/promises';
import { isAbsolute, posix, resolve } from 'node:path';
import { FailedPreconditionError, InvalidArgumentError, NotFoundError } from '../errors.js';
import { formatDeviceNumber, sameDevice, type DeviceNumber } from '../os/devnum.js';
import { errorCode, errorMessage } from '../os/errno.js';
import { isReadonlyMount } from '../os/mountinfo.js';
import type { FsType, MountInfoEntry } from './types.js';

/** Bytes read in-process to prove a device readable before calling it blank. */
const READ_CHECK_BYTES = 4096;

/**
 * errno values of a mount point whose filesystem is gone or hung (a dead
 * FUSE daemon, a lost NFS server, a failed disk): kubernetes/mount-utils
 * `IsCorruptedMnt`. Such a path counts as mounted.
 */
const CORRUPTED_MOUNT_ERRORS: ReadonlySet<string> = new Set([
  'ENOTCONN',
  'ESTALE',
  'EIO',
  'EHOSTDOWN',
]);

/** Why a mount on top of a path is not the requested one, or null when it is. */
export function mismatch(
  top: MountInfoEntry,
  dev: DeviceNumber,
  fsType: FsType,
  readonly: boolean,
): string | null {
  if (!sameDevice(top, dev) || top.root !== '/') {
    const root = top.root === '/' ? '' : ` (subtree ${top.root})`;
    return `${top.source} (${formatDeviceNumber(top)})${root} is mounted there, not device ${formatDeviceNumber(dev)}`;
  }
  if (top.fsType !== fsType) return `it is mounted as ${top.fsType}, not ${fsType}`;
  if (isReadonlyMount(top) !== readonly) {
    return `it is mounted ${isReadonlyMount(top) ? 'read-only' : 'read-write'}, not ${readonly ? 'read-only' : 'read-write'}`;
  }
  return null;
}

/** The filesystem and subtree a bind mount of `path` shows in mountinfo. */
export interface BindSource extends DeviceNumber {
  readonly root: string;
}

/**
 * The mount holding `path` (longest mount point prefix; of stacked mounts
 * the top one) and `path`'s place under that mount's root.
 * @throws FailedPreconditionError when no mount holds it (no `/` entry).
 */
export function bindSourceOf(entries: readonly MountInfoEntry[], path: string): BindSource {
  let best: MountInfoEntry | undefined;
  for (const entry of entries) {
    const mp = entry.mountPoint;
    const holds = mp === '/' || path === mp || path.startsWith(`${mp}/`);
    if (holds && (best === undefined || mp.length >= best.mountPoint.length)) best = entry;
  }
  if (best === undefined) throw new FailedPreconditionError(`no mount holds ${path}`);
  const below = best.mountPoint === '/' ? path : path.slice(best.mountPoint.length);
  return { major: best.major, minor: best.minor, root: posix.join(best.root, below || '/') };
}

/** Why a mount on a target is not the wanted bind mount, or null when it is. */
export function bindMismatch(
  top: MountInfoEntry,
  wanted: BindSource,
  readonly: boolean,
): string | null {
  if (!sameDevice(top, wanted) || top.root !== wanted.root) {
    return `${top.source} (${formatDeviceNumber(top)}, root ${top.root}) is mounted there, not ${formatDeviceNumber(wanted)} root ${wanted.root}`;
  }
  if (isReadonlyMount(top) !== readonly) {
    return `it is mounted ${isReadonlyMount(top) ? 'read-only' : 'read-write'}, not ${readonly ? 'read-only' : 'read-write'}`;
  }
  return null;
}

type MountPoint =
  | { readonly state: 'present' | 'missing'; readonly path: string }
  | { readonly state: 'corrupted'; readonly path: string; readonly code: string };

/**
 * The canonical path of a mount point as mountinfo shows it (symlinks
 * resolved), whether it exists, and whether it is a corrupted mount.
 */
export async function resolveMountPoint(target: string): Promise<MountPoint> {
  if (!isAbsolute(target))
    throw new InvalidArgumentError(`mount point must be an absolute path, got "${target}"`);
  const path = resolve(target);
  try {
    return { state: 'present', path: await realpath(path) };
  } catch (error) {
    const code = errorCode(error);
    if (code === 'ENOENT') return { state: 'missing', path };
    if (code !== undefined && CORRUPTED_MOUNT_ERRORS.has(code))
      return { state: 'corrupted', path, code };
    throw new FailedPreconditionError(`cannot examine ${path}: ${errorMessage(error)}`, {
      cause: error,
    });
  }
}

/**
 * Reads 4 KiB of `device` in-process, from `offsetBytes` (default 0).
 * @throws NotFoundError when it does not exist.
 * @throws FailedPreconditionError when it cannot be opened or read.
 */
export async function assertReadable(device: string, offsetBytes = 0): Promise<void> {
  let fh: FileHandle | undefined;
  try {
    fh = await open(device, constants.O_RDONLY);
    await fh.read(Buffer.alloc(READ_CHECK_BYTES), 0, READ_CHECK_BYTES, offsetBytes);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') {
      throw new NotFoundError(`device ${device} does not exist`, { cause: error });
    }
    throw new FailedPreconditionError(
      `blkid found nothing on ${device}, but it cannot be read (${errorMessage(error)}); not treating it as blank`,
      { cause: error },
    );
  } finally {
    await fh?.close();
  }
}
