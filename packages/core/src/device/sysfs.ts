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
 * away while it is read (ENOENT, ENODEV; EINVAL from a `dm/` file) is left
 * out. No open count (that is dmsetup's, listAll).
 * @throws FailedPreconditionError when `sys/block` cannot be listed, a file
 *   of a device cannot be read for another reason (EMFILE, EACCES, EIO:
 *   without it nothing proves the device absent), or a `dev` file is not
 *   `major:minor`.
 */
export async function sysfsMaps(
  hostRoot: string | undefined,
): Promise<(DeviceNumber & { name: string; uuid: string })[]> {
  const { blockDir, entries } = await dmEntries(hostRoot);
  const maps = await Promise.all(entries.map((entry) => mapOf(blockDir, entry)));
  return maps.flat();
}

/**
 * As sysfsMaps, for the device-mapper devices whose `name` (`dm/name`) or
 * `uuid` (`dm/uuid`) is `value`: one file read per device, the other two
 * only for a match (a scan for one map, as each delete makes, reads a
 * third of sysfsMaps's files).
 * @throws FailedPreconditionError as sysfsMaps.
 */
export async function sysfsMapsWith(
  hostRoot: string | undefined,
  field: 'name' | 'uuid',
  value: string,
): Promise<(DeviceNumber & { name: string; uuid: string })[]> {
  const { blockDir, entries } = await dmEntries(hostRoot);
  const maps = await Promise.all(
    entries.map(async (entry) =>
      (await readSysfs(blockDir, entry, `dm/${field}`)) === value ? mapOf(blockDir, entry) : [],
    ),
  );
  return maps.flat().filter((map) => map[field] === value);
}

/** `sys/block` under the host root and its `dm-N` entries. */
async function dmEntries(
  hostRoot: string | undefined,
): Promise<{ blockDir: string; entries: string[] }> {
  const blockDir = join(hostRoot ?? '/', 'sys/block');
  try {
    const entries = (await readdir(blockDir)).filter((name) => name.startsWith('dm-'));
    return { blockDir, entries };
  } catch (error) {
    throw new FailedPreconditionError(`cannot list ${blockDir}: ${(error as Error).message}`);
  }
}

/**
 * One file of `sys/block/<entry>`, trimmed; null when the device went away:
 * ENOENT or ENODEV, or for a `dm/` file EINVAL, which device-mapper returns
 * while the device is being removed (drivers/md/dm-sysfs.c: no device
 * behind the kobject any more; seen in a burst of 64 deletes).
 */
function readSysfs(blockDir: string, entry: string, file: string): Promise<string | null> {
  const path = join(blockDir, entry, file);
  return sysfsReads(() => readFile(path, 'utf8')).then(
    (text) => text.trim(),
    (error: unknown) => {
      const code = errorCode(error);
      if (code === 'ENOENT' || code === 'ENODEV') return null;
      if (code === 'EINVAL' && file.startsWith('dm/')) return null;
      throw new FailedPreconditionError(`cannot read ${path}: ${errorMessage(error)}`);
    },
  );
}

/** The map `sys/block/<entry>` shows, or none when it went away. */
async function mapOf(
  blockDir: string,
  entry: string,
): Promise<(DeviceNumber & { name: string; uuid: string })[]> {
  const [name, uuid, dev] = await Promise.all([
    readSysfs(blockDir, entry, 'dm/name'),
    readSysfs(blockDir, entry, 'dm/uuid'),
    readSysfs(blockDir, entry, 'dev'),
  ]);
  if (name === null || uuid === null || dev === null) return [];
  const match = /^(\d+):(\d+)$/.exec(dev);
  if (match === null) {
    throw new FailedPreconditionError(
      `${join(blockDir, entry, 'dev')} holds "${dev}", not major:minor`,
    );
  }
  return [{ name, uuid, major: Number(match[1]), minor: Number(match[2]) }];
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

/**
 * Whether the kernel holds block device `device` read-only: its
 * `sys/dev/block/<major>:<minor>/ro` under the host root reads `1`
 * (`blockdev --setro`, a write-protected disk). lvm reports nothing of it
 * and fails its metadata write only after it has deactivated an LV
 * (docs/FACTS.md "Broken groups").
 * @throws FailedPreconditionError when the file cannot be read or holds
 *   neither `0` nor `1` (a device gone proves nothing writable).
 */
export async function blockDeviceReadOnly(
  hostRoot: string | undefined,
  device: DeviceNumber,
): Promise<boolean> {
  const path = join(hostRoot ?? '/', 'sys/dev/block', formatDeviceNumber(device), 'ro');
  const text = await sysfsReads(() => readFile(path, 'utf8')).catch((error: unknown) => {
    throw new FailedPreconditionError(`cannot read ${path}: ${errorMessage(error)}`);
  });
  const flag = text.trim();
  if (flag !== '0' && flag !== '1') {
    throw new FailedPreconditionError(`${path} holds "${flag}", not 0 or 1`);
  }
  return flag === '1';
}
