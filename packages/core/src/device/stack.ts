import { readdir, readFile, realpath, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { parseMountInfo } from '../os/mountinfo.js';
import { DEFAULT_NAMING, type Naming } from '../naming.js';
import { formatDeviceNumber, splitDeviceNumber } from '../os/devnum.js';
import { errorCode, errorMessage } from '../os/errno.js';

/**
 * Where a physical volume's device stack rests (restsOnDataDevice):
 * `nested: false` when no device under it is an lvstamp data device;
 * `nested: true` with the reason (the data device found, or what could not
 * be read) otherwise.
 */
export type PvStack =
  { readonly nested: false } | { readonly nested: true; readonly reason: string };

/** What restsOnDataDevice needs of a stat: `fs.Stats` with bigint numbers fits. */
export interface PathStat {
  isBlockDevice(): boolean;
  isFile(): boolean;
  /** The device number of the node itself (a block device). */
  readonly rdev: bigint;
  /** The device number of the filesystem holding the path. */
  readonly dev: bigint;
}

/** Options of restsOnDataDevice. */
export interface PvStackOptions {
  /** The directory that holds `sys/` and `proc/`; default `/` (tests pass a fake tree). */
  readonly hostRoot?: string | undefined;
  /** Its dm uuid prefix marks a data device; default DEFAULT_NAMING. */
  readonly naming?: Naming | undefined;
  /** Stats the PV path and loop backing files; default `fs.stat` (bigint). */
  readonly stat?: ((path: string) => Promise<PathStat>) | undefined;
}

/** How many devices deep a stack is followed before it counts as nested. */
const MAX_DEPTH = 16;

/** Thrown inside the walk: something could not be read, so the PV counts as nested. */
class Unreadable extends Error {}

/**
 * Whether the device stack under a physical volume rests on an lvstamp data
 * device (a device-mapper device whose dm uuid starts with the naming's
 * `dmUuidPrefix`), so that its volume group is a tenant's, nested inside a
 * volume (DESIGN.md §2.3 "Scope"). Read in-process from sysfs (sysfs-rules
 * in the kernel documentation), no process run and no lvm filter relied
 * on: the PV path's `st_rdev` → `sys/dev/block/<major:minor>`; a partition
 * → its disk; a device-mapper device → its `dm/uuid`, then each of its
 * `slaves/` (as for md and any other stacked device); a loop device → its
 * `loop/backing_file`, stat'ed: a block device → that device, a regular
 * file → the device of the filesystem holding it (`st_dev`; for an
 * anonymous device number, as btrfs, tmpfs and overlay have, the source of
 * its mount, or of the mount holding the path, in mountinfo under the host
 * root when it is a block device, else nothing beneath: overlay layers are
 * not followed). At most 16 devices
 * deep; each device visited once.
 *
 * Never throws: whatever cannot be read (no sysfs, the PV path or a backing
 * file gone, an anonymous device with no mount, a deeper stack) makes the PV count as nested, with the reason: a group is left
 * alone rather than guessed to be the node's.
 * @param pvPath the PV's device path as lvm names it (`pvs -o pv_name`).
 */
export async function restsOnDataDevice(
  pvPath: string,
  options: PvStackOptions = {},
): Promise<PvStack> {
  const root = options.hostRoot ?? '/';
  const prefix = (options.naming ?? DEFAULT_NAMING).dmUuidPrefix;
  const statPath = options.stat ?? ((path: string) => stat(path, { bigint: true }));
  const seen = new Set<string>();

  const read = async (path: string): Promise<string> => {
    try {
      return (await readFile(path, 'utf8')).trim();
    } catch (error) {
      throw new Unreadable(`cannot read ${path}: ${errorMessage(error)}`);
    }
  };
  const exists = async (path: string): Promise<boolean> => {
    try {
      await stat(path);
      return true;
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return false;
      throw new Unreadable(`cannot examine ${path}: ${errorMessage(error)}`);
    }
  };
  const statOf = async (path: string): Promise<PathStat> => {
    try {
      return await statPath(path);
    } catch (error) {
      throw new Unreadable(`cannot stat ${path}: ${errorMessage(error)}`);
    }
  };
  /** The sysfs directory of a device number. */
  const deviceDir = async (dev: bigint): Promise<string> => {
    const link = join(root, 'sys/dev/block', formatDeviceNumber(splitDeviceNumber(dev)));
    try {
      return await realpath(link);
    } catch (error) {
      throw new Unreadable(`cannot resolve ${link}: ${errorMessage(error)}`);
    }
  };

  /**
   * The block device a file's filesystem rests on: its `st_dev`; for an
   * anonymous device number (major 0: btrfs, tmpfs, overlay, nfs) the
   * source of its mount in mountinfo, or when no mount has that number (a
   * layer of an overlay reports its own) of the mount holding the path
   * (the longest mount point above it), when that source is a block device
   * node; null when it is none (tmpfs, overlay: layers are not followed).
   */
  const filesystemDevice = async (file: string, dev: bigint): Promise<bigint | null> => {
    const { major, minor } = splitDeviceNumber(dev);
    if (major !== 0) return dev;
    const path = join(root, 'proc/self/mountinfo');
    let text: Buffer;
    try {
      text = await readFile(path);
    } catch (error) {
      throw new Unreadable(`cannot read ${path}: ${errorMessage(error)}`);
    }
    const mounts = parseMountInfo(text, path);
    const below = (m: { mountPoint: string }): boolean =>
      file.startsWith(m.mountPoint === '/' ? '/' : `${m.mountPoint}/`);
    const mount =
      mounts.find((m) => m.major === 0 && m.minor === minor) ??
      mounts.filter(below).sort((x, y) => y.mountPoint.length - x.mountPoint.length)[0];
    if (mount === undefined)
      throw new Unreadable(`no mount of 0:${minor} or above ${file} in ${path}`);
    if (!mount.source.startsWith('/dev/')) return null;
    const source = await statOf(mount.source);
    if (!source.isBlockDevice()) {
      throw new Unreadable(`${mount.source} (source of ${mount.mountPoint}) is not a block device`);
    }
    return source.rdev;
  };

  /** The data device under `dir` ("<dm name> (<kernel name>)"), or null. */
  const visit = async (dir: string, depth: number): Promise<string | null> => {
    if (seen.has(dir)) return null;
    seen.add(dir);
    if (depth >= MAX_DEPTH) throw new Unreadable(`more than ${MAX_DEPTH} devices deep`);
    if (await exists(join(dir, 'partition'))) return visit(dirname(dir), depth + 1);
    if (await exists(join(dir, 'dm'))) {
      const uuid = await read(join(dir, 'dm/uuid'));
      if (uuid.startsWith(prefix)) {
        return `${await read(join(dir, 'dm/name'))} (${basename(dir)})`;
      }
    }
    if (await exists(join(dir, 'loop'))) {
      const backing = await read(join(dir, 'loop/backing_file'));
      const st = await statOf(backing);
      if (st.isBlockDevice()) return visit(await deviceDir(st.rdev), depth + 1);
      if (st.isFile()) {
        const fsDevice = await filesystemDevice(backing, st.dev);
        return fsDevice === null ? null : visit(await deviceDir(fsDevice), depth + 1);
      }
      throw new Unreadable(
        `${backing} (backing ${basename(dir)}) is neither a block device nor a file`,
      );
    }
    let slaves: string[] = [];
    try {
      slaves = (await readdir(join(dir, 'slaves'))).sort();
    } catch (error) {
      if (errorCode(error) !== 'ENOENT') {
        throw new Unreadable(`cannot list ${join(dir, 'slaves')}: ${errorMessage(error)}`);
      }
    }
    for (const slave of slaves) {
      let slaveDir: string;
      try {
        slaveDir = await realpath(join(dir, 'slaves', slave));
      } catch (error) {
        throw new Unreadable(
          `cannot resolve ${join(dir, 'slaves', slave)}: ${errorMessage(error)}`,
        );
      }
      const found = await visit(slaveDir, depth + 1);
      if (found !== null) return found;
    }
    return null;
  };

  try {
    const st = await statOf(pvPath);
    if (!st.isBlockDevice()) throw new Unreadable(`${pvPath} is not a block device`);
    const found = await visit(await deviceDir(st.rdev), 0);
    return found === null
      ? { nested: false }
      : { nested: true, reason: `${pvPath} rests on lvstamp data device ${found}` };
  } catch (error) {
    // Unreadable, or anything unforeseen: refuse rather than guess.
    return {
      nested: true,
      reason: `the device stack of ${pvPath} cannot be followed (${errorMessage(error)})`,
    };
  }
}
