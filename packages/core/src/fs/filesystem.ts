import { statfs } from 'node:fs/promises';
import {
  AlreadyExistsError,
  CommandFailedError,
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
} from '../errors.js';
import type { CommandRunner } from '../exec/runner.js';
import { requireBlockDeviceNumber, formatDeviceNumber, sameDevice } from '../os/devnum.js';
import { errorCode, errorMessage } from '../os/errno.js';
import { deviceUsersText } from '../os/holders.js';
import type { DeviceNumber } from '../os/devnum.js';
import { DEFAULT_MOUNTINFO_PATH, mountsAt, readMountInfo } from '../os/mountinfo.js';
import {
  type ChangeResult,
  type FsType,
  type FsUsage,
  type MountInfoEntry,
  type MountOptions,
  type ProbeResult,
} from './types.js';
import {
  assertReadable,
  bindMismatch,
  bindSourceOf,
  mismatch,
  resolveMountPoint,
} from './mount-checks.js';
import { mkfsArgv, parseBlkidExport, requireFsType, usageFromStatfs } from './tools.js';

/** Deadline of mkfs, resize2fs and xfs_growfs, in milliseconds: 10 minutes. */
export const DEFAULT_FS_COMMAND_TIMEOUT_MS = 600_000;

/**
 * Mount option of every xfs mount. XFS refuses to mount a second filesystem
 * with the UUID of one already mounted (xfs(5) `nouuid`), and two copies of
 * one filesystem meet on a node whenever a volume was copied (a restored
 * backup, a clone, a `dd` of a volume): without it the second copy can never
 * be staged. The kernel still keeps one device from being mounted twice as
 * two filesystems, so the check only ever refused copies. ext4 mounts
 * duplicate UUIDs as it is. docs/node-service.md "Copies of a filesystem".
 */
export const XFS_NOUUID = 'nouuid';

export interface FilesystemManagerOptions {
  readonly runner: CommandRunner;
  /** The mount table to read; default `/proc/self/mountinfo`. Tests give a fixture file. */
  readonly mountinfoPath?: string;
  /**
   * The device number of a block device node; throws NotFoundError when the
   * path does not exist and FailedPreconditionError when it is no block
   * device. Default: `requireBlockDeviceNumber` (stat(2)). Injected by tests.
   */
  readonly deviceNumberOf?: (path: string) => Promise<DeviceNumber>;
  /** Deadline of mkfs and grow commands in milliseconds; default 600 000. */
  readonly longCommandTimeoutMs?: number;
  /** Where `sys/` and `proc/` are read to name what keeps a busy mount's device; default `/`. */
  readonly hostRoot?: string;
}

/**
 * Probe, format, mount, unmount, grow and statfs for data devices, after
 * kubernetes/mount-utils: format only what `blkid -p` calls
 * empty *and* what can be read; decide "mounted" from mountinfo, never from
 * device numbers of paths; every operation idempotent.
 *
 * External commands go through the injected runner; failures throw
 * CommandFailedError / CommandTimeoutError from it.
 */
export class FilesystemManager {
  readonly #runner: CommandRunner;
  readonly #mountinfoPath: string;
  readonly #deviceNumberOf: (path: string) => Promise<DeviceNumber>;
  readonly #longTimeoutMs: number;
  readonly #hostRoot: string | undefined;

  constructor(options: FilesystemManagerOptions) {
    this.#hostRoot = options.hostRoot;
    this.#runner = options.runner;
    this.#mountinfoPath = options.mountinfoPath ?? DEFAULT_MOUNTINFO_PATH;
    this.#deviceNumberOf = options.deviceNumberOf ?? requireBlockDeviceNumber;
    this.#longTimeoutMs = options.longCommandTimeoutMs ?? DEFAULT_FS_COMMAND_TIMEOUT_MS;
  }

  /**
   * What is on `device`, from `blkid -p -o export <device>` (low-level
   * superblock probing, no cache). blkid exits 2 both for "nothing found"
   * and for a missing or unreadable device (docs/FACTS.md), so exit 2 is
   * `blank` only after the first 4 KiB of the device were read in-process.
   * @returns `filesystem` (USAGE=filesystem), `partition-table` (PTTYPE
   *   only), `other` (swap, LVM PV, RAID, crypto, ...), or `blank`.
   * @throws NotFoundError when blkid found nothing and the device does not exist.
   * @throws FailedPreconditionError when blkid found nothing and the device cannot be read.
   * @throws UnparseableOutputError when blkid exits 0 without TYPE or PTTYPE.
   * @param options.offsetBytes probe from this byte of `device` on (blkid(8)
   *   `--offset`, low-level probing only), e.g. the data area of a volume
   *   behind its header; the read check reads there too. Default 0.
   */
  async probe(
    device: string,
    options: { readonly offsetBytes?: number } = {},
  ): Promise<ProbeResult> {
    const offset = options.offsetBytes ?? 0;
    const at = offset > 0 ? ['--offset', String(offset)] : [];
    const result = await this.#runner.run(['blkid', '-p', ...at, '-o', 'export', device], {
      allowExitCodes: [2],
    });
    if (result.exitCode === 2) {
      await assertReadable(device, offset);
      return { kind: 'blank' };
    }
    return parseBlkidExport(result);
  }

  /**
   * Makes `fsType` on `device` unless it is already there: probes first;
   * blank → `mkfs.ext4 -F -q -E nodiscard <device>` or `mkfs.xfs -q -K
   * <device>` (no discard: the LV's blocks were handled by the wipe policy);
   * the same filesystem → nothing to do.
   * @returns `{ changed: true }` when it formatted, false when the filesystem was there.
   * @throws InvalidArgumentError for an unsupported fsType.
   * @throws FailedPreconditionError for another filesystem, a partition table
   *   or another signature (never overwritten), or an unreadable device.
   * @throws NotFoundError when the device does not exist.
   */
  async format(device: string, fsType: FsType): Promise<ChangeResult> {
    requireFsType(fsType);
    const found = await this.probe(device);
    switch (found.kind) {
      case 'blank':
        await this.#runner.run(mkfsArgv(device, fsType), { timeoutMs: this.#longTimeoutMs });
        return { changed: true };
      case 'filesystem':
        if (found.type === fsType) return { changed: false };
        throw new FailedPreconditionError(
          `${device} already holds a ${found.type} filesystem, not ${fsType}; refusing to format it`,
        );
      case 'partition-table':
        throw new FailedPreconditionError(
          `${device} holds a ${found.type} partition table; refusing to format it`,
        );
      case 'other':
        throw new FailedPreconditionError(
          `${device} holds a ${found.type} signature; refusing to format it`,
        );
    }
  }

  /**
   * Mounts the filesystem on `device` at `target` (`mount -t <fsType> [-o
   * ro,<options>] <device> <target>`; xfs always with `nouuid`, see
   * XFS_NOUUID), idempotently: when mountinfo shows
   * the same device (major:minor of the entry against the device node's
   * rdev), root `/`, type and read-only flag on top of `target`, nothing
   * happens. Mountinfo is read again afterwards to confirm the mount.
   * @param target an existing directory, absolute path.
   * @returns `{ changed: false }` when it was already mounted so.
   * @throws InvalidArgumentError for a relative target, an unsupported type or an empty option.
   * @throws NotFoundError when the device or the target does not exist.
   * @throws FailedPreconditionError when something else (another device, a
   *   subtree, another type or access mode) is mounted there, the target is a
   *   corrupted mount, or the mount does not show up afterwards.
   */
  async mount(device: string, target: string, options: MountOptions): Promise<ChangeResult> {
    requireFsType(options.fsType);
    const readonly = options.readonly ?? false;
    const extra = options.options ?? [];
    for (const option of extra) {
      if (option === '' || option.includes(',') || option.includes(' ')) {
        throw new InvalidArgumentError(
          `mount option "${option}" must be one non-empty word without commas`,
        );
      }
    }
    const dev = await this.#deviceNumberOf(device);
    const place = await resolveMountPoint(target);
    if (place.state === 'missing')
      throw new NotFoundError(`mount point ${place.path} does not exist`);
    const top = mountsAt(await this.mounts(), place.path).at(-1);
    if (top !== undefined) {
      const problem = mismatch(top, dev, options.fsType, readonly);
      if (problem === null) return { changed: false };
      throw new FailedPreconditionError(`${place.path} is already a mount point: ${problem}`);
    }
    if (place.state === 'corrupted') {
      throw new FailedPreconditionError(
        `${place.path} is a corrupted mount (${place.code}); unmount it first`,
      );
    }
    const flags = [
      ...(readonly ? ['ro'] : []),
      ...extra,
      ...(options.fsType === 'xfs' && !extra.includes(XFS_NOUUID) ? [XFS_NOUUID] : []),
    ];
    await this.#runner.run([
      'mount',
      '-t',
      options.fsType,
      ...(flags.length > 0 ? ['-o', flags.join(',')] : []),
      device,
      place.path,
    ]);
    const after = mountsAt(await this.mounts(), place.path).at(-1);
    const problem =
      after === undefined
        ? 'nothing is mounted there'
        : mismatch(after, dev, options.fsType, readonly);
    if (problem !== null) {
      throw new FailedPreconditionError(
        `mount ${device} at ${place.path} did not take: ${problem}`,
      );
    }
    return { changed: true };
  }

  /**
   * Unmounts `target` (`umount <target>`), idempotently: a path that does not
   * exist or is not a mount point (by mountinfo) is success. A corrupted mount
   * (stat fails with ENOTCONN, ESTALE, EIO or EHOSTDOWN) counts as mounted.
   * Mountinfo is read again afterwards (kubernetes/mount-utils: check,
   * unmount, check again). The directory itself is left in place.
   * @returns `{ changed: false }` when nothing was mounted there.
   * @throws InvalidArgumentError for a relative path.
   * @throws FailedPreconditionError when a mount is still there afterwards
   *   (for example stacked mounts).
   * @throws CommandFailedError when umount fails; for "target is busy" the
   *   message also names the mounted device's holders and its other mounts
   *   (`findDeviceUsers`).
   */
  async unmount(target: string): Promise<ChangeResult> {
    const place = await resolveMountPoint(target);
    if (place.state === 'missing') return { changed: false };
    const here = mountsAt(await this.mounts(), place.path);
    if (here.length === 0 && place.state !== 'corrupted') return { changed: false };
    try {
      await this.#runner.run(['umount', place.path]);
    } catch (error) {
      const top = here.at(-1);
      if (!(error instanceof CommandFailedError) || !/busy/i.test(error.stderr) || !top) {
        throw error;
      }
      const dev = { major: top.major, minor: top.minor };
      const users = await deviceUsersText(dev, { hostRoot: this.#hostRoot });
      throw new CommandFailedError(
        error,
        `${error.message}; ${formatDeviceNumber(dev)} mounted there: ${users}`,
        { cause: error },
      );
    }
    const left = mountsAt(await this.mounts(), place.path);
    if (left.length > 0) {
      throw new FailedPreconditionError(
        `${place.path} is still a mount point after umount (${left.length} mount${left.length === 1 ? '' : 's'} left)`,
      );
    }
    return { changed: true };
  }

  /**
   * Bind-mounts `source` on `target` (`mount --bind [-o ro] <source>
   * <target>`; util-linux applies `ro` with a second, remounting step), for
   * CSI NodePublishVolume: a staging directory onto a target directory, or
   * a data device node onto a target file (raw block). Idempotent: when
   * mountinfo shows on top of `target` a mount of the same filesystem
   * (major:minor) and the same subtree (root) as `source`, with the same
   * read-only flag, nothing happens. What `source` is comes from mountinfo
   * too: the mount holding it (longest mount point prefix, top-most) and the
   * path below that mount's root. Mountinfo is read again afterwards.
   * @param source an existing file or directory, absolute path.
   * @param target an existing file or directory, absolute path.
   * @returns `{ changed: false }` when the same bind mount was there.
   * @throws InvalidArgumentError for a relative path.
   * @throws NotFoundError when source or target does not exist.
   * @throws AlreadyExistsError when something else, or the same source with
   *   another read-only flag, is mounted on the target (CSI spec
   *   NodePublishVolume: ALREADY_EXISTS).
   * @throws FailedPreconditionError when source or target is a corrupted
   *   mount, or the bind mount does not show up afterwards.
   */
  async bindMount(
    source: string,
    target: string,
    options: { readonly readonly?: boolean } = {},
  ): Promise<ChangeResult> {
    const readonly = options.readonly ?? false;
    const from = await resolveMountPoint(source);
    if (from.state === 'missing')
      throw new NotFoundError(`bind source ${from.path} does not exist`);
    if (from.state === 'corrupted') {
      throw new FailedPreconditionError(
        `bind source ${from.path} is a corrupted mount (${from.code})`,
      );
    }
    const place = await resolveMountPoint(target);
    if (place.state === 'missing')
      throw new NotFoundError(`bind target ${place.path} does not exist`);
    const wanted = bindSourceOf(await this.mounts(), from.path);
    const top = mountsAt(await this.mounts(), place.path).at(-1);
    if (top !== undefined) {
      const problem = bindMismatch(top, wanted, readonly);
      if (problem === null) return { changed: false };
      throw new AlreadyExistsError(`${place.path} is already a mount point: ${problem}`);
    }
    if (place.state === 'corrupted') {
      throw new FailedPreconditionError(
        `${place.path} is a corrupted mount (${place.code}); unmount it first`,
      );
    }
    await this.#runner.run([
      'mount',
      '--bind',
      ...(readonly ? ['-o', 'ro'] : []),
      from.path,
      place.path,
    ]);
    const after = mountsAt(await this.mounts(), place.path).at(-1);
    const problem =
      after === undefined ? 'nothing is mounted there' : bindMismatch(after, wanted, readonly);
    if (problem !== null) {
      throw new FailedPreconditionError(
        `bind mount of ${from.path} at ${place.path} did not take: ${problem}`,
      );
    }
    return { changed: true };
  }

  /**
   * Grows the filesystem mounted at `mountPath` to fill its device, online
   * (DESIGN.md §4: after lvextend and the map reload): ext4 → `resize2fs
   * <device>` with the device taken from mountinfo and checked by
   * major:minor; xfs → `xfs_growfs -d <mountPath>` (-d: grow the data
   * section to the device size, xfs_growfs(8)).
   * @throws InvalidArgumentError for a relative path or an unsupported type.
   * @throws NotFoundError when the path does not exist.
   * @throws FailedPreconditionError when nothing or another type is mounted
   *   there, or the mount's source no longer names its device.
   */
  async grow(mountPath: string, fsType: FsType): Promise<void> {
    requireFsType(fsType);
    const place = await resolveMountPoint(mountPath);
    if (place.state === 'missing')
      throw new NotFoundError(`mount point ${place.path} does not exist`);
    if (place.state === 'corrupted') {
      throw new FailedPreconditionError(`${place.path} is a corrupted mount (${place.code})`);
    }
    const top = mountsAt(await this.mounts(), place.path).at(-1);
    if (top === undefined) throw new FailedPreconditionError(`nothing is mounted at ${place.path}`);
    if (top.fsType !== fsType) {
      throw new FailedPreconditionError(`${place.path} holds ${top.fsType}, not ${fsType}`);
    }
    if (fsType === 'xfs') {
      await this.#runner.run(['xfs_growfs', '-d', place.path], { timeoutMs: this.#longTimeoutMs });
      return;
    }
    const dev = await this.#deviceNumberOf(top.source);
    if (!sameDevice(dev, top)) {
      throw new FailedPreconditionError(
        `${top.source} is device ${formatDeviceNumber(dev)}, but ${place.path} is mounted from ${formatDeviceNumber(top)}`,
      );
    }
    await this.#runner.run(['resize2fs', top.source], { timeoutMs: this.#longTimeoutMs });
  }

  /**
   * Space and inodes of the filesystem holding `path`, from statfs(2)
   * (CSI NodeGetVolumeStats). Sizes in bytes.
   * @throws NotFoundError when the path does not exist.
   * @throws FailedPreconditionError when statfs fails otherwise (a corrupted mount).
   */
  async usage(path: string): Promise<FsUsage> {
    let st;
    try {
      st = await statfs(path);
    } catch (error) {
      if (errorCode(error) === 'ENOENT')
        throw new NotFoundError(`${path} does not exist`, { cause: error });
      throw new FailedPreconditionError(`cannot statfs ${path}: ${errorMessage(error)}`, {
        cause: error,
      });
    }
    return usageFromStatfs(st);
  }

  /**
   * The current mount table (mountinfo of this process).
   * @throws FailedPreconditionError / UnparseableOutputError as readMountInfo.
   */
  async mounts(): Promise<MountInfoEntry[]> {
    return readMountInfo(this.#mountinfoPath);
  }
}
