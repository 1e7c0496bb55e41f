import { readFile } from 'node:fs/promises';
import { FailedPreconditionError, UnparseableOutputError } from '../errors.js';
import { errorMessage } from './errno.js';

/**
 * One line of /proc/<pid>/mountinfo (proc(5), "/proc/pid/mountinfo"), with
 * the octal escapes (`\040` space, `\011` tab, `\012` newline, `\134`
 * backslash) decoded.
 */
export interface MountInfoEntry {
  /** (1) Unique ID of the mount. */
  readonly mountId: number;
  /** (2) ID of the parent mount (itself for the root of the tree). */
  readonly parentId: number;
  /** (3) st_dev of files on this filesystem: the block device for a disk filesystem. */
  readonly major: number;
  readonly minor: number;
  /** (4) Pathname of the directory in the filesystem that forms this mount's root (`/` unless a bind mount of a subtree). */
  readonly root: string;
  /** (5) Mount point, relative to the process's root. */
  readonly mountPoint: string;
  /** (6) Per-mount options, e.g. `rw`, `relatime`. */
  readonly mountOptions: readonly string[];
  /** (7) Optional fields such as `shared:1`, `master:7` (may be empty). */
  readonly optionalFields: readonly string[];
  /** (9) Filesystem type, e.g. `ext4`, `fuse.sshfs`. */
  readonly fsType: string;
  /** (10) Mount source, e.g. `/dev/mapper/lvstamp-…`, or `none`. */
  readonly source: string;
  /** (11) Per-superblock options. */
  readonly superOptions: readonly string[];
}

/** The mount table of the calling process (proc(5)). */
export const DEFAULT_MOUNTINFO_PATH = '/proc/self/mountinfo';

const INTEGER = /^\d+$/;
const DEVICE = /^(\d+):(\d+)$/;

/**
 * Parses the text of /proc/<pid>/mountinfo (proc(5)):
 *
 * `36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw,errors=continue`
 *
 * mount ID, parent ID, major:minor, root, mount point, mount options, zero
 * or more optional fields ended by `-`, filesystem type, source, super
 * options. Fields are separated by single spaces; the kernel writes space,
 * tab, newline and backslash in paths as `\ooo` octal escapes, which are
 * decoded (bytes are then read as UTF-8). Entries keep the file's order, so
 * of several mounts stacked on one mount point the last is on top.
 *
 * @param text the file's bytes, or its text.
 * @param source where the text came from, for error messages.
 * @throws UnparseableOutputError for any line that does not have this shape
 *   (never skipped: a mount table read wrongly could hide a mount).
 */
export function parseMountInfo(
  text: string | Uint8Array,
  source: string = DEFAULT_MOUNTINFO_PATH,
): MountInfoEntry[] {
  // Work on latin1 (one char per byte) until the escapes are decoded, so that
  // paths that are not valid UTF-8 survive byte for byte.
  const bytes = typeof text === 'string' ? Buffer.from(text, 'utf8') : Buffer.from(text);
  const bytesAsText = bytes.toString('latin1');
  return bytesAsText
    .split('\n')
    .filter((line) => line !== '')
    .map((line, index) => parseLine(line, index + 1, source));
}

/**
 * Reads and parses a mountinfo file.
 * @throws FailedPreconditionError when the file cannot be read.
 * @throws UnparseableOutputError as parseMountInfo.
 */
export async function readMountInfo(
  path: string = DEFAULT_MOUNTINFO_PATH,
): Promise<MountInfoEntry[]> {
  let text: Buffer;
  try {
    text = await readFile(path);
  } catch (error) {
    throw new FailedPreconditionError(
      `cannot read the mount table ${path}: ${errorMessage(error)}`,
      {
        cause: error,
      },
    );
  }
  return parseMountInfo(text, path);
}

/**
 * The entries mounted exactly at `mountPoint` (an absolute path as the
 * kernel shows it), bottom first: the last one is the visible mount.
 */
export function mountsAt(entries: readonly MountInfoEntry[], mountPoint: string): MountInfoEntry[] {
  return entries.filter((entry) => entry.mountPoint === mountPoint);
}

/** True when the per-mount options say read-only (`ro`). */
export function isReadonlyMount(entry: MountInfoEntry): boolean {
  return entry.mountOptions.includes('ro');
}

function parseLine(line: string, lineNumber: number, source: string): MountInfoEntry {
  const fail = (detail: string): never => {
    const text = Buffer.from(line, 'latin1').toString('utf8');
    throw new UnparseableOutputError(
      { argv: [source], exitCode: 0, stdout: text, stderr: '' },
      `line ${lineNumber}: ${detail}: ${JSON.stringify(text)}`,
    );
  };
  const fields = line.split(' ');
  const separator = fields.indexOf('-', 6);
  if (separator === -1) return fail('no "-" separator after the sixth field');
  const [mountId, parentId, device, root, mountPoint, mountOptions] = fields;
  const tail = fields.slice(separator + 1);
  const [fsType, mountSource, superOptions] = tail;
  if (
    mountId === undefined ||
    parentId === undefined ||
    device === undefined ||
    root === undefined ||
    mountPoint === undefined ||
    mountOptions === undefined ||
    fsType === undefined ||
    mountSource === undefined ||
    superOptions === undefined ||
    tail.length !== 3
  ) {
    return fail('expected 3 fields after "-"');
  }
  if (!INTEGER.test(mountId) || !INTEGER.test(parentId)) return fail('mount IDs are not integers');
  const dev = DEVICE.exec(device);
  if (dev === null) return fail(`"${device}" is not major:minor`);
  if (root === '' || mountPoint === '' || fsType === '')
    return fail('empty root, mount point or type');
  return {
    mountId: Number(mountId),
    parentId: Number(parentId),
    major: Number(dev[1]),
    minor: Number(dev[2]),
    root: unescape(root),
    mountPoint: unescape(mountPoint),
    mountOptions: unescape(mountOptions).split(','),
    optionalFields: fields.slice(6, separator).map(unescape),
    fsType: unescape(fsType),
    source: unescape(mountSource),
    superOptions: unescape(superOptions).split(','),
  };
}

/** Decodes `\ooo` escapes of a latin1-read field and reads the bytes as UTF-8. */
function unescape(field: string): string {
  const decoded = field.replace(/\\([0-7]{3})/g, (_match, octal: string) =>
    String.fromCharCode(parseInt(octal, 8) & 0xff),
  );
  return Buffer.from(decoded, 'latin1').toString('utf8');
}
