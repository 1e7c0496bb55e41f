import type { DataDeviceManager } from '../device/data-device.js';
import type { WarnLogger, CommandRunner } from '../exec/runner.js';
import type { FilesystemManager } from '../fs/filesystem.js';
import type { HostLock } from '../lock/host-lock.js';
import type { Lvm } from '../lvm/lvm.js';
import { DEFAULT_NAMING, type Naming } from '../naming.js';
import type { HeaderIo } from './header-io.js';

/**
 * What the volume and snapshot services run on (createNodeServices builds
 * one set for both): the lvm module, a runner for the other tools, the host
 * lock held across every check-then-change sequence (DESIGN.md §2.3), the
 * header I/O, and the parts of the data-device and filesystem managers a
 * service uses (`Maps`, `Filesystems`).
 */
export interface ServiceParts<Maps, Filesystems> {
  readonly lvm: Lvm;
  /** Runs what is not lvm: `blkdiscard`, `fsfreeze`. */
  readonly runner: CommandRunner;
  readonly hostLock: HostLock;
  readonly headers: HeaderIo;
  readonly dataDevices: Maps;
  readonly filesystems: Filesystems;
  /** Default DEFAULT_NAMING. */
  readonly naming?: Naming;
  /** Unix milliseconds (a header's createdAt, `lvstamp.created`); default Date.now. */
  readonly clock?: () => number;
  /** Receives warnings: lvm's stderr of successful commands, leftovers left alone. */
  readonly logger?: WarnLogger;
  /** Where `sys/` and `proc/` are read (a PV's read-only flag, an open LV's holders); default `/`. */
  readonly hostRoot?: string;
}

/** ServiceParts with its defaults filled in (withDefaults). */
export interface ResolvedServiceParts<Maps, Filesystems> extends Required<
  Omit<ServiceParts<Maps, Filesystems>, 'logger' | 'hostRoot'>
> {
  readonly logger: WarnLogger | undefined;
  readonly hostRoot: string | undefined;
}

/** `parts` with DEFAULT_NAMING, Date.now and no logger or host root where not given. */
export function withDefaults<Maps, Filesystems>(
  parts: ServiceParts<Maps, Filesystems>,
): ResolvedServiceParts<Maps, Filesystems> {
  return {
    lvm: parts.lvm,
    runner: parts.runner,
    hostLock: parts.hostLock,
    headers: parts.headers,
    dataDevices: parts.dataDevices,
    filesystems: parts.filesystems,
    naming: parts.naming ?? DEFAULT_NAMING,
    clock: parts.clock ?? Date.now,
    logger: parts.logger,
    hostRoot: parts.hostRoot,
  };
}

/** The data-device operations the volume operations use. */
export type VolumeMaps = Pick<
  DataDeviceManager,
  'list' | 'find' | 'create' | 'reload' | 'remove' | 'pathFor' | 'targetOf'
>;

/** The filesystem operations the volume operations use. */
export type VolumeFilesystems = Pick<FilesystemManager, 'mounts' | 'grow'>;

/** What every volume operation (create.ts, attach.ts, …) runs on: the parts and two settings. */
export interface VolumeParts extends ResolvedServiceParts<VolumeMaps, VolumeFilesystems> {
  /** Deadline of a wipe (`blkdiscard`) in milliseconds. */
  readonly wipeTimeoutMs: number;
}

/** The parts a look-up needs, whatever data-device and filesystem parts the caller has. */
export type CoreParts = ResolvedServiceParts<unknown, unknown>;

/** What snapshots and copies run on (SnapshotServiceOptions with defaults). */
export type SnapshotParts = ResolvedServiceParts<
  Pick<DataDeviceManager, 'find' | 'list'>,
  Pick<FilesystemManager, 'mounts'>
>;

/** What the quarantine runs on (QuarantineServiceOptions with defaults). */
export type QuarantineParts = CoreParts;
