import { stat } from 'node:fs/promises';
import type { DataDeviceManager } from '../device/data-device.js';
import type { DataDevice, DataDeviceMap } from '../device/types.js';
import { FailedPreconditionError, InvalidArgumentError, NotFoundError } from '../errors.js';
import type { FilesystemManager } from '../fs/filesystem.js';
import { FS_TYPES, type FsType, type MountInfoEntry } from '../fs/types.js';
import { describeDecode } from '../header/codec.js';
import type { DecodeResult, HeaderFields } from '../header/types.js';
import { capacityOf } from './size.js';
import type { HeaderIo } from '../lvm/header-io.js';
import type { CreateVolumeRequest, DeleteVolumeOptions, LvmManager } from '../lvm/manager.js';
import type { VgScope, Volume, VolumeScope } from '../lvm/types.js';
import { KeyedMutex } from '../lock/keyed-mutex.js';
import { DEFAULT_NAMING, isHexId, parseOwnerId, volumeIdForName, type Naming } from '../naming.js';

/** What sector 0 of a volume's LV says, or why it could not be read. */
export type HeaderReading =
  DecodeResult | { readonly status: 'unreadable'; readonly reason: string };

/** A volume with everything a person or a CO asks about it. */
export interface VolumeStatus {
  readonly volume: Volume;
  readonly header: HeaderReading;
  /** The volume name from a valid header whose ID matches; null otherwise. */
  readonly name: string | null;
  /** The data device when attached. */
  readonly dataDevice: (DataDevice & { readonly openCount: number }) | null;
  /** Mount points of the data device (from mountinfo, by major:minor). */
  readonly mountPoints: readonly string[];
}

/** Options of VolumeService. */
export interface VolumeServiceOptions {
  readonly lvm: LvmManager;
  readonly dataDevices: DataDeviceManager;
  readonly headers: HeaderIo;
  readonly filesystems: FilesystemManager;
  readonly naming?: Naming;
}

/**
 * The volume life cycle that every entrypoint shares (DESIGN.md §4, §5):
 * create, attach (data device), detach, expand (LV, map, mounted
 * filesystem), delete (map, then LV). No cache: each call asks lvm,
 * device-mapper and mountinfo. Operations on one volume are serialised
 * inside the process; the LVM manager takes the host lock.
 */
export class VolumeService {
  readonly #lvm: LvmManager;
  readonly #maps: DataDeviceManager;
  readonly #headers: HeaderIo;
  readonly #fs: FilesystemManager;
  readonly #naming: Naming;
  readonly #locks = new KeyedMutex();

  constructor(options: VolumeServiceOptions) {
    this.#lvm = options.lvm;
    this.#maps = options.dataDevices;
    this.#headers = options.headers;
    this.#fs = options.filesystems;
    this.#naming = options.naming ?? DEFAULT_NAMING;
  }

  /**
   * Turns what a person typed into a volume ID: a volume name (its ID is
   * derived, DESIGN.md §3), or the ID of an existing volume (32 hex digits).
   * A ref that is both an existing volume's ID and the name of another
   * existing volume is refused rather than guessed (a delete must never hit
   * the wrong volume). Looks in the scope's volume groups only.
   * @throws InvalidArgumentError when it is neither a valid ID nor a valid
   *   name, or when it is ambiguous.
   */
  async resolve(ref: string, scope: VgScope): Promise<string> {
    const byName = volumeIdForName(ref);
    if (!isHexId(ref) || ref === byName) return byName;
    const [asId, asName] = await Promise.all([
      this.#lvm.findVolume(ref, scope),
      this.#lvm.findVolume(byName, scope),
    ]);
    if (asId !== null && asName !== null) {
      throw new InvalidArgumentError(
        `"${ref}" is both the ID of a volume and the name of volume ${byName}; refusing to guess: use the ID you mean`,
      );
    }
    return asId !== null ? ref : byName;
  }

  /**
   * The volume group new volumes go to when none is named: the one volume
   * group tagged `lvstamp` (as `VolumeGroupAdmin` creates them).
   * @throws FailedPreconditionError when there is none, InvalidArgumentError
   *   when there are several (name one).
   */
  async defaultVolumeGroup(): Promise<string> {
    const tagged = (await this.#lvm.listVolumeGroups()).filter((g) =>
      g.tags.includes(this.#naming.tag),
    );
    const [only, ...more] = tagged;
    if (only === undefined) {
      throw new FailedPreconditionError(
        `no volume group is tagged "${this.#naming.tag}"; create one with "lvstamp vg create" or name one with --vg`,
      );
    }
    if (more.length > 0) {
      throw new InvalidArgumentError(
        `several volume groups are tagged "${this.#naming.tag}" (${tagged.map((g) => g.name).join(', ')}); name one with --vg`,
      );
    }
    return only.name;
  }

  /**
   * The volume groups to look in when the operator names none (DESIGN.md
   * §2.3): those tagged `lvstamp` or holding lvstamp-tagged LVs.
   */
  async discoverVolumeGroups(): Promise<string[]> {
    return this.#lvm.discoverVolumeGroups();
  }

  /**
   * Every lvstamp volume in the scope's volume groups with its header, data
   * device and mount points: one `vgs` and one `lvs`, one `dmsetup info`,
   * one mountinfo read, and one sector-0 read per active volume.
   */
  async list(scope: VgScope): Promise<VolumeStatus[]> {
    const volumes = await this.#lvm.listVolumes(scope);
    const [maps, mounts] = await Promise.all([this.#maps.list(), this.#fs.mounts()]);
    return Promise.all(volumes.map((v) => this.#status(v, maps, mounts)));
  }

  /**
   * One volume's status.
   * @throws NotFoundError when no finished volume in the scope has this ID.
   */
  async status(volumeId: string, scope: VgScope): Promise<VolumeStatus> {
    const volume = await this.#lvm.getVolume(volumeId, scope);
    const [maps, mounts] = await Promise.all([this.#maps.list(), this.#fs.mounts()]);
    return this.#status(volume, maps, mounts);
  }

  /**
   * Creates a volume (DESIGN.md §5 protocol, in LvmManager.createVolume):
   * idempotent for the same name and a compatible size.
   * @throws InvalidArgumentError, NotFoundError (VG), AlreadyExistsError,
   *   OutOfSpaceError, CommandFailedError, LockTimeoutError.
   */
  async create(request: CreateVolumeRequest): Promise<VolumeStatus> {
    const volume = await this.#lvm.createVolume(request);
    return this.status(volume.volumeId, {
      vgNames: [request.vgName, ...(request.otherVgNames ?? [])],
    });
  }

  /**
   * Creates (or keeps) the data device: the linear map over the data area
   * behind the header. Both ownership signals are checked first: the LV
   * name and a valid header whose ID matches it (DESIGN.md §2.3). An
   * inactive LV is activated first when its tags carry the scope's owner
   * (LvmManager.activateVolume).
   * @returns the `/dev/mapper` node and its device number.
   * @throws NotFoundError, NotOwnedError (inactive LV without the tags),
   *   FailedPreconditionError (header not ok or not matching),
   *   CommandFailedError.
   */
  async attach(volumeId: string, scope: VolumeScope): Promise<DataDevice> {
    return this.#locks.run(volumeId, async () => {
      const volume = await this.#lvm.activateVolume(volumeId, scope);
      const { header, capacityBytes } = await this.#verifiedHeader(volume);
      return this.#maps.create(volumeId, volume, header.dataOffsetBytes, capacityBytes);
    });
  }

  /**
   * Removes the data device; the data stays on the LV. Not attached is
   * success (`removed: false`).
   * @throws FailedPreconditionError when it is mounted or open.
   */
  async detach(volumeId: string): Promise<{ removed: boolean }> {
    return this.#locks.run(volumeId, async () => {
      const map = (await this.#maps.list()).find((m) => m.volumeId === volumeId);
      if (map === undefined) return { removed: false };
      await this.#refuseIfMounted(map);
      await this.#maps.remove(volumeId);
      return { removed: true };
    });
  }

  /**
   * Grows a volume to at least `requiredBytes` of capacity, online:
   * `lvextend` and the header's new capacity (LvmManager.expandVolume, which
   * proves ownership first), then the data device's table is reloaded to
   * the capacity, then a filesystem mounted from it is grown (resize2fs /
   * xfs_growfs). Never shrinks; every step converges when repeated.
   * @returns the new status and the mount point whose filesystem was grown.
   * @throws InvalidArgumentError, NotFoundError, OutOfSpaceError,
   *   NotOwnedError, FailedPreconditionError, CommandFailedError.
   */
  async expand(
    volumeId: string,
    requiredBytes: number,
    scope: VolumeScope,
    options: { readonly limitBytes?: number } = {},
  ): Promise<{ status: VolumeStatus; filesystemGrown: string | null }> {
    return this.#locks.run(volumeId, async () => {
      const grown = await this.#lvm.expandVolume(volumeId, requiredBytes, scope, options);
      const map = (await this.#maps.list()).find((m) => m.volumeId === volumeId);
      let filesystemGrown: string | null = null;
      if (map !== undefined) {
        const { header, capacityBytes } = await this.#verifiedHeader(grown);
        await this.#maps.reload(volumeId, grown, header.dataOffsetBytes, capacityBytes);
        const mount = (await this.#fs.mounts()).find(
          (m) => m.major === map.major && m.minor === map.minor,
        );
        if (mount !== undefined) {
          if (!isFsType(mount.fsType)) {
            throw new FailedPreconditionError(
              `the data device is mounted on ${mount.mountPoint} with ${mount.fsType}; lvstamp grows only ${FS_TYPES.join(' and ')}`,
            );
          }
          await this.#fs.grow(mount.mountPoint, mount.fsType);
          filesystemGrown = mount.mountPoint;
        }
      }
      return { status: await this.status(volumeId, scope), filesystemGrown };
    });
  }

  /**
   * Deletes a volume: its data device (refused while mounted or open), then
   * every LV of its ID in the scope (`lvstamp_<id>` and a leftover
   * `lvstamp_new_<id>`), each proving ownership first, wiping per `wipe`
   * (LvmManager.deleteVolume). A volume already gone is success.
   * @throws NotOwnedError, FailedPreconditionError, CommandFailedError,
   *   LockTimeoutError.
   */
  async delete(
    volumeId: string,
    scope: VolumeScope,
    options: DeleteVolumeOptions = {},
  ): Promise<{ existed: boolean }> {
    if (!isHexId(volumeId))
      throw new InvalidArgumentError(`"${volumeId}" is not a volume ID (32 hex digits)`);
    // A malformed owner ID is refused before the data device is touched.
    parseOwnerId(scope.ownerId);
    return this.#locks.run(volumeId, async () => {
      const map = (await this.#maps.list()).find((m) => m.volumeId === volumeId);
      if (map !== undefined) {
        await this.#refuseIfMounted(map);
        await this.#maps.remove(volumeId);
      }
      const result = await this.#lvm.deleteVolume(volumeId, scope, options);
      return { existed: result.existed || map !== undefined };
    });
  }

  /**
   * Reads sector 0 of a volume's LV, never throwing: an inactive LV or a
   * failed read is `unreadable` with the reason.
   */
  async readHeader(volume: Volume): Promise<HeaderReading> {
    if (!volume.active || volume.dmPath === null)
      return { status: 'unreadable', reason: 'the LV is not active' };
    try {
      return await this.#headers.readHeader(volume.dmPath);
    } catch (error) {
      return {
        status: 'unreadable',
        reason: error instanceof Error ? error.message : String(error),
      };
    }
  }

  /** The header with both ownership signals checked, and the capacity it gives (capacityOf). */
  async #verifiedHeader(volume: Volume): Promise<{ header: HeaderFields; capacityBytes: number }> {
    const where = `${volume.vgName}/${volume.lvName}`;
    if (volume.creating) throw new FailedPreconditionError(`${where} is still being created`);
    const reading = await this.readHeader(volume);
    if (reading.status !== 'ok') {
      throw new FailedPreconditionError(`${where}: header ${reading.status}: ${reading.reason}`);
    }
    if (reading.header.volumeId !== volume.volumeId) {
      throw new FailedPreconditionError(
        `${where}: header belongs to volume ${reading.header.volumeId}, not to ${volume.volumeId}; refusing`,
      );
    }
    const capacityBytes = capacityOf(
      { version: reading.version, ...reading.header },
      volume.sizeBytes,
    );
    if (capacityBytes === null) {
      throw new FailedPreconditionError(
        `${where}: its header's capacity ${reading.header.requestedBytes} does not fit the ${volume.sizeBytes}-byte LV; refusing`,
      );
    }
    return { header: reading.header, capacityBytes };
  }

  async #refuseIfMounted(map: DataDeviceMap): Promise<void> {
    const mounts = (await this.#fs.mounts()).filter(
      (m) => m.major === map.major && m.minor === map.minor,
    );
    if (mounts.length > 0) {
      throw new FailedPreconditionError(
        `${map.name} is mounted on ${mounts.map((m) => m.mountPoint).join(', ')}; unmount it first`,
      );
    }
  }

  async #status(
    volume: Volume,
    maps: readonly DataDeviceMap[],
    mounts: readonly MountInfoEntry[],
  ): Promise<VolumeStatus> {
    const header = await this.readHeader(volume);
    const map = maps.find((m) => m.volumeId === volume.volumeId);
    return {
      volume,
      header,
      name:
        header.status === 'ok' && header.header.volumeId === volume.volumeId
          ? header.header.name
          : null,
      dataDevice:
        map === undefined
          ? null
          : {
              path: this.#maps.pathFor(volume.volumeId),
              major: map.major,
              minor: map.minor,
              openCount: map.openCount,
            },
      mountPoints:
        map === undefined
          ? []
          : mounts
              .filter((m) => m.major === map.major && m.minor === map.minor)
              .map((m) => m.mountPoint),
    };
  }
}

function isFsType(value: string): value is FsType {
  return (FS_TYPES as readonly string[]).includes(value);
}

/** What `inspect` found. */
export interface InspectReport {
  /** What was asked for. */
  readonly target: string;
  /** The device or file whose sector 0 was read. */
  readonly devicePath: string;
  readonly decode: HeaderReading;
  /** In words: what the result means and what lvstamp may do with it (DESIGN.md §4 table). */
  readonly explanation: string;
}

/**
 * Decodes the header of a volume (by name or ID), a block device or an
 * image file, and explains it.
 */
export class InspectService {
  readonly #volumes: VolumeService;
  readonly #lvm: LvmManager;
  readonly #headers: HeaderIo;

  constructor(options: { volumes: VolumeService; lvm: LvmManager; headers: HeaderIo }) {
    this.#volumes = options.volumes;
    this.#lvm = options.lvm;
    this.#headers = options.headers;
  }

  /**
   * @param target a path (anything that exists on the file system, or starts
   *   with `/` or `.`), else a volume ID or name, looked up in the volume
   *   groups `scope` returns (called only for a volume, so that a file needs
   *   no lvm).
   * @throws NotFoundError when it is neither an existing path nor a volume.
   */
  async inspect(target: string, scopeOf: () => Promise<VgScope>): Promise<InspectReport> {
    if (target.startsWith('/') || target.startsWith('.') || (await exists(target))) {
      const decode = await this.#headers.readHeader(target);
      return { target, devicePath: target, decode, explanation: explain(decode, null) };
    }
    const scope = await scopeOf();
    const volumeId = await this.#volumes.resolve(target, scope);
    const volume = await this.#lvm.findVolume(volumeId, scope);
    if (volume === null)
      throw new NotFoundError(`no volume named or with ID "${target}", and no such file`);
    const decode = await this.#volumes.readHeader(volume);
    return {
      target,
      devicePath: volume.dmPath ?? `${volume.vgName}/${volume.lvName}`,
      decode,
      explanation: explain(decode, volume.volumeId),
    };
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

function explain(decode: HeaderReading, expectedId: string | null): string {
  switch (decode.status) {
    case 'ok':
      if (expectedId !== null && decode.header.volumeId !== expectedId) {
        return `a valid lvstamp header, but for volume ${decode.header.volumeId}, not ${expectedId}: the two ownership signals disagree; lvstamp never deletes it automatically`;
      }
      return 'a valid lvstamp v1 header: this device is an lvstamp volume';
    case 'not-stamped':
      return `no lvstamp header (${decode.reason}): not lvstamp's, never touched`;
    case 'unsupported':
      return `an lvstamp header of a newer version (${decode.reason}): lvstamp's, but never modified or deleted by this version`;
    case 'corrupt':
      return `a damaged lvstamp header (${describeDecode(decode)}): reported, never deleted automatically`;
    case 'unreadable':
      return `sector 0 could not be read: ${decode.reason}`;
  }
}
