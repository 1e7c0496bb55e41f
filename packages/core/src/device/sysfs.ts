/**
 * What sysfs says about device-mapper devices under a host root
 * (sysfs-rules in the kernel documentation): read in-process, no dmsetup.
 */
import { lstat, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import pLimit from 'p-limit';
import { FailedPreconditionError } from '../errors.js';
import { formatDeviceNumber, type DeviceNumber } from '../os/devnum.js';
import { errorCode, errorMessage } from '../os/errno.js';

/**
 * sysfs files this process reads at once (sysfsMaps). Each delete and each
 * create of a burst scans every dm device, three files each: unbounded, 64
 * concurrent scans of 64 devices held some 12,000 files open and a spawn
 * then failed with EMFILE.
 */
export const SYSFS_READS_AT_ONCE = 32;
const sysfsReads = pLimit(SYSFS_READS_AT_ONCE);

/**
 * Every device-mapper device as sysfs shows it under the host root
 * (`sys/block/dm-N/dm/name`, `dm/uuid`, `dev`), read in-process, at most
 * SYSFS_READS_AT_ONCE files at once in this process; a device that goes
 * away while it is read (ENOENT, ENODEV) is left out. No open count (that
 * is dmsetup's, listAll).
 * @throws FailedPreconditionError when `sys/block` cannot be listed, a file
 *   of a device cannot be read for another reason (EMFILE, EACCES, EIO:
 *   without it nothing proves the device absent), or a `dev` file is not
 *   `major:minor`.
 */
export async function sysfsMaps(
  hostRoot: string | undefined,
): Promise<(DeviceNumber & { name: string; uuid: string })[]> {
  const blockDir = join(hostRoot ?? '/', 'sys/block');
  let entries: string[];
  try {
    entries = (await readdir(blockDir)).filter((name) => name.startsWith('dm-'));
  } catch (error) {
    throw new FailedPreconditionError(`cannot list ${blockDir}: ${(error as Error).message}`);
  }
  const read = (entry: string, file: string): Promise<string | null> => {
    const path = join(blockDir, entry, file);
    return sysfsReads(() => readFile(path, 'utf8')).then(
      (text) => text.trim(),
      (error: unknown) => {
        const code = errorCode(error);
        if (code === 'ENOENT' || code === 'ENODEV') return null; // the device went away
        throw new FailedPreconditionError(`cannot read ${path}: ${errorMessage(error)}`);
      },
    );
  };
  const maps = await Promise.all(
    entries.map(async (entry) => {
      const [name, uuid, dev] = await Promise.all([
        read(entry, 'dm/name'),
        read(entry, 'dm/uuid'),
        read(entry, 'dev'),
      ]);
      if (name === null || uuid === null || dev === null) return [];
      const match = /^(\d+):(\d+)$/.exec(dev);
      if (match === null) {
        throw new FailedPreconditionError(
          `${join(blockDir, entry, 'dev')} holds "${dev}", not major:minor`,
        );
      }
      return [{ name, uuid, major: Number(match[1]), minor: Number(match[2]) }];
    }),
  );
  return maps.flat();
}

/**
 * Whether the block device `device` still exists
 * (`sys/dev/block/<major>:<minor>` under the host root).
 * @throws FailedPreconditionError when sysfs cannot be read: without it
 *   nothing proves the device gone.
 */
export async function blockDevicePresent(
  hostRoot: string | undefined,
  device: DeviceNumber,
): Promise<boolean> {
  const blockDir = join(hostRoot ?? '/', 'sys/dev/block');
  const exists = (path: string): Promise<boolean> =>
    lstat(path).then(
      () => true,
      (error: unknown) => {
        if (errorCode(error) === 'ENOENT') return false;
        throw new FailedPreconditionError(`cannot read ${path}: ${errorMessage(error)}`);
      },
    );
  if (!(await exists(blockDir))) throw new FailedPreconditionError(`${blockDir} does not exist`);
  return exists(join(blockDir, formatDeviceNumber(device)));
}
