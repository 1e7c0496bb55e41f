import type { DataDeviceManager } from '../device/data-device.js';
import { formatDeviceNumber } from '../device/devnum.js';
import { deviceUsersText } from '../device/holders.js';
import { restsOnDataDevice, type PvStack } from '../device/stack.js';
import type { DataDevice, DataDeviceMap, DataDeviceRef } from '../device/types.js';
import {
  AlreadyExistsError,
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  OutOfRangeError,
  OutOfSpaceError,
  ThinPoolUnusableError,
} from '../errors.js';
import { runLogged } from '../exec/logged.js';
import type { FilesystemManager } from '../fs/filesystem.js';
import { FS_TYPES, type FsType, type MountInfoEntry } from '../fs/types.js';
import { DATA_OFFSET_BYTES } from '../header/constants.js';
import type { HeaderFields } from '../header/types.js';
import { validateLvUuid } from '../lvm/logical-volumes.js';
import { validateVgName, type GroupsReport } from '../lvm/volume-groups.js';
import type { ThinPoolReport } from '../lvm/types.js';
import type { Provisioning, ThinProvisioning } from '../provisioning.js';
import type {
  CreatedVolume,
  LogicalVolume,
  VgScope,
  Volume,
  VolumeGroup,
  VolumeGroupCapacity,
  VolumeScope,
  WipePolicy,
} from '../lvm/types.js';
import {
  isHexId,
  lvDmName,
  lvNameFor,
  newLvNameFor,
  ownerTagFor,
  parseLvName,
  parseSnapshotLvName,
  parseOwnerId,
  validateVolumeName,
  volumeIdForName,
  type Naming,
} from '../naming.js';
import { readHeaderSafely, type HeaderReading } from './header-reading.js';
import {
  failedHeaderCheck,
  failedTagCheck,
  isActive,
  ownedHeaderOf,
  requireCapacity,
  requireOwnerHeader,
  requireOwnerTags,
} from './ownership.js';
import { withDefaults, type ResolvedServiceParts, type ServiceParts } from './parts.js';
import { resolveRef } from './resolve-ref.js';
import { CAPACITY_BLOCK_BYTES, maximumCapacity, volumeSize } from './size.js';
import { thinAdmits, thinPoolCapacity, type ThinPoolCapacity } from './thin-capacity.js';

/** Default deadline of a wipe (`blkdiscard`), in milliseconds: one hour. */
export const DEFAULT_WIPE_TIMEOUT_MS = 3_600_000;

/** A create request (DESIGN.md §5). Sizes in bytes of capacity (the data area). */
export interface CreateVolumeRequest {
  /** Volume name, 1–128 bytes of UTF-8 (DESIGN.md §3). */
  readonly name: string;
  /** Smallest acceptable capacity in bytes; 0 = not given (then limitBytes is). */
  readonly requiredBytes: number;
  /** Largest acceptable capacity in bytes; ≥ requiredBytes when given. */
  readonly limitBytes?: number;
  /** Smallest capacity the volume's filesystem can be made on, in bytes (FILESYSTEM_MINIMUM_BYTES); default 0. */
  readonly minimumBytes?: number;
  readonly vgName: string;
  /** Further volume groups searched for an existing LV of this volume, so that a create never makes a second copy. */
  readonly otherVgNames?: readonly string[];
  /** 32 hex digits; STANDALONE_OWNER_ID for standalone use. */
  readonly ownerId: string;
  /** Thick (default) or a thin LV in a pool of `vgName` (DESIGN.md §4 "Thin device classes"). */
  readonly provisioning?: Provisioning;
}

/** A thin class's pool: its volume group and settings (for expand's budget check). */
export interface ThinClassPool {
  readonly vgName: string;
  readonly thin: ThinProvisioning;
}

/** Options of delete. */
export interface DeleteVolumeOptions {
  readonly wipe?: WipePolicy;
  /**
   * Skip the ownership checks (lvstamp tag, owner tag, header with matching
   * ID and owner): an operator's explicit override (`--force-unowned`). The
   * scope, the name prefix and the "not open" check still apply.
   */
  readonly forceUnowned?: boolean;
}

/** What delete found and did. */
export interface DeleteVolumeResult {
  /** False when neither an LV nor a data device of this volume ID existed. */
  readonly existed: boolean;
  /** `vg/lv` of every LV removed, in order. */
  readonly removed: readonly string[];
}

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

/** Dependencies and settings of a VolumeService (ServiceParts, and the wipe's). */
export interface VolumeServiceOptions extends ServiceParts<
  Pick<
    DataDeviceManager,
    'list' | 'find' | 'create' | 'reload' | 'remove' | 'pathFor' | 'targetOf'
  >,
  Pick<FilesystemManager, 'mounts' | 'grow'>
> {
  /** Deadline of a wipe in milliseconds; default one hour. */
  readonly wipeTimeoutMs?: number;
  /** Where `sys/` and `proc/` are read to name the holders of an open LV; default `/`. */
  readonly hostRoot?: string;
  /**
   * Whether a physical volume (its path) rests on an lvstamp data device;
   * default restsOnDataDevice under `hostRoot` with the service's naming.
   */
  readonly pvStack?: (pvPath: string) => Promise<PvStack>;
}

/**
 * The volume life cycle of DESIGN.md §5 for every entrypoint: create (and
 * adopt), attach, detach, expand, delete with wipe, status, list, and the
 * GC's remover. Keeps no state: each call asks lvm (through the lvm module),
 * device-mapper and mountinfo. Every destructive act proves ownership right
 * before it, under the host lock (DESIGN.md §2.3). Not serialised per
 * volume: createNodeServices wraps it in withVolumeLocks.
 */
export class VolumeService {
  readonly #p: ResolvedServiceParts<
    VolumeServiceOptions['dataDevices'],
    VolumeServiceOptions['filesystems']
  >;
  readonly #wipeTimeoutMs: number;
  readonly #hostRoot: string | undefined;
  readonly #pvStack: (pvPath: string) => Promise<PvStack>;

  constructor(options: VolumeServiceOptions) {
    this.#p = withDefaults(options);
    this.#wipeTimeoutMs = options.wipeTimeoutMs ?? DEFAULT_WIPE_TIMEOUT_MS;
    this.#hostRoot = options.hostRoot;
    this.#pvStack =
      options.pvStack ??
      ((pvPath) =>
        restsOnDataDevice(pvPath, { hostRoot: options.hostRoot, naming: this.#p.naming }));
  }

  // ---- volume groups --------------------------------------------------------

  /**
   * Every volume group on the host (`vgs`), sizes in bytes.
   * @throws CommandFailedError, CommandTimeoutError, UnparseableOutputError.
   */
  async listVolumeGroups(): Promise<VolumeGroup[]> {
    return this.#p.lvm.volumeGroups.list();
  }

  /**
   * What a thin class's pool can take (DESIGN.md §4 "Thin capacity",
   * thinPoolCapacity): one pool report (`lvs`), plus `vgs` when the pool is
   * absent (the group's free space for a pool still to be created). An
   * inactive pool (usage unknown) is activated alone (`lvchange -ay
   * VG/POOL`, the name being the class's) and measured again. Changes
   * nothing else.
   * @throws NotFoundError when the volume group does not exist;
   *   VolumeGroupUnusableError; CommandFailedError, CommandTimeoutError,
   *   UnparseableOutputError, LockTimeoutError.
   */
  async thinPoolCapacity(vgName: string, thin: ThinProvisioning): Promise<ThinPoolCapacity> {
    validateVgName(vgName);
    const report = await this.#thinPoolReport(vgName, thin);
    return thinPoolCapacity(thin, report);
  }

  async #thinPoolReport(vgName: string, thin: ThinProvisioning): Promise<ThinPoolReport> {
    const pools = this.#p.lvm.thinPools;
    let report = await pools.report(vgName, thin.thinPool);
    const pool = report.pool;
    if (pool !== null && pool.isThinPool && pool.dataHundredths === null) {
      await pools.activate(vgName, thin.thinPool);
      report = await pools.report(vgName, thin.thinPool);
    }
    if (report.vgFreeBytes === null) {
      const vg = await this.#p.lvm.volumeGroups.get(vgName);
      report = { ...report, vgFreeBytes: vg.freeBytes, extentSizeBytes: vg.extentSizeBytes };
    }
    return report;
  }

  /**
   * Free space of a usable volume group (VolumeGroups.get), in bytes, and
   * the largest capacity a new volume can get (maximumCapacity).
   * @throws as VolumeGroups.get.
   */
  async capacity(vgName: string): Promise<VolumeGroupCapacity> {
    const vg = await this.#p.lvm.volumeGroups.get(vgName);
    return {
      vgName: vg.name,
      totalBytes: vg.sizeBytes,
      freeBytes: vg.freeBytes,
      maximumVolumeBytes: maximumCapacity(vg),
    };
  }

  /**
   * The volume groups the CLI and the GC job look in when none is named
   * (DESIGN.md §2.3): those tagged `lvstamp` and those holding an LV tagged
   * `lvstamp` with the lvstamp name prefix, sorted, each once; minus every
   * group with a physical volume whose device stack rests on an lvstamp
   * data device, or cannot be followed (nestedVolumeGroups), each left out
   * with a warning naming it and why. One `vgs`, one `lvs` and one `pvs`
   * over every group, at once, then sysfs.
   * @throws CommandFailedError, CommandTimeoutError, UnparseableOutputError.
   */
  async discoverVolumeGroups(): Promise<string[]> {
    const [vgs, lvs, nested] = await Promise.all([
      this.#p.lvm.volumeGroups.list(),
      this.#p.lvm.logicalVolumes.everywhere({ prefix: commonPrefix(this.#p.naming) }),
      this.nestedVolumeGroups(),
    ]);
    const tag = this.#p.naming.tag;
    const names = new Set([
      ...vgs.filter((vg) => vg.tags.includes(tag)).map((vg) => vg.name),
      ...lvs.filter((lv) => lv.tags.includes(tag)).map((lv) => lv.vgName),
    ]);
    for (const name of [...names].sort()) {
      const reason = nested.get(name);
      if (reason === undefined) continue;
      names.delete(name);
      this.#p.logger?.warn('volume group left out: nested in a volume', {
        vgName: name,
        reason,
      });
    }
    return [...names].sort();
  }

  /**
   * The volume groups with a physical volume whose device stack rests on an
   * lvstamp data device, or cannot be followed (restsOnDataDevice): a
   * tenant's LVM inside a volume, never listed, counted, activated or
   * removed (DESIGN.md §2.3 "Scope"). One `pvs`, then sysfs for each PV.
   * @returns group name → why (the first such PV's reason).
   * @throws CommandFailedError, CommandTimeoutError, UnparseableOutputError.
   */
  async nestedVolumeGroups(): Promise<Map<string, string>> {
    const pvs = (await this.#p.lvm.volumeGroups.physicalVolumes()).flatMap(({ pvName, vgName }) =>
      vgName === null || vgName === '' ? [] : [{ pvName, vgName }],
    );
    const stacks = await Promise.all(pvs.map((pv) => this.#pvStack(pv.pvName)));
    const nested = new Map<string, string>();
    pvs.forEach((pv, i) => {
      const stack = stacks[i];
      if (stack?.nested === true && !nested.has(pv.vgName)) nested.set(pv.vgName, stack.reason);
    });
    return nested;
  }

  /**
   * The volume group new volumes go to when none is named: the one group
   * tagged `lvstamp` (as `VolumeGroupAdmin` creates them) that is not nested
   * in a volume (nestedVolumeGroups, DESIGN.md §2.3). One `vgs` and one
   * `pvs`, then sysfs.
   * @throws FailedPreconditionError when there is none (naming the nested
   *   tagged groups and why, if any); InvalidArgumentError when there are
   *   several (name one); as nestedVolumeGroups.
   */
  async defaultVolumeGroup(): Promise<string> {
    const [groups, nested] = await Promise.all([
      this.#p.lvm.volumeGroups.list(),
      this.nestedVolumeGroups(),
    ]);
    const tagged = groups.filter((g) => g.tags.includes(this.#p.naming.tag));
    const candidates = tagged.filter((g) => !nested.has(g.name));
    const [only, ...more] = candidates;
    if (only === undefined) {
      const left = tagged.map((g) => `${g.name}: ${nested.get(g.name) ?? ''}`);
      throw new FailedPreconditionError(
        left.length === 0
          ? `no volume group is tagged "${this.#p.naming.tag}"; create one with "lvstamp vg create" or name one with --vg`
          : `no volume group tagged "${this.#p.naming.tag}" is the node's: ${left.join('; ')} (nested in a volume, docs/DESIGN.md §2.3); create one with "lvstamp vg create" or name one with --vg`,
      );
    }
    if (more.length > 0) {
      throw new InvalidArgumentError(
        `several volume groups are tagged "${this.#p.naming.tag}" (${candidates.map((g) => g.name).join(', ')}); name one with --vg`,
      );
    }
    return only.name;
  }

  // ---- look-ups -------------------------------------------------------------

  /**
   * The lvstamp LVs of the scope's volume groups (DESIGN.md §2.3) from one
   * look-up (LogicalVolumes.inGroups), no header read: `volumes`
   * (`lvstamp_<id>` and `lvstamp_new_<id>`, `capacityBytes` null) and
   * `snapshots` (`lvstamp_snap_<id>`, active or not, whatever their tags; the
   * GC judges them, DESIGN.md §6 "Snapshots"). Other names with the prefix
   * are left out. With `lvNames`, only LVs of those names.
   * @throws InvalidArgumentError for a bad group or LV name; as
   *   LogicalVolumes.inGroups.
   */
  async listLogicalVolumes(
    scope: VgScope,
    lvNames?: readonly string[],
  ): Promise<{ volumes: Volume[]; snapshots: LogicalVolume[] }> {
    if (lvNames !== undefined && lvNames.length === 0) return { volumes: [], snapshots: [] };
    const { lvs } = await this.#p.lvm.logicalVolumes.inGroups(
      scope.vgNames,
      lvNames === undefined ? { prefix: commonPrefix(this.#p.naming) } : { names: lvNames },
    );
    const volumes: Volume[] = [];
    const snapshots: LogicalVolume[] = [];
    for (const lv of lvs) {
      const volume = this.#toVolume(lv);
      if (volume !== null) volumes.push(volume);
      else if (parseSnapshotLvName(lv.lvName, this.#p.naming) !== null) snapshots.push(lv);
    }
    return { volumes, snapshots };
  }

  /**
   * lvstamp volumes in the scope: `lvstamp_<id>` and `lvstamp_new_<id>`
   * (creating), each with its capacity from its header (one sector-0 read
   * in-process per active volume; DESIGN.md §4 "Capacity").
   * @throws as listLogicalVolumes.
   */
  async listVolumes(scope: VgScope): Promise<Volume[]> {
    const { volumes } = await this.listLogicalVolumes(scope);
    return this.withCapacities(volumes);
  }

  /**
   * The volumes with their capacities from their headers (one in-process
   * sector-0 read per active finished volume; DESIGN.md §4 "Capacity"), in
   * the same order: for a page of a listing taken with listLogicalVolumes.
   * A capacity that cannot be known (inactive, creating, header unreadable,
   * not `ok` or of another volume) is null. Never throws.
   */
  async withCapacities(volumes: readonly Volume[]): Promise<Volume[]> {
    return Promise.all(volumes.map((v) => this.#withCapacity(v)));
  }

  /**
   * The finished volume `lvstamp_<volumeId>` in the scope, or null (an
   * interrupted create, `lvstamp_new_<id>` only, is not a volume).
   * @throws InvalidArgumentError when volumeId is not 32 lowercase hex digits.
   * @throws FailedPreconditionError when several groups hold the volume, or
   *   lvm sees two groups with one name; as LogicalVolumes.inGroups.
   */
  async findVolume(volumeId: string, scope: VgScope): Promise<Volume | null> {
    validateVolumeId(volumeId);
    const { finished } = await this.#lookup(volumeId, scope.vgNames);
    const volume = this.#single(volumeId, finished);
    return volume === null ? null : this.#withCapacity(volume);
  }

  /**
   * As findVolume, but a missing volume is an error.
   * @throws NotFoundError when no group of the scope holds `lvstamp_<volumeId>`.
   */
  async getVolume(volumeId: string, scope: VgScope): Promise<Volume> {
    const volume = await this.findVolume(volumeId, scope);
    if (volume === null) throw new NotFoundError(`volume ${volumeId} does not exist`);
    return volume;
  }

  /**
   * Turns what a person typed into a volume ID: a volume name (its ID is
   * derived, DESIGN.md §3), or the ID of an existing volume. A ref that is
   * both an existing volume's ID and the name of another existing volume is
   * refused rather than guessed. Looks in the scope only.
   * @throws InvalidArgumentError when it is neither a valid ID nor a valid
   *   name, or when it is ambiguous.
   */
  async resolve(ref: string, scope: VgScope): Promise<string> {
    return resolveRef(ref, 'volume', async (id) => (await this.findVolume(id, scope)) !== null);
  }

  /**
   * Every lvstamp volume in the scope with its header, data device and mount
   * points: one `lvm fullreport`, one `dmsetup info`, one mountinfo read,
   * and one sector-0 read per active volume.
   * @throws as listVolumes; CommandFailedError of dmsetup.
   */
  async list(scope: VgScope): Promise<VolumeStatus[]> {
    const volumes = await this.listVolumes(scope);
    const [maps, mounts] = await Promise.all([
      this.#p.dataDevices.list(),
      this.#p.filesystems.mounts(),
    ]);
    return Promise.all(volumes.map((v) => this.#status(v, maps, mounts)));
  }

  /**
   * One volume's status.
   * @throws NotFoundError when no finished volume in the scope has this ID; as list.
   */
  async status(volumeId: string, scope: VgScope): Promise<VolumeStatus> {
    const volume = await this.getVolume(volumeId, scope);
    const [maps, mounts] = await Promise.all([
      this.#p.dataDevices.list(),
      this.#p.filesystems.mounts(),
    ]);
    return this.#status(volume, maps, mounts);
  }

  /** Reads sector 0 of a volume's LV (readHeaderSafely); never throws. */
  async readHeader(volume: LogicalVolume): Promise<HeaderReading> {
    return readHeaderSafely(volume, this.#p.headers);
  }

  // ---- activation -----------------------------------------------------------

  /**
   * The finished volume, active: an inactive LV is activated (`lvchange
   * --activate y <vg>/<lv>`, lvchange(8)), only this LV and only after its
   * tags prove it is this owner's (DESIGN.md §2.3), under the host lock.
   * The header is the caller's to check.
   * @throws NotFoundError; NotOwnedError when an inactive LV lacks the tags;
   *   as findVolume; CommandFailedError, LockTimeoutError.
   */
  async activateVolume(volumeId: string, scope: VolumeScope): Promise<Volume> {
    const volume = await this.getVolume(volumeId, scope);
    if (isActive(volume)) return volume;
    const ownerId = parseOwnerId(scope.ownerId);
    return this.#p.hostLock.withLock(`activate ${volumeId}`, async () => {
      const again = await this.getVolume(volumeId, scope);
      return this.#activateOwned(again, ownerId);
    });
  }

  /**
   * Activates every inactive lvstamp LV of the scope that carries the
   * lvstamp tag and this owner's tag (the GC inventory reads their headers):
   * one `lvchange --activate y <vg>/<lv>` each, under the host lock, after a
   * re-listing under it; never a group-wide activation.
   * @returns `vg/lv` of each LV activated.
   * @throws as listLogicalVolumes; CommandFailedError, LockTimeoutError.
   */
  async activateOwnedVolumes(scope: VolumeScope): Promise<string[]> {
    const ownerId = parseOwnerId(scope.ownerId);
    const inactiveOwned = async (): Promise<Volume[]> =>
      (await this.listLogicalVolumes(scope)).volumes.filter(
        (v) => !isActive(v) && failedTagCheck(v, ownerId, this.#p.naming) === null,
      );
    if ((await inactiveOwned()).length === 0) return [];
    return this.#p.hostLock.withLock('activate inactive lvstamp volumes', async () => {
      const activated: string[] = [];
      for (const volume of await inactiveOwned()) {
        await this.#p.lvm.logicalVolumes.activate(volume.vgName, volume.lvName);
        activated.push(`${volume.vgName}/${volume.lvName}`);
      }
      return activated;
    });
  }

  /**
   * Activates every inactive snapshot LV of the scope that carries the
   * lvstamp tag and this owner's tag, so that the GC can read its sector 0:
   * one `lvchange -ay -K <vg>/<lv>` each (exactly that LV; `-K` because thin
   * snapshots carry the activation-skip flag, docs/SNAPSHOTS.md §1), under
   * the host lock, after a re-listing under it.
   * @returns `vg/lv` of each LV activated.
   * @throws as listLogicalVolumes; CommandFailedError, LockTimeoutError.
   */
  async activateOwnedSnapshots(scope: VolumeScope): Promise<string[]> {
    const ownerId = parseOwnerId(scope.ownerId);
    const inactiveOwned = async (): Promise<LogicalVolume[]> =>
      (await this.listLogicalVolumes(scope)).snapshots.filter(
        (lv) => !isActive(lv) && failedTagCheck(lv, ownerId, this.#p.naming) === null,
      );
    if ((await inactiveOwned()).length === 0) return [];
    return this.#p.hostLock.withLock('activate inactive lvstamp snapshots', async () => {
      const activated: string[] = [];
      for (const lv of await inactiveOwned()) {
        await this.#p.lvm.thinSnapshots.activate(lv.vgName, lv.lvName);
        activated.push(`${lv.vgName}/${lv.lvName}`);
      }
      return activated;
    });
  }

  /**
   * Puts back to rest the snapshot LVs `activateOwnedSnapshots` activated
   * (snapshots rest inactive, DESIGN.md §3): one `lvchange --activate n
   * <vg>/<lv>` each, under the host lock. Best effort: a failure (an LV
   * opened or removed meanwhile, a lock timeout) is logged as a warning and
   * the others still run; an inactive LV is harmless either way.
   * @param lvs `vg/lv` of snapshot LVs, as activateOwnedSnapshots returned them.
   * @throws InvalidArgumentError for an entry that is not `<vg>/lvstamp_snap_<id>`, before any command.
   */
  async deactivateSnapshots(lvs: readonly string[]): Promise<void> {
    const targets = lvs.map((entry) => {
      const [vgName = '', lvName = '', ...rest] = entry.split('/');
      if (rest.length > 0 || parseSnapshotLvName(lvName, this.#p.naming) === null) {
        throw new InvalidArgumentError(`"${entry}" is not <vg>/<snapshot LV>`);
      }
      validateVgNames([vgName]);
      return { vgName, lvName };
    });
    if (targets.length === 0) return;
    const warn = (lv: string, error: unknown) =>
      this.#p.logger?.warn('snapshot left active: deactivation failed', {
        lv,
        error: error instanceof Error ? error.message : String(error),
      });
    try {
      await this.#p.hostLock.withLock('deactivate lvstamp snapshots', async () => {
        for (const { vgName, lvName } of targets) {
          await this.#p.lvm.thinSnapshots
            .deactivate(vgName, lvName)
            .catch((error: unknown) => warn(`${vgName}/${lvName}`, error));
        }
      });
    } catch (error) {
      warn(lvs.join(' '), error);
    }
  }

  // ---- create ---------------------------------------------------------------

  /**
   * Creates a volume with the DESIGN.md §5 protocol, idempotently: an
   * existing `lvstamp_<id>` with this name, owner and a compatible capacity
   * in `vgName` is returned as is (activated first when inactive and
   * tagged); a leftover `lvstamp_new_<id>` in `vgName` is removed (tags
   * checked); `lvcreate` as `lvstamp_new_<id>` with the sizes of
   * `volumeSize`; the first and last MiB of the data area zeroed; the header
   * v2 written and flushed; `lvrename` to `lvstamp_<id>`. lvm processes: one
   * `lvm fullreport` (the look-up), `lvcreate`, `lvrename`, all
   * under one holding of the host lock (DESIGN.md §2.3, §5).
   * @throws InvalidArgumentError for a bad name, size, VG name or owner ID.
   * @throws OutOfRangeError when no capacity fits the range, before any lvm command.
   * @throws NotFoundError when the VG does not exist; VolumeGroupUnusableError.
   * @throws AlreadyExistsError when the volume exists with another capacity,
   *   in another VG, with another owner or another name in its header.
   * @throws FailedPreconditionError when the existing LV's header is not
   *   `ok` or carries another volume ID.
   * @throws OutOfSpaceError; CommandFailedError, CommandTimeoutError,
   *   UnparseableOutputError, LockTimeoutError.
   */
  async createVolume(request: CreateVolumeRequest): Promise<CreatedVolume> {
    validateVolumeName(request.name);
    if (request.limitBytes !== undefined) validateBytes('limitBytes', request.limitBytes);
    // The range alone (any extent size): refused before any lvm command.
    volumeSize({ ...request, extentSizeBytes: CAPACITY_BLOCK_BYTES });
    validateVgNames([request.vgName]);
    const ownerId = parseOwnerId(request.ownerId);
    const volumeId = volumeIdForName(request.name);
    // One holding of the host lock from the look-up to the rename: a leftover `lvstamp_new_<id>`
    // is removed on its tags alone (DESIGN.md §5), so while the lock is free between lvcreate and
    // lvrename another process's create or delete of the same volume could remove the LV being
    // built, or this rename could take another create's LV before its header is written.
    return this.#p.hostLock.withLock(`create ${volumeId}`, async () =>
      this.#create(request, volumeId, ownerId, await this.#createLookup(request, volumeId)),
    );
  }

  /**
   * createVolume, then the new volume's status (one more look-up): what
   * `lvstamp create` prints.
   * @throws as createVolume.
   */
  async create(request: CreateVolumeRequest): Promise<VolumeStatus> {
    const volume = await this.createVolume(request);
    return this.status(volume.volumeId, {
      vgNames: [request.vgName, ...(request.otherVgNames ?? [])],
    });
  }

  /**
   * The create's look-up (one `lvm fullreport`, LogicalVolumes.inGroups): the target
   * group, checked usable (VolumeGroups.usable), the finished volume in any
   * group searched, and leftovers `lvstamp_new_<id>`.
   */
  async #createLookup(
    request: CreateVolumeRequest,
    volumeId: string,
  ): Promise<{ vg: VolumeGroup; existing: Volume | null; pending: Volume[] }> {
    const vgNames = [request.vgName, ...(request.otherVgNames ?? [])];
    const { groups, finished, pending } = await this.#lookup(volumeId, vgNames);
    const vg = await this.#p.lvm.volumeGroups.usable(request.vgName, groups);
    return { vg, existing: this.#single(volumeId, finished), pending };
  }

  async #create(
    request: CreateVolumeRequest,
    volumeId: string,
    ownerId: string,
    found: { vg: VolumeGroup; existing: Volume | null; pending: Volume[] },
  ): Promise<CreatedVolume> {
    const lvs = this.#p.lvm.logicalVolumes;
    const { vg, existing, pending } = found;
    if (existing !== null) {
      const wantThin = request.provisioning?.type === 'thin';
      if (wantThin !== isThinLv(existing)) {
        throw new AlreadyExistsError(
          `volume "${request.name}" (${volumeId}) exists as a ${isThinLv(existing) ? 'thin' : 'thick'} LV ${existing.vgName}/${existing.lvName}; the request's device class is ${wantThin ? 'thin' : 'thick'}`,
        );
      }
      const adopted = await this.#adoptExisting(existing, request, volumeId, ownerId);
      return createdVolumeOf(adopted);
    }

    let freeBytes = vg.freeBytes;
    for (const leftover of pending) {
      if (leftover.vgName !== vg.name) {
        this.#p.logger?.warn(
          'leftover of an interrupted create in another volume group left for the GC',
          { volumeId, lv: `${leftover.vgName}/${leftover.lvName}` },
        );
        continue;
      }
      requireOwnerTags(leftover, ownerId, this.#p.naming, 'remove');
      await lvs.remove(leftover.vgName, leftover.lvName);
      freeBytes += leftover.sizeBytes;
    }

    const { capacityBytes, lvSizeBytes } = volumeSize({
      ...request,
      extentSizeBytes: vg.extentSizeBytes,
    });
    const thin = request.provisioning?.type === 'thin' ? request.provisioning : null;
    if (thin !== null) {
      await this.#readyThinPool(vg, thin, ownerId, volumeId, lvSizeBytes);
    } else if (lvSizeBytes > freeBytes) {
      throw new OutOfSpaceError(
        `volume group ${vg.name} has ${freeBytes} bytes free, volume ${volumeId} needs ${lvSizeBytes}`,
      );
    }

    const newLvName = newLvNameFor(volumeId, this.#p.naming);
    const tags = [this.#p.naming.tag, ownerTagFor(ownerId, this.#p.naming)];
    if (thin !== null) {
      await this.#p.lvm.thinPools.createThinLv({
        vgName: vg.name,
        poolName: thin.thinPool,
        lvName: newLvName,
        virtualSizeBytes: lvSizeBytes,
        tags,
      });
    } else {
      await lvs.create({ vgName: vg.name, lvName: newLvName, sizeBytes: lvSizeBytes, tags });
    }
    // No read-back: the device path is lvm's naming rule (lvDmName), the size the -L asked
    // (whole extents, so lvm does not round it); lvcreate --activate y made the node.
    const dmPath = `/dev/mapper/${lvDmName(vg.name, newLvName)}`;
    const header: HeaderFields = {
      volumeId,
      ownerId,
      createdAtMs: this.#p.clock(),
      dataOffsetBytes: DATA_OFFSET_BYTES,
      requestedBytes: capacityBytes,
      name: request.name,
    };
    // The extents may have held a deleted volume: its filesystem must not show through. A thin
    // LV reads zeros everywhere (the pool zeroes new chunks); clearing would map 2 MiB of chunks.
    if (thin === null) {
      await this.#p.headers.clearDataArea(dmPath, {
        dataOffsetBytes: DATA_OFFSET_BYTES,
        sizeBytes: DATA_OFFSET_BYTES + capacityBytes,
      });
    }
    await this.#p.headers.writeHeader(dmPath, header);
    const finalLvName = lvNameFor(volumeId, this.#p.naming);
    await lvs.rename(vg.name, newLvName, finalLvName);
    return {
      volumeId,
      vgName: vg.name,
      lvName: finalLvName,
      sizeBytes: lvSizeBytes,
      capacityBytes,
    };
  }

  /**
   * A thin create's pool step, under the host lock (DESIGN.md §4 "Thin
   * device classes"): the pool is measured (activated alone when inactive);
   * absent with `thinPoolSize` → created (thinPoolCreateArgv, tagged for
   * this owner) and measured again; then the budget check for an LV of
   * `lvSizeBytes`.
   * @throws ThinPoolUnusableError (not a thin pool, zero off, absent without
   *   a size); OutOfSpaceError (budget, pool full, metadata ≥ 80 %, no room
   *   for the pool).
   */
  async #readyThinPool(
    vg: VolumeGroup,
    thin: ThinProvisioning,
    ownerId: string,
    volumeId: string,
    lvSizeBytes: number,
  ): Promise<void> {
    let report = await this.#thinPoolReport(vg.name, thin);
    let capacity = thinPoolCapacity(thin, report);
    if (capacity.condition === 'prospective' && thin.thinPoolSizeBytes !== null) {
      await this.#p.lvm.thinPools.create({
        vgName: vg.name,
        poolName: thin.thinPool,
        sizeBytes: capacity.poolBytes,
        tags: [this.#p.naming.tag, ownerTagFor(ownerId, this.#p.naming)],
      });
      this.#p.logger?.warn('created thin pool', {
        pool: `${vg.name}/${thin.thinPool}`,
        sizeBytes: capacity.poolBytes,
      });
      report = await this.#thinPoolReport(vg.name, thin);
      capacity = thinPoolCapacity(thin, report);
    }
    if (
      capacity.condition === 'unusable' ||
      (capacity.condition === 'absent' && thin.thinPoolSizeBytes === null)
    ) {
      throw new ThinPoolUnusableError(
        vg.name,
        thin.thinPool,
        capacity.detail ?? capacity.condition,
      );
    }
    const refused = thinAdmits(capacity, lvSizeBytes, lvSizeBytes);
    if (refused !== null) {
      throw new OutOfSpaceError(
        `thin pool ${vg.name}/${thin.thinPool} cannot take volume ${volumeId} (${lvSizeBytes} bytes): ${refused}`,
      );
    }
  }

  async #adoptExisting(
    existing: Volume,
    request: CreateVolumeRequest,
    volumeId: string,
    ownerId: string,
  ): Promise<Volume & { readonly capacityBytes: number }> {
    const where = `${existing.vgName}/${existing.lvName}`;
    if (existing.vgName !== request.vgName) {
      throw new AlreadyExistsError(
        `volume "${request.name}" (${volumeId}) exists in volume group ${existing.vgName}, not ${request.vgName}`,
      );
    }
    // A retried create after a reboot without auto-activation: activate it (tags first).
    const active = await this.#activateOwned(existing, ownerId);
    if (active.dmPath === null) {
      throw new FailedPreconditionError(`${where} is active but lvm reports no device path`);
    }
    const decoded = await this.#p.headers.readHeader(active.dmPath);
    const failed = failedHeaderCheck(decoded, volumeId, ownerId);
    if (decoded.status !== 'ok') {
      throw new FailedPreconditionError(
        `${where} exists but its header is ${decoded.status}: ${decoded.reason}`,
      );
    }
    const { header } = decoded;
    if (failed?.check === 'header-id') {
      throw new FailedPreconditionError(`${where} holds a header for volume ${header.volumeId}`);
    }
    if (header.name !== request.name) {
      throw new AlreadyExistsError(
        `${where} belongs to volume "${header.name}", not "${request.name}"`,
      );
    }
    // Another installation's volume of the same name: "exists", as CSI CreateVolume answers.
    if (failed?.check === 'header-owner') {
      throw new AlreadyExistsError(`${where} belongs to owner ${header.ownerId}, not ${ownerId}`);
    }
    const capacityBytes = requireCapacity(ownedHeaderOf(decoded, existing.sizeBytes), existing);
    const tooSmall = capacityBytes < request.requiredBytes;
    const tooLarge = request.limitBytes !== undefined && capacityBytes > request.limitBytes;
    if (tooSmall || tooLarge) {
      const range = `${request.requiredBytes}..${request.limitBytes ?? 'unlimited'}`;
      throw new AlreadyExistsError(
        `volume "${request.name}" exists with a different size: capacity ${capacityBytes} bytes, requested ${range}`,
      );
    }
    return { ...active, capacityBytes };
  }

  // ---- attach / detach ------------------------------------------------------

  /**
   * Creates (or keeps) the data device: the linear map over the data area
   * behind the header (DESIGN.md §4), after both ownership signals: the LV
   * name with the lvstamp and owner tags of the scope's owner, and a valid
   * header whose ID matches the name and whose owner is the scope's
   * (DESIGN.md §2.3): another installation's volume is never exposed. An
   * inactive LV is activated first when its tags carry the scope's owner.
   * @returns the `/dev/mapper` node and its device number.
   * @throws NotFoundError, NotOwnedError (tags or header owner of another
   *   installation), FailedPreconditionError (header not ok or not matching),
   *   CommandFailedError.
   */
  async attach(volumeId: string, scope: VolumeScope): Promise<DataDevice> {
    const ownerId = parseOwnerId(scope.ownerId);
    const volume = await this.activateVolume(volumeId, scope);
    requireOwnerTags(volume, ownerId, this.#p.naming, 'attach');
    const { header, capacityBytes } = await this.#ownedCapacity(volume, ownerId, 'attach');
    return this.#p.dataDevices.create(volumeId, volume, header.dataOffsetBytes, capacityBytes);
  }

  /**
   * Removes the data device; the data stays on the LV. Not attached is
   * success (`removed: false`). With a `scope`, the volume is looked up in
   * its groups first: a map whose volume has no LV there is removed only as
   * a leftover, when the device its table targets is gone too (as delete,
   * DESIGN.md §6 rule 4).
   * @throws FailedPreconditionError when it is mounted or open, or (with a
   *   scope) its volume is not in the scope and its target still exists.
   */
  async detach(volumeId: string, scope?: VgScope): Promise<{ removed: boolean }> {
    const map = await this.#p.dataDevices.find(volumeId);
    if (map === null) return { removed: false };
    await this.#refuseIfMounted(map);
    if (scope !== undefined && (await this.findVolume(volumeId, scope)) === null) {
      await this.#refuseTargetOutside(map, scope);
    }
    await this.#p.dataDevices.remove(volumeId);
    return { removed: true };
  }

  // ---- expand ---------------------------------------------------------------

  /**
   * Grows a volume to the capacity `volumeSize` gives `requiredBytes`
   * (DESIGN.md §4 "Capacity", §5 "Expand"), online and crash-safely, under
   * the host lock after the ownership checks (tags, then a valid header with
   * its ID and owner, DESIGN.md §2.3; an inactive LV is activated for that):
   * a v1 header is first rewritten as v2 with its current capacity;
   * `lvextend` when the LV is smaller than the new size; the header
   * rewritten with the new capacity; then the data device's table reloaded
   * and a filesystem mounted from it grown. Every step is skipped when done.
   * A volume already large enough is unchanged.
   * @returns the new status and the mount point whose filesystem was grown.
   * @throws InvalidArgumentError for a malformed ID or size.
   * @throws OutOfRangeError when no capacity fits the range, or the capacity
   *   is already above `limitBytes` (volumes never shrink).
   * @throws NotFoundError, NotOwnedError, FailedPreconditionError (header
   *   does not fit the LV; a mount of another filesystem), OutOfSpaceError,
   *   CommandFailedError, LockTimeoutError.
   */
  async expand(
    volumeId: string,
    requiredBytes: number,
    scope: VolumeScope,
    options: {
      readonly limitBytes?: number;
      /** The thin classes' pools: a thin volume grows only within its pool's budget. */
      readonly thinPools?: readonly ThinClassPool[];
    } = {},
  ): Promise<{ status: VolumeStatus; filesystemGrown: string | null }> {
    validateVolumeId(volumeId);
    const ownerId = parseOwnerId(scope.ownerId);
    validateBytes('requiredBytes', requiredBytes);
    const { limitBytes } = options;
    if (limitBytes !== undefined) validateBytes('limitBytes', limitBytes);
    // The range alone (any extent size): refused before any lvm command.
    volumeSize({ requiredBytes, limitBytes, extentSizeBytes: CAPACITY_BLOCK_BYTES });
    const grown = await this.#p.hostLock.withLock(`expand ${volumeId}`, () =>
      this.#expandLv(volumeId, requiredBytes, limitBytes, scope, ownerId, options.thinPools ?? []),
    );
    const map = await this.#p.dataDevices.find(volumeId);
    let filesystemGrown: string | null = null;
    if (map !== null) {
      const { header, capacityBytes } = await this.#ownedCapacity(grown, ownerId, 'resize');
      await this.#p.dataDevices.reload(volumeId, grown, header.dataOffsetBytes, capacityBytes);
      const mount = (await this.#p.filesystems.mounts()).find(
        (m) => m.major === map.major && m.minor === map.minor,
      );
      if (mount !== undefined) {
        if (!isFsType(mount.fsType)) {
          throw new FailedPreconditionError(
            `the data device is mounted on ${mount.mountPoint} with ${mount.fsType}; lvstamp grows only ${FS_TYPES.join(' and ')}`,
          );
        }
        await this.#p.filesystems.grow(mount.mountPoint, mount.fsType);
        filesystemGrown = mount.mountPoint;
      }
    }
    const [maps, mounts] = await Promise.all([
      this.#p.dataDevices.list(),
      this.#p.filesystems.mounts(),
    ]);
    return { status: await this.#status(grown, maps, mounts), filesystemGrown };
  }

  /** The LV and header steps of expand; the caller holds the host lock. */
  async #expandLv(
    volumeId: string,
    requiredBytes: number,
    limitBytes: number | undefined,
    scope: VgScope,
    ownerId: string,
    thinPools: readonly ThinClassPool[],
  ): Promise<Volume> {
    const { finished, groups } = await this.#lookup(volumeId, scope.vgNames);
    const found = this.#single(volumeId, finished);
    if (found === null) throw new NotFoundError(`volume ${volumeId} does not exist`);
    // The group's state before any act (activation included), as create checks it.
    const vg = await this.#p.lvm.volumeGroups.usable(found.vgName, groups);
    // The tags first, active or not (DESIGN.md §2.3): an active LV is never grown on its header alone.
    requireOwnerTags(found, ownerId, this.#p.naming, 'resize');
    const volume = await this.#activateOwned(found, ownerId);
    const owned = await requireOwnerHeader(
      volume,
      { volumeId, ownerId },
      this.#p.headers,
      'resize',
    );
    const dmPath = volume.dmPath ?? '';
    const current = requireCapacity(owned, volume);
    if (limitBytes !== undefined && current > limitBytes) {
      throw new OutOfRangeError(
        `volume ${volumeId} has ${current} bytes, above limitBytes ${limitBytes}; volumes never shrink`,
      );
    }
    if (current >= requiredBytes) return { ...volume, capacityBytes: current };
    const { capacityBytes, lvSizeBytes } = volumeSize({
      requiredBytes,
      limitBytes,
      extentSizeBytes: vg.extentSizeBytes,
    });
    const header = owned.header;
    let grown: Volume = volume;
    if (volume.sizeBytes < lvSizeBytes) {
      const growBytes = lvSizeBytes - volume.sizeBytes;
      const thin = isThinLv(volume)
        ? await this.#thinClassOf(volume, thinPools, growBytes, lvSizeBytes)
        : null;
      if (thin === null && growBytes > vg.freeBytes) {
        throw new OutOfSpaceError(
          `volume group ${vg.name} has ${vg.freeBytes} bytes free, growing volume ${volumeId} needs ${growBytes}`,
        );
      }
      // v1 means "the whole LV": pin today's capacity first, so the grown LV does not grow it.
      if (owned.version === 1) {
        await this.#p.headers.writeHeader(dmPath, { ...header, requestedBytes: current });
      }
      if (thin !== null) {
        await this.#p.lvm.thinPools.extendThinLv(
          vg.name,
          thin.thinPool,
          volume.lvName,
          lvSizeBytes,
        );
      } else {
        await this.#p.lvm.logicalVolumes.extend(vg.name, volume.lvName, lvSizeBytes);
      }
      // -L of whole extents is exact; the device path and number do not change.
      grown = { ...volume, sizeBytes: lvSizeBytes };
    }
    await this.#p.headers.writeHeader(dmPath, { ...header, requestedBytes: capacityBytes });
    return { ...grown, capacityBytes };
  }

  /**
   * The thin class of a thin volume about to grow by `growBytes` to
   * `lvSizeBytes`, after the budget check (DESIGN.md §4 "Thin capacity").
   * @throws FailedPreconditionError when no configured thin class names its
   *   pool (the budget is unknown); OutOfSpaceError when the pool refuses.
   */
  async #thinClassOf(
    volume: Volume,
    thinPools: readonly ThinClassPool[],
    growBytes: number,
    lvSizeBytes: number,
  ): Promise<ThinProvisioning> {
    const candidates = thinPools.filter((p) => p.vgName === volume.vgName);
    for (const { thin } of candidates) {
      const report = await this.#thinPoolReport(volume.vgName, thin);
      if (!report.thinLvs.some((lv) => lv.lvName === volume.lvName)) continue;
      const refused = thinAdmits(thinPoolCapacity(thin, report), growBytes, lvSizeBytes);
      if (refused !== null) {
        throw new OutOfSpaceError(
          `thin pool ${volume.vgName}/${thin.thinPool} cannot grow volume ${volume.volumeId} by ${growBytes} bytes: ${refused}`,
        );
      }
      return thin;
    }
    throw new FailedPreconditionError(
      `${volume.vgName}/${volume.lvName} is a thin volume in a pool that no thin device class names; its budget is unknown, so it is not grown`,
    );
  }

  // ---- delete ---------------------------------------------------------------

  /**
   * Deletes a volume (DESIGN.md §5): its data device (refused while mounted
   * or open), then, under the host lock, `lvstamp_<id>` and any
   * `lvstamp_new_<id>` in the scope; a volume already gone is success with
   * `existed: false`. Right before acting every LV proves it is this
   * owner's (DESIGN.md §2.3): the lvstamp tag and `lvstamp.owner=<ownerId>`,
   * and for the finished LV a valid header with its ID and owner (an
   * inactive LV is activated for that after its tags passed); a leftover
   * `lvstamp_new_<id>` has no header yet: tags only. With wipe `discard`
   * (`blkdiscard`) or `zero` (`blkdiscard --zeroout`) the finished LV is
   * wiped first. Every check runs before the first act on an LV.
   * @param options.forceUnowned skips the tag, owner and header checks
   *   (never the scope, the name or the open check).
   * @throws InvalidArgumentError for a malformed volume ID, owner ID or wipe
   *   policy, before anything is touched.
   * @throws NotOwnedError naming the LV and the failed check.
   * @throws FailedPreconditionError when the data device is mounted, an LV
   *   is open, or the volume exists in several groups of the scope.
   * @throws CommandFailedError, CommandTimeoutError, UnparseableOutputError,
   *   LockTimeoutError.
   */
  async delete(
    volumeId: string,
    scope: VolumeScope,
    options: DeleteVolumeOptions = {},
  ): Promise<DeleteVolumeResult> {
    if (!isHexId(volumeId))
      throw new InvalidArgumentError(`"${volumeId}" is not a volume ID (32 hex digits)`);
    const ownerId = parseOwnerId(scope.ownerId);
    const wipe = options.wipe ?? 'none';
    if (!WIPE_POLICIES.includes(wipe))
      throw new InvalidArgumentError(`unknown wipe policy "${wipe}"`);
    validateVgNames(scope.vgNames);
    // Whether a data device exists is read from sysfs (no process); dmsetup runs only to remove
    // one, and only after every check passed (a refused delete leaves the map in place).
    const map = await this.#p.dataDevices.find(volumeId);
    if (map !== null) await this.#refuseIfMounted(map);
    const removed = await this.#p.hostLock.withLock(`delete ${volumeId}`, () =>
      this.#deleteLvs(volumeId, scope, ownerId, wipe, options.forceUnowned === true, map),
    );
    return { existed: removed !== null || map !== null, removed: removed ?? [] };
  }

  /**
   * Removes the data device of a volume that has no LV in the scope's
   * groups, as a leftover (DESIGN.md §6 rule 4), only when the device its
   * table targets is gone too (the LV really is gone). The caller holds the
   * host lock.
   * @throws FailedPreconditionError, touching nothing, when its target still
   *   exists: an LV of a group outside the scope, or any other device.
   */
  async #removeLeftoverMap(map: DataDeviceRef, scope: VgScope): Promise<void> {
    await this.#refuseTargetOutside(map, scope);
    await this.#p.dataDevices.remove(map.volumeId);
  }

  /**
   * Refuses a data device whose volume has no LV in the scope while the
   * device its table targets still exists (an LV of another group, or any
   * other device): nothing proves it a leftover.
   * @throws FailedPreconditionError naming the map, its target and the scope.
   */
  async #refuseTargetOutside(map: DataDeviceRef, scope: VgScope): Promise<void> {
    const target = await this.#p.dataDevices.targetOf(map.volumeId);
    if (target?.present === true) {
      throw new FailedPreconditionError(
        `data device ${map.name} targets ${formatDeviceNumber(target.device)}, a device outside the volume groups ${scope.vgNames.join(', ')} (no LV of volume ${map.volumeId} there); name the volume group that holds its LV; left untouched`,
      );
    }
  }

  /**
   * The LV steps of delete; null when no LV existed. The caller holds the host
   * lock. `map` (the volume's data device, unmounted) holds the finished LV
   * open: it is removed after the tag, owner and header checks passed, and the
   * LVs are then looked up again for the open check.
   */
  async #deleteLvs(
    volumeId: string,
    scope: VgScope,
    ownerId: string,
    wipe: WipePolicy,
    force: boolean,
    map: DataDeviceRef | null,
  ): Promise<string[] | null> {
    const found = await this.#lookup(volumeId, scope.vgNames);
    let { finished, pending } = found;
    if (finished.length + pending.length === 0) {
      if (map !== null) await this.#removeLeftoverMap(map, scope);
      return null;
    }
    // One volume is one LV: copies in several groups are refused, never all removed at once.
    this.#single(volumeId, finished);
    // A broken group (a PV seen twice, one missing, read-only…) is refused before anything is
    // activated, unmapped or removed, as create refuses it (VolumeGroupUnusableError).
    await this.#requireUsableGroups([...finished, ...pending], found.groups);
    const refuseOpen = async (lvs: readonly Volume[]): Promise<void> => {
      for (const lv of lvs) {
        if (lv.open) {
          throw new FailedPreconditionError(
            `${await this.#openText(lv)}; unmount and detach it first`,
          );
        }
      }
    };
    if (map === null) await refuseOpen([...finished, ...pending]);
    if (!force)
      for (const lv of [...finished, ...pending])
        requireOwnerTags(lv, ownerId, this.#p.naming, 'delete');
    // The finished LV's header (and a wipe) need it active; activation changes no data.
    let ready: Volume[] = [];
    for (const lv of finished) {
      const needsActive = !force || wipe !== 'none';
      const active = needsActive ? await this.#activateOwned(lv, ownerId, force) : lv;
      if (!force) {
        const expected = { volumeId: active.volumeId, ownerId };
        await requireOwnerHeader(active, expected, this.#p.headers, 'delete');
      }
      ready.push(active);
    }
    if (map !== null) {
      await this.#p.dataDevices.remove(volumeId);
      // Without the map, is anything else holding the LVs open? The same LVs (by lv_uuid) only.
      const again = await this.#lookup(volumeId, scope.vgNames);
      const same = (before: readonly Volume[], after: readonly Volume[]): boolean =>
        before.length === after.length &&
        before.every((lv) => after.some((a) => a.lvUuid === lv.lvUuid && a.vgName === lv.vgName));
      if (!same(ready, again.finished) || !same(pending, again.pending)) {
        throw new FailedPreconditionError(
          `the LVs of volume ${volumeId} changed while it was being deleted; retry`,
        );
      }
      ({ finished, pending } = again);
      ready = again.finished;
      await refuseOpen([...finished, ...pending]);
    }
    const removed: string[] = [];
    for (const lv of [...ready, ...pending]) {
      // A thin LV is never wiped: lvremove returns its chunks and the pool zeroes them before
      // reuse (DESIGN.md §5); a wipe would map, or discard, chunks a snapshot may share.
      if (wipe !== 'none' && !lv.creating && lv.dmPath !== null && !isThinLv(lv)) {
        const argv =
          wipe === 'zero' ? ['blkdiscard', '--zeroout', lv.dmPath] : ['blkdiscard', lv.dmPath];
        await runLogged(this.#p.runner, this.#p.logger, argv, { timeoutMs: this.#wipeTimeoutMs });
      }
      await this.#p.lvm.logicalVolumes.remove(lv.vgName, lv.lvName);
      removed.push(`${lv.vgName}/${lv.lvName}`);
    }
    return removed;
  }

  /**
   * Removes exactly one LV, named by VG, name and `lv_uuid` (the GC's
   * remover, DESIGN.md §6): under the host lock, one `lvs` selected by
   * `lv_uuid` re-checks it (same VG and name, not open, the lvstamp tag and
   * `lvstamp.owner=<ownerId>`, DESIGN.md §2.3), then `lvremove`. An LV
   * already gone is success. The header is the GC executor's to re-check;
   * the data device must already be gone.
   * @throws InvalidArgumentError for a bad VG name, uuid or owner ID.
   * @throws FailedPreconditionError when the uuid now has another name or
   *   VG, or the LV is open; NotOwnedError when it lacks the tags.
   * @throws CommandFailedError, CommandTimeoutError, UnparseableOutputError,
   *   LockTimeoutError.
   */
  async removeLogicalVolume(ref: {
    readonly vgName: string;
    readonly lvName: string;
    readonly lvUuid: string;
    readonly ownerId: string;
  }): Promise<void> {
    validateVgNames([ref.vgName]);
    const ownerId = parseOwnerId(ref.ownerId);
    validateLvUuid(ref.lvUuid);
    const lvs = this.#p.lvm.logicalVolumes;
    return this.#p.hostLock.withLock(`remove ${ref.vgName}/${ref.lvName}`, async () => {
      const [lv, ...more] = await lvs.byUuid(ref.lvUuid);
      if (lv === undefined) return;
      if (more.length > 0 || lv.vgName !== ref.vgName || lv.lvName !== ref.lvName) {
        throw new FailedPreconditionError(
          `LV ${ref.lvUuid} is now ${lv.vgName}/${lv.lvName}, not ${ref.vgName}/${ref.lvName}; left alone`,
        );
      }
      if (lv.open) throw new FailedPreconditionError(`${await this.#openText(lv)}; left alone`);
      requireOwnerTags(lv, ownerId, this.#p.naming, 'remove');
      await lvs.remove(lv.vgName, lv.lvName);
    });
  }

  // ---- helpers --------------------------------------------------------------

  /** Both LVs a volume ID can have, in the scope's groups, and those groups. */
  async #lookup(
    volumeId: string,
    vgNames: readonly string[],
  ): Promise<{
    finished: Volume[];
    pending: Volume[];
    groups: GroupsReport;
  }> {
    const finalName = lvNameFor(volumeId, this.#p.naming);
    const newName = newLvNameFor(volumeId, this.#p.naming);
    const groups = await this.#p.lvm.logicalVolumes.inGroups(vgNames, {
      names: [finalName, newName],
    });
    const volumes = groups.lvs.map((lv) => this.#volumeOrThrow(lv));
    return {
      finished: volumes.filter((v) => v.lvName === finalName),
      pending: volumes.filter((v) => v.lvName === newName),
      groups,
    };
  }

  /**
   * Checks the state of each group holding one of `lvs` in the look-up's
   * report (VolumeGroups.usable), each group once.
   * @throws VolumeGroupUnusableError (naming lvm's warning, e.g. the
   *   devices of a duplicate PV), FailedPreconditionError, NotFoundError.
   */
  async #requireUsableGroups(lvs: readonly LogicalVolume[], groups: GroupsReport): Promise<void> {
    for (const vgName of new Set(lvs.map((lv) => lv.vgName))) {
      await this.#p.lvm.volumeGroups.usable(vgName, groups);
    }
  }

  /**
   * The LV, active: an inactive one is activated (this LV only) once its
   * tags prove it is `ownerId`'s (or when `force`), then read back. The
   * caller holds the host lock.
   */
  async #activateOwned(volume: Volume, ownerId: string, force = false): Promise<Volume> {
    if (isActive(volume)) return volume;
    if (!force) requireOwnerTags(volume, ownerId, this.#p.naming, 'activate');
    const lvs = this.#p.lvm.logicalVolumes;
    await lvs.activate(volume.vgName, volume.lvName);
    return this.#volumeOrThrow(await lvs.get(volume.vgName, volume.lvName));
  }

  /** `<vg>/<lv> is open (<its holders and mounts>)`, for the refusals of an open LV. */
  async #openText(lv: LogicalVolume): Promise<string> {
    const users =
      lv.kernelMajor === null || lv.kernelMinor === null
        ? 'no device number reported'
        : await deviceUsersText(
            { major: lv.kernelMajor, minor: lv.kernelMinor },
            { hostRoot: this.#hostRoot },
          );
    return `${lv.vgName}/${lv.lvName} is open (${users})`;
  }

  #single(volumeId: string, volumes: Volume[]): Volume | null {
    if (volumes.length > 1) {
      const where = volumes.map((v) => v.vgName).join(', ');
      throw new FailedPreconditionError(
        `volume ${volumeId} exists in several volume groups: ${where}`,
      );
    }
    return volumes[0] ?? null;
  }

  /** The volume of an LV name, its capacity not read yet (null). */
  #toVolume(lv: LogicalVolume): Volume | null {
    const parsed = parseLvName(lv.lvName, this.#p.naming);
    if (parsed === null) return null;
    return { ...lv, volumeId: parsed.volumeId, creating: parsed.creating, capacityBytes: null };
  }

  #volumeOrThrow(lv: LogicalVolume): Volume {
    const volume = this.#toVolume(lv);
    if (volume === null)
      throw new FailedPreconditionError(`${lv.vgName}/${lv.lvName} is not an lvstamp volume name`);
    return volume;
  }

  /**
   * The volume with its capacity from its header (capacityOf); null when
   * the LV is inactive, still being created, or its header is unreadable,
   * not `ok`, of another volume or does not fit the LV. Never throws.
   */
  async #withCapacity(volume: Volume): Promise<Volume> {
    if (volume.creating) return volume;
    const reading = await readHeaderSafely(volume, this.#p.headers);
    if (reading.status !== 'ok' || reading.header.volumeId !== volume.volumeId) return volume;
    return { ...volume, capacityBytes: ownedHeaderOf(reading, volume.sizeBytes).capacityBytes };
  }

  /**
   * The header of a finished volume with its ownership proved (DESIGN.md
   * §2.3) and the capacity it gives; the tags are the caller's to check.
   * @throws FailedPreconditionError while still being created or when the
   *   header does not fit the LV; NotOwnedError as requireOwnerHeader.
   */
  async #ownedCapacity(
    volume: Volume,
    ownerId: string,
    act: string,
  ): Promise<{ header: HeaderFields; capacityBytes: number }> {
    if (volume.creating) {
      throw new FailedPreconditionError(`${volume.vgName}/${volume.lvName} is still being created`);
    }
    const expected = { volumeId: volume.volumeId, ownerId };
    const owned = await requireOwnerHeader(volume, expected, this.#p.headers, act);
    return { header: owned.header, capacityBytes: requireCapacity(owned, volume) };
  }

  async #refuseIfMounted(map: DataDeviceRef): Promise<void> {
    const mounts = (await this.#p.filesystems.mounts()).filter(
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
              path: this.#p.dataDevices.pathFor(volume.volumeId),
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

/** The wipe policies delete knows; callers in plain JS may pass anything. */
const WIPE_POLICIES: readonly string[] = ['none', 'discard', 'zero'];

function isFsType(value: string): value is FsType {
  return (FS_TYPES as readonly string[]).includes(value);
}

function validateVolumeId(volumeId: string): void {
  if (!isHexId(volumeId))
    throw new InvalidArgumentError(`volume ID must be 32 lowercase hex digits, got "${volumeId}"`);
}

function validateVgNames(vgNames: readonly string[]): void {
  for (const name of vgNames) validateVgName(name);
}

function validateBytes(field: string, bytes: number): void {
  if (!Number.isSafeInteger(bytes) || bytes <= 0) {
    throw new InvalidArgumentError(
      `${field} must be a positive whole number of bytes, got ${bytes}`,
    );
  }
}

/** The CreatedVolume fields of a volume: a new and an adopted volume answer alike. */
function createdVolumeOf(volume: CreatedVolume): CreatedVolume {
  const { volumeId, vgName, lvName, sizeBytes, capacityBytes } = volume;
  return { volumeId, vgName, lvName, sizeBytes, capacityBytes };
}

/** The longest prefix shared by the finished and the in-progress LV prefixes. */
function commonPrefix(naming: Naming): string {
  const a = naming.lvPrefix;
  const b = naming.newLvPrefix;
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i += 1;
  return a.slice(0, i);
}

/** A thin LV: `lv_attr` volume type `V` (lvs(8)), i.e. segtype thin. */
function isThinLv(lv: Pick<LogicalVolume, 'attr'>): boolean {
  return lv.attr.startsWith('V');
}
