/**
 * What sysfs says about device-mapper devices under a host root
 * (sysfs-rules in the kernel documentation): read in-process, no dmsetup.
 */
import { lstat, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FailedPreconditionError } from '../errors.js';
import { formatDeviceNumber, type DeviceNumber } from '../os/devnum.js';
import { errorCode, errorMessage } from '../os/errno.js';

/**
 * Every device-mapper device as sysfs shows it under the host root
 * (`sys/block/dm-N/dm/name`, `dm/uuid`, `dev`), read in-process; a device
 * that goes away while it is read is left out. No open count (that is
 * dmsetup's, listAll).
 * @throws FailedPreconditionError when `sys/block` cannot be listed or a
 *   `dev` file is not `major:minor`.
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
  const read = (entry: string, file: string): Promise<string | null> =>
    readFile(join(blockDir, entry, file), 'utf8').then(
      (text) => text.trim(),
      () => null, // the device went away while listing
    );
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
