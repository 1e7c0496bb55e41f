import {
  AlreadyExistsError,
  CommandFailedError,
  FailedPreconditionError,
  InvalidArgumentError,
  NotOwnedError,
  OutOfRangeError,
  type OwnershipCheck,
  NotFoundError,
  OutOfSpaceError,
  UnparseableOutputError,
  VolumeGroupUnusableError,
} from '../errors.js';
import type { CommandResult, CommandRunner, RunOptions, WarnLogger } from '../exec/runner.js';
import { DATA_OFFSET_BYTES } from '../header/constants.js';
import type { DecodeResult, HeaderFields } from '../header/types.js';
import { deviceUsersText } from '../device/holders.js';
import type { HostLock } from '../lock/host-lock.js';
import { KeyedMutex } from '../lock/keyed-mutex.js';
import {
  DEFAULT_NAMING,
  isHexId,
  lvNameFor,
  newLvNameFor,
  ownerTagFor,
  parseLvName,
  parseOwnerId,
  validateVolumeName,
  volumeIdForName,
  type Naming,
} from '../naming.js';
import { CAPACITY_BLOCK_BYTES, capacityOf, volumeSize } from '../volumes/size.js';
import type { HeaderIo } from './header-io.js';
import {
  LV_REPORT_FIELDS,
  parseLvsReport,
  parsePvsReport,
  parseVgsReport,
  PV_REPORT_FIELDS,
  VG_REPORT_FIELDS,
} from './report.js';
import { classifyLvmFailure, duplicatePvUuids, lvmMessage, problemsOfVgAttr } from './vg-state.js';
import type {
  LogicalVolume,
  CreatedVolume,
  Volume,
  VgScope,
  VolumeGroup,
  VolumeGroupCapacity,
  VolumeScope,
  WipePolicy,
} from './types.js';

/** Options every lvm report gets: JSON, sizes as plain byte counts (FACTS.md). */
export const REPORT_OPTIONS: readonly string[] = Object.freeze([
  '--reportformat',
  'json',
  '--units',
  'b',
  '--nosuffix',
]);

/** lvs option that prints `lv_time` as Unix seconds (lvm.conf(5) report/time_format). */
export const LV_TIME_CONFIG: readonly string[] = Object.freeze([
  '--config',
  'report/time_format="%s"',
]);

/** Default deadline of a wipe (`blkdiscard`), in milliseconds: one hour. */
export const DEFAULT_WIPE_TIMEOUT_MS = 3_600_000;

/** Dependencies and settings of an LvmManager. */
export interface LvmManagerOptions {
  readonly runner: CommandRunner;
  /** Held across every mutating sequence (create, delete, expand). */
  readonly hostLock: HostLock;
  readonly headerIo: HeaderIo;
  readonly naming?: Naming;
  /** Unix milliseconds, written as the header's createdAt; default Date.now. */
  readonly clock?: () => number;
  /** Deadline of each lvm command in milliseconds; default: the runner's. */
  readonly timeoutMs?: number;
  /** Deadline of a wipe (`blkdiscard`) in milliseconds; default one hour. */
  readonly wipeTimeoutMs?: number;
  /** Receives lvm's stderr of successful commands (warnings). */
  readonly logger?: WarnLogger;
  /** Where `sys/` and `proc/` are read to name the holders of an open LV; default `/`. */
  readonly hostRoot?: string;
}

/** A create request (DESIGN.md §5). Sizes in bytes of capacity (the data area). */
export interface CreateVolumeRequest {
  /** Volume name, 1–256 bytes of UTF-8 (DESIGN.md §3). */
  readonly name: string;
  /** Smallest acceptable capacity in bytes; 0 = not given (then limitBytes is). */
  readonly requiredBytes: number;
  /** Largest acceptable capacity in bytes; ≥ requiredBytes when given. */
  readonly limitBytes?: number;
  /**
   * Smallest capacity the volume's filesystem can be made on, in bytes
   * (FILESYSTEM_MINIMUM_BYTES); default 0 (raw block).
   */
  readonly minimumBytes?: number;
  readonly vgName: string;
  /**
   * Further volume groups searched for an existing LV of this volume (the
   * driver's other device classes), so that a create never makes a second
   * copy; `vgName` is always searched. Default: none.
   */
  readonly otherVgNames?: readonly string[];
  /** 32 hex digits; STANDALONE_OWNER_ID for standalone use. */
  readonly ownerId: string;
}

/** Options of deleteVolume. */
export interface DeleteVolumeOptions {
  readonly wipe?: WipePolicy;
  /**
   * Skip the ownership checks (lvstamp tag, owner tag, header with matching
   * ID and owner): an operator's explicit override (`--force-unowned`). The
   * scope, the name prefix and the "not open" check still apply.
   */
  readonly forceUnowned?: boolean;
}

/** What deleteVolume found and did. */
export interface DeleteVolumeResult {
  /** False when no LV of this volume ID existed: the delete already happened. */
  readonly existed: boolean;
  /** `vg/lv` of every LV removed, in order. */
  readonly removed: readonly string[];
}

/**
 * The LVM device manager (DESIGN.md §2, §5). Keeps no state:
 * every call asks lvm with one targeted JSON report per look-up. Mutating
 * sequences run under the per-volume in-process mutex and the host lock.
 *
 * Absence is only ever an empty selection (`-S`) from a command that exited
 * 0; any non-zero exit is an error, even with a valid empty report on stdout
 * (FACTS.md: `lvs VG/X` exits 5 both for "absent" and for real failures).
 */
export class LvmManager {
  readonly #runner: CommandRunner;
  readonly #hostLock: HostLock;
  readonly #headerIo: HeaderIo;
  readonly #naming: Naming;
  readonly #clock: () => number;
  readonly #timeoutMs: number | undefined;
  readonly #wipeTimeoutMs: number;
  readonly #logger: WarnLogger | undefined;
  readonly #hostRoot: string | undefined;
  readonly #volumeLocks = new KeyedMutex();

  constructor(options: LvmManagerOptions) {
    this.#runner = options.runner;
    this.#hostLock = options.hostLock;
    this.#headerIo = options.headerIo;
    this.#naming = options.naming ?? DEFAULT_NAMING;
    this.#clock = options.clock ?? Date.now;
    this.#timeoutMs = options.timeoutMs;
    this.#wipeTimeoutMs = options.wipeTimeoutMs ?? DEFAULT_WIPE_TIMEOUT_MS;
    this.#logger = options.logger;
    this.#hostRoot = options.hostRoot;
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

  // ---- volume groups --------------------------------------------------------

  /**
   * Every volume group on the host (`vgs`), sizes in bytes.
   * @throws CommandFailedError, CommandTimeoutError, UnparseableOutputError.
   */
  async listVolumeGroups(): Promise<VolumeGroup[]> {
    return this.#vgs(null);
  }

  /**
   * One volume group, selected with `-S vg_name="<name>"`, that can take
   * new volumes (docs/LVM-CONFIG.md, "Broken volume groups"): its `vg_attr`
   * shows no missing PV, read-only, exported or shared state, and none of
   * its PVs is one lvm warns it sees on two devices (then one `pvs` selected
   * by the group tells which PVs are its own). When the selection is empty,
   * one `vgs --shared` tells a shared group (which lvm skips silently
   * without lvmlockd) from a missing one.
   * @throws InvalidArgumentError for a name lvm cannot hold (lvm(8) "VALID NAMES").
   * @throws NotFoundError only when the selection succeeded and is empty.
   * @throws VolumeGroupUnusableError when the group exists but is broken.
   * @throws CommandFailedError, CommandTimeoutError, UnparseableOutputError.
   */
  async getVolumeGroup(vgName: string): Promise<VolumeGroup> {
    validateVgName(vgName);
    const { groups, stderr } = await this.#vgsReport(vgName, []);
    const [vg, ...more] = groups;
    if (vg === undefined) {
      const shared = await this.#vgsReport(vgName, ['--shared']);
      if (shared.groups.length > 0) {
        throw new VolumeGroupUnusableError(
          vgName,
          'shared',
          `vg_attr ${shared.groups.map((g) => g.attr).join(', ')}: lvm skips a shared group on a node without lvmlockd`,
        );
      }
      throw new NotFoundError(`volume group ${vgName} does not exist`);
    }
    if (more.length > 0)
      throw new FailedPreconditionError(`${more.length + 1} volume groups are named ${vgName}`);
    const [problem] = problemsOfVgAttr(vg.attr);
    if (problem !== undefined) {
      const said = lvmMessage(stderr);
      throw new VolumeGroupUnusableError(
        vgName,
        problem,
        `vg_attr ${vg.attr}${said === '' ? '' : `; ${said}`}`,
      );
    }
    const duplicates = duplicatePvUuids(stderr);
    if (duplicates.length > 0) {
      const argv = ['pvs', ...REPORT_OPTIONS, '-o', 'pv_uuid', '-S', `vg_name="${vgName}"`];
      const own = parsePvUuids(await this.#lvm(argv));
      if (duplicates.some((uuid) => own.includes(uuid))) {
        throw new VolumeGroupUnusableError(vgName, 'duplicate-pv', lvmMessage(stderr));
      }
    }
    return vg;
  }

  /**
   * Free space of a volume group in bytes; `maximumVolumeBytes` is the
   * largest capacity a new volume can get: all free extents minus the data
   * offset, in whole 4 KiB blocks (DESIGN.md §4), never negative.
   * @throws as getVolumeGroup.
   */
  async capacity(vgName: string): Promise<VolumeGroupCapacity> {
    const vg = await this.getVolumeGroup(vgName);
    const usableBytes = Math.floor(vg.freeBytes / vg.extentSizeBytes) * vg.extentSizeBytes;
    return {
      vgName: vg.name,
      totalBytes: vg.sizeBytes,
      freeBytes: vg.freeBytes,
      maximumVolumeBytes: Math.max(
        Math.floor((usableBytes - DATA_OFFSET_BYTES) / CAPACITY_BLOCK_BYTES) * CAPACITY_BLOCK_BYTES,
        0,
      ),
    };
  }

  // ---- listing --------------------------------------------------------------

  /**
   * Every LV whose name starts with the lvstamp prefix, well-formed or not
   * (the GC reports the malformed ones), in the volume groups of `scope`
   * only (DESIGN.md §2.3): one `vgs` and one `lvs` selected with
   * `(vg_name="a" || …) && lv_name=~"^<prefix>"`, run at once. A scope VG
   * that does not exist holds nothing.
   * @throws InvalidArgumentError for a bad VG name.
   * @throws FailedPreconditionError when lvm sees two volume groups with one
   *   of the names (a copy, or a volume group nested in a volume), naming
   *   both vg_uuids.
   * @throws CommandFailedError, CommandTimeoutError, UnparseableOutputError.
   */
  async listPrefixedLogicalVolumes(scope: VgScope): Promise<LogicalVolume[]> {
    const selection = `lv_name=~"^${escapeRegex(commonPrefix(this.#naming))}"`;
    const { lvs } = await this.#lvsInScope(scope.vgNames, selection);
    const { lvPrefix, newLvPrefix } = this.#naming;
    return lvs.filter((lv) => lv.lvName.startsWith(lvPrefix) || lv.lvName.startsWith(newLvPrefix));
  }

  /**
   * lvstamp volumes in the scope's volume groups: LVs named `lvstamp_<id>`
   * and `lvstamp_new_<id>` (creating = true), each with its capacity from
   * its header (one sector-0 read in-process per active volume; DESIGN.md
   * §4 "Capacity").
   * @throws as listPrefixedLogicalVolumes.
   */
  async listVolumes(scope: VgScope): Promise<Volume[]> {
    const lvs = await this.listPrefixedLogicalVolumes(scope);
    const volumes = lvs.flatMap((lv) => {
      const volume = this.#toVolume(lv);
      return volume === null ? [] : [volume];
    });
    return Promise.all(volumes.map((v) => this.#withCapacity(v)));
  }

  /**
   * The volume groups the CLI and the GC job look in when none is named
   * (DESIGN.md §2.3): those tagged `lvstamp` and those holding an LV tagged
   * `lvstamp` with the lvstamp name prefix, sorted, each once; minus every
   * volume group with a physical volume on an lvstamp data device
   * (`/dev/mapper/<dmNamePrefix>…`: a tenant's LVM inside a volume, seen when
   * no device filter hides it). Read-only: one `vgs`, one `lvs` and one
   * `pvs` over every volume group, at once.
   * @throws CommandFailedError, CommandTimeoutError, UnparseableOutputError.
   */
  async discoverVolumeGroups(): Promise<string[]> {
    const prefix = `lv_name=~"^${escapeRegex(commonPrefix(this.#naming))}"`;
    const pvsArgv = ['pvs', ...REPORT_OPTIONS, '-o', PV_REPORT_FIELDS.join(',')];
    const [vgs, lvs, pvs] = await Promise.all([
      this.#vgs(null),
      this.#lvs(prefix, null),
      this.#lvm(pvsArgv).then((result) => parsePvsReport(result.stdout, result.argv)),
    ]);
    const tag = this.#naming.tag;
    const nested = new Set(
      pvs
        .filter((pv) => pv.pvName.startsWith(`/dev/mapper/${this.#naming.dmNamePrefix}`))
        .map((pv) => pv.vgName),
    );
    const names = new Set([
      ...vgs.filter((vg) => vg.tags.includes(tag)).map((vg) => vg.name),
      ...lvs.filter((lv) => lv.tags.includes(tag)).map((lv) => lv.vgName),
    ]);
    return [...names].filter((name) => !nested.has(name)).sort();
  }

  /**
   * The finished volume `lvstamp_<volumeId>` in the scope's volume groups,
   * or null. An interrupted create (`lvstamp_new_<id>` only) is not a
   * volume: null.
   * @throws InvalidArgumentError when volumeId is not 32 lowercase hex digits.
   * @throws FailedPreconditionError when several VGs hold the volume, or
   *   lvm sees two volume groups with one name.
   * @throws CommandFailedError, CommandTimeoutError, UnparseableOutputError.
   */
  async findVolume(volumeId: string, scope: VgScope): Promise<Volume | null> {
    validateVolumeId(volumeId);
    const { finished } = await this.#lookup(volumeId, scope.vgNames);
    const volume = this.#single(volumeId, finished);
    return volume === null ? null : this.#withCapacity(volume);
  }

  /**
   * As findVolume, but a missing volume is an error.
   * @throws NotFoundError when no VG of the scope holds `lvstamp_<volumeId>`.
   */
  async getVolume(volumeId: string, scope: VgScope): Promise<Volume> {
    const volume = await this.findVolume(volumeId, scope);
    if (volume === null) throw new NotFoundError(`volume ${volumeId} does not exist`);
    return volume;
  }

  /**
   * The finished volume, active: an inactive LV (a reboot without
   * auto-activation, an admin's `vgchange -an`) is activated with
   * `lvchange --activate y <vg>/<lv>` (lvchange(8)), only this LV and only
   * after its tags prove it is this owner's (DESIGN.md §2.3), under the
   * host lock. The header is the caller's to check.
   * @throws NotFoundError when the scope holds no such volume.
   * @throws NotOwnedError when an inactive LV lacks the tags.
   * @throws as findVolume; CommandFailedError, LockTimeoutError.
   */
  async activateVolume(volumeId: string, scope: VolumeScope): Promise<Volume> {
    const volume = await this.getVolume(volumeId, scope);
    if (isActive(volume)) return volume;
    const ownerId = parseOwnerId(scope.ownerId);
    return this.#volumeLocks.run(volumeId, () =>
      this.#hostLock.withLock(`activate ${volumeId}`, async () => {
        const again = await this.getVolume(volumeId, scope);
        return this.#activateOwned(again, ownerId);
      }),
    );
  }

  /**
   * Activates every inactive lvstamp LV of the scope that carries the
   * lvstamp tag and this owner's tag (the GC inventory needs to read their
   * headers): one `lvchange --activate y <vg>/<lv>` per LV under the host
   * lock; never a VG-wide activation. LVs without the tags stay inactive.
   * @returns `vg/lv` of each LV activated.
   * @throws as listVolumes; CommandFailedError, LockTimeoutError.
   */
  async activateOwnedVolumes(scope: VolumeScope): Promise<string[]> {
    const ownerId = parseOwnerId(scope.ownerId);
    const inactive = (await this.listVolumes(scope)).filter(
      (v) => !isActive(v) && this.#ownershipByTags(v, ownerId) === null,
    );
    if (inactive.length === 0) return [];
    return this.#hostLock.withLock('activate inactive lvstamp volumes', async () => {
      // Re-listed under the lock: act only on what is inactive and owned right now.
      const now = (await this.listVolumes(scope)).filter(
        (v) => !isActive(v) && this.#ownershipByTags(v, ownerId) === null,
      );
      const activated: string[] = [];
      for (const volume of now) {
        await this.#lvm(['lvchange', '--activate', 'y', `${volume.vgName}/${volume.lvName}`]);
        activated.push(`${volume.vgName}/${volume.lvName}`);
      }
      return activated;
    });
  }

  // ---- create ---------------------------------------------------------------

  /**
   * Creates a volume with the DESIGN.md §5 protocol, idempotently: derive the
   * ID; an existing `lvstamp_<id>` with this name, owner and a compatible
   * capacity (≥ requiredBytes, ≤ limitBytes) in `vgName` is returned as is;
   * a leftover `lvstamp_new_<id>` in `vgName` is removed; `lvcreate` the LV
   * as `lvstamp_new_<id>` with the sizes of `volumeSize` (capacity in whole
   * 4 KiB blocks, at least minimumBytes; LV = 1 MiB data offset + capacity,
   * rounded up to the extent size); zero the first and last MiB of its data
   * area (a deleted volume's filesystem must not show through); write and
   * flush the header (v2, recording the capacity); rename to `lvstamp_<id>`. lvm processes: vgs and lvs
   * (look-up) at once, lvcreate, lvs (read-back: device path and size),
   * lvrename.
   *
   * @returns the volume: an existing one whole, a new one as CreatedVolume
   *   (lvrename changes only the name, so there is no second read-back).
   * @throws InvalidArgumentError for a bad name, size, limit, VG name or
   *   owner ID.
   * @throws OutOfRangeError when no capacity fits the range (volumeSize),
   *   checked before any lvm command.
   * @throws NotFoundError when the VG does not exist.
   * @throws AlreadyExistsError when the volume exists with another capacity,
   *   in another VG, with another owner or another name in its header.
   * @throws FailedPreconditionError when the existing LV is inactive or its
   *   header is not `ok` or carries another volume ID.
   * @throws OutOfSpaceError when the VG lacks the free extents.
   * @throws CommandFailedError, CommandTimeoutError, UnparseableOutputError,
   *   LockTimeoutError.
   */
  async createVolume(request: CreateVolumeRequest): Promise<CreatedVolume> {
    validateVolumeName(request.name);
    if (request.limitBytes !== undefined) validateBytes('limitBytes', request.limitBytes);
    // The range alone (any extent size): refused before any lvm command.
    volumeSize({ ...request, extentSizeBytes: CAPACITY_BLOCK_BYTES });
    validateVgName(request.vgName);
    const ownerId = parseOwnerId(request.ownerId);
    const volumeId = volumeIdForName(request.name);
    return this.#volumeLocks.run(volumeId, () =>
      this.#hostLock.withLock(`create ${volumeId}`, () => this.#create(request, volumeId, ownerId)),
    );
  }

  async #create(
    request: CreateVolumeRequest,
    volumeId: string,
    ownerId: string,
  ): Promise<CreatedVolume> {
    // Two read-only reports, run at once (lvm takes shared locks for both): the VGs' extent size
    // and free space, and the volume's LVs in the VGs searched.
    const vgNames = [request.vgName, ...(request.otherVgNames ?? [])];
    const [vg, { finished, pending }] = await Promise.all([
      this.getVolumeGroup(request.vgName),
      this.#lookup(volumeId, vgNames),
    ]);
    const existing = this.#single(volumeId, finished);
    if (existing !== null) {
      const adopted = await this.#adoptExisting(existing, request, volumeId, ownerId);
      return createdVolumeOf(adopted);
    }

    let freeBytes = vg.freeBytes;
    for (const leftover of pending) {
      if (leftover.vgName !== vg.name) {
        this.#logger?.warn(
          'leftover of an interrupted create in another volume group left for the GC',
          {
            volumeId,
            lv: `${leftover.vgName}/${leftover.lvName}`,
          },
        );
        continue;
      }
      this.#requireOwned(leftover, ownerId, 'remove');
      await this.#lvm(['lvremove', '--yes', `${leftover.vgName}/${leftover.lvName}`]);
      freeBytes += leftover.sizeBytes;
    }

    const { capacityBytes, lvSizeBytes } = volumeSize({
      ...request,
      extentSizeBytes: vg.extentSizeBytes,
    });
    if (lvSizeBytes > freeBytes) {
      throw new OutOfSpaceError(
        `volume group ${vg.name} has ${freeBytes} bytes free, volume ${volumeId} needs ${lvSizeBytes}`,
      );
    }

    const newLvName = newLvNameFor(volumeId, this.#naming);
    await this.#mapOutOfSpace(vg.name, () =>
      this.#lvm(
        lvcreateArgv({
          vgName: vg.name,
          lvName: newLvName,
          sizeBytes: lvSizeBytes,
          tags: [this.#naming.tag, ownerTagFor(ownerId, this.#naming)],
        }),
      ),
    );
    const created = await this.#readBack(vg.name, newLvName);
    if (created.dmPath === null) {
      throw new FailedPreconditionError(
        `lvcreate made ${vg.name}/${newLvName} but lvm reports no device path`,
      );
    }
    const header: HeaderFields = {
      volumeId,
      ownerId,
      createdAtMs: this.#clock(),
      dataOffsetBytes: DATA_OFFSET_BYTES,
      requestedBytes: capacityBytes,
      name: request.name,
    };
    // The extents may have held a deleted volume: its filesystem must not show through.
    await this.#headerIo.clearDataArea(created.dmPath, {
      dataOffsetBytes: DATA_OFFSET_BYTES,
      sizeBytes: DATA_OFFSET_BYTES + capacityBytes,
    });
    await this.#headerIo.writeHeader(created.dmPath, header);
    const finalLvName = lvNameFor(volumeId, this.#naming);
    await this.#lvm(['lvrename', '--yes', vg.name, newLvName, finalLvName]);
    // No read-back: lvrename changes nothing but the name, and callers need only these.
    return createdVolumeOf({ ...created, lvName: finalLvName, capacityBytes });
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
    const decoded = await this.#headerIo.readHeader(active.dmPath);
    if (decoded.status !== 'ok') {
      throw new FailedPreconditionError(
        `${where} exists but its header is ${decoded.status}: ${decoded.reason}`,
      );
    }
    const { header } = decoded;
    if (header.volumeId !== volumeId) {
      throw new FailedPreconditionError(`${where} holds a header for volume ${header.volumeId}`);
    }
    if (header.name !== request.name) {
      throw new AlreadyExistsError(
        `${where} belongs to volume "${header.name}", not "${request.name}"`,
      );
    }
    if (header.ownerId !== ownerId) {
      throw new AlreadyExistsError(`${where} belongs to owner ${header.ownerId}, not ${ownerId}`);
    }
    const capacityBytes = this.#capacityFrom(decoded, existing);
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

  // ---- delete ---------------------------------------------------------------

  /**
   * Removes `lvstamp_<id>` and any `lvstamp_new_<id>` in the scope's volume
   * groups; a volume already gone is success with `existed: false`
   * (DESIGN.md §5). Right before acting, under the host lock, every LV must
   * prove it is this owner's (DESIGN.md §2.3): the lvstamp tag and
   * `lvstamp.owner=<ownerId>`, and for the finished LV a valid header whose
   * volume ID matches the name and whose owner is `ownerId` (an inactive LV
   * is activated for that, `lvchange --activate y <vg>/<lv>`, after its tags
   * passed). A leftover `lvstamp_new_<id>` has no header yet (§5): tags only.
   * With wipe `discard` (`blkdiscard`) or `zero` (`blkdiscard --zeroout`)
   * the finished LV's blocks are wiped first, through the device path lvm
   * reports. The data-device map must already be removed by the caller.
   * Every check runs before the first act: a refusal removes nothing.
   * @param options.forceUnowned skips the tag, owner and header checks (never
   *   the scope, the name or the open check).
   * @throws InvalidArgumentError for a malformed volume ID, owner ID or wipe
   *   policy.
   * @throws NotOwnedError (a FailedPreconditionError) naming the LV and the
   *   failed check.
   * @throws FailedPreconditionError when an LV is open, or the volume exists
   *   in several volume groups of the scope (nothing is removed then).
   * @throws CommandFailedError, CommandTimeoutError, UnparseableOutputError,
   *   LockTimeoutError.
   */
  async deleteVolume(
    volumeId: string,
    scope: VolumeScope,
    options: DeleteVolumeOptions = {},
  ): Promise<DeleteVolumeResult> {
    validateVolumeId(volumeId);
    const ownerId = parseOwnerId(scope.ownerId);
    const wipe = options.wipe ?? 'none';
    if (!WIPE_POLICIES.includes(wipe)) {
      throw new InvalidArgumentError(`unknown wipe policy "${wipe}"`);
    }
    const force = options.forceUnowned === true;
    return this.#volumeLocks.run(volumeId, () =>
      this.#hostLock.withLock(`delete ${volumeId}`, async () => {
        const { finished, pending } = await this.#lookup(volumeId, scope.vgNames);
        if (finished.length + pending.length === 0) return { existed: false, removed: [] };
        // One volume is one LV: copies in several groups (a cloned or moved disk) are refused
        // like every other call refuses them, never all removed at once.
        this.#single(volumeId, finished);
        for (const lv of [...finished, ...pending]) {
          if (lv.open) {
            throw new FailedPreconditionError(
              `${await this.#openText(lv)}; unmount and detach it first`,
            );
          }
          if (!force) this.#requireOwned(lv, ownerId, 'delete');
        }
        // The finished LV's header (and a wipe) need it active; activation changes no data.
        const ready: Volume[] = [];
        for (const lv of finished) {
          const needsActive = !force || wipe !== 'none';
          const active = needsActive ? await this.#activateOwned(lv, ownerId, force) : lv;
          if (!force) await this.#requireHeader(active, ownerId, 'delete');
          ready.push(active);
        }
        const removed: string[] = [];
        for (const lv of [...ready, ...pending]) {
          if (wipe !== 'none' && !lv.creating && lv.dmPath !== null) {
            const argv =
              wipe === 'zero' ? ['blkdiscard', '--zeroout', lv.dmPath] : ['blkdiscard', lv.dmPath];
            await this.#run(argv, { timeoutMs: this.#wipeTimeoutMs });
          }
          const target = `${lv.vgName}/${lv.lvName}`;
          await this.#lvm(['lvremove', '--yes', target]);
          removed.push(target);
        }
        return { existed: true, removed };
      }),
    );
  }

  /**
   * Removes exactly one LV, named by VG, name and `lv_uuid` (the GC's
   * remover port, DESIGN.md §6): under the host lock, one `lvs` selected by
   * `lv_uuid` re-checks it (same VG and name, not open, and the lvstamp tag
   * and `lvstamp.owner=<ownerId>`, DESIGN.md §2.3), then `lvremove --yes
   * <vg>/<lv>`. An LV already gone is success. The header is the GC
   * executor's to re-check. The data-device map must already be gone.
   * @throws InvalidArgumentError for a bad VG name, an empty uuid or a bad
   *   owner ID.
   * @throws FailedPreconditionError when the uuid now has another name or VG,
   *   or the LV is open; NotOwnedError when it lacks the tags.
   * @throws CommandFailedError, CommandTimeoutError, UnparseableOutputError,
   *   LockTimeoutError.
   */
  async removeLogicalVolume(ref: {
    readonly vgName: string;
    readonly lvName: string;
    readonly lvUuid: string;
    readonly ownerId: string;
  }): Promise<void> {
    validateVgName(ref.vgName);
    const ownerId = parseOwnerId(ref.ownerId);
    if (!LV_UUID.test(ref.lvUuid))
      throw new InvalidArgumentError(`"${ref.lvUuid}" is not an lvm uuid`);
    return this.#hostLock.withLock(`remove ${ref.vgName}/${ref.lvName}`, async () => {
      const [lv, ...more] = await this.#lvs(`lv_uuid="${ref.lvUuid}"`, null);
      if (lv === undefined) return;
      if (more.length > 0 || lv.vgName !== ref.vgName || lv.lvName !== ref.lvName) {
        throw new FailedPreconditionError(
          `LV ${ref.lvUuid} is now ${lv.vgName}/${lv.lvName}, not ${ref.vgName}/${ref.lvName}; left alone`,
        );
      }
      if (lv.open) throw new FailedPreconditionError(`${await this.#openText(lv)}; left alone`);
      this.#requireOwned(lv, ownerId, 'remove');
      await this.#lvm(['lvremove', '--yes', `${lv.vgName}/${lv.lvName}`]);
    });
  }

  // ---- expand ---------------------------------------------------------------

  /**
   * Grows a volume so that its capacity is at least `requiredBytes`, to the
   * capacity of `volumeSize` (DESIGN.md §4 "Capacity", §5 "Expand"), crash-
   * safely: a v1 header is first rewritten as v2 with its current capacity;
   * `lvextend --yes -L <bytes>b` when the LV is smaller than the new size;
   * then the header is rewritten with the new capacity. Each step is skipped
   * when already done, so a retry after a crash converges. The caller
   * reloads the data device afterwards. A volume already large enough is
   * returned unchanged (CSI ControllerExpandVolume is idempotent). Looks in
   * the scope's volume groups only; before acting, under the host lock, the
   * LV proves it is this owner's (tags, then a valid header with its ID and
   * owner, DESIGN.md §2.3; an inactive LV is activated for that).
   * lvm processes: vgs and lvs, and when growing vgs and lvextend.
   * @returns the volume with its new size and capacity.
   * @throws NotOwnedError when an ownership check fails; nothing is changed.
   * @throws InvalidArgumentError for a malformed ID or size.
   * @throws OutOfRangeError when no capacity fits the range, or the capacity
   *   is already above `limitBytes` (lvstamp never shrinks).
   * @throws NotFoundError when the volume does not exist.
   * @throws FailedPreconditionError when the LV is inactive or its header is
   *   not `ok`, carries another volume ID, or does not fit the LV.
   * @throws OutOfSpaceError when the VG lacks the extents.
   * @throws CommandFailedError, CommandTimeoutError, UnparseableOutputError,
   *   LockTimeoutError.
   */
  async expandVolume(
    volumeId: string,
    requiredBytes: number,
    scope: VolumeScope,
    options: { readonly limitBytes?: number } = {},
  ): Promise<Volume> {
    validateVolumeId(volumeId);
    const ownerId = parseOwnerId(scope.ownerId);
    validateBytes('requiredBytes', requiredBytes);
    const { limitBytes } = options;
    if (limitBytes !== undefined) validateBytes('limitBytes', limitBytes);
    // The range alone (any extent size): refused before any lvm command.
    volumeSize({ requiredBytes, limitBytes, extentSizeBytes: CAPACITY_BLOCK_BYTES });
    return this.#volumeLocks.run(volumeId, () =>
      this.#hostLock.withLock(`expand ${volumeId}`, async () => {
        const { finished } = await this.#lookup(volumeId, scope.vgNames);
        const found = this.#single(volumeId, finished);
        if (found === null) throw new NotFoundError(`volume ${volumeId} does not exist`);
        const volume = await this.#activateOwned(found, ownerId);
        const decoded = await this.#requireHeader(volume, ownerId, 'resize');
        const where = `${volume.vgName}/${volume.lvName}`;
        const dmPath = volume.dmPath ?? '';
        const current = this.#capacityFrom(decoded, volume);
        if (limitBytes !== undefined && current > limitBytes) {
          throw new OutOfRangeError(
            `volume ${volumeId} has ${current} bytes, above limitBytes ${limitBytes}; volumes never shrink`,
          );
        }
        if (current >= requiredBytes) return { ...volume, capacityBytes: current };
        const vg = await this.getVolumeGroup(volume.vgName);
        const { capacityBytes, lvSizeBytes } = volumeSize({
          requiredBytes,
          limitBytes,
          extentSizeBytes: vg.extentSizeBytes,
        });
        const header = decoded.header;
        let grown: Volume = volume;
        if (volume.sizeBytes < lvSizeBytes) {
          const growBytes = lvSizeBytes - volume.sizeBytes;
          if (growBytes > vg.freeBytes) {
            throw new OutOfSpaceError(
              `volume group ${vg.name} has ${vg.freeBytes} bytes free, growing volume ${volumeId} needs ${growBytes}`,
            );
          }
          // v1 means "the whole LV": pin today's capacity first, so the grown LV does not grow it.
          if (decoded.version === 1) {
            await this.#headerIo.writeHeader(dmPath, { ...header, requestedBytes: current });
          }
          await this.#mapOutOfSpace(vg.name, () =>
            this.#lvm(['lvextend', '--yes', '-L', `${lvSizeBytes}b`, where]),
          );
          // -L of whole extents is exact; the device path and number do not change.
          grown = { ...volume, sizeBytes: lvSizeBytes };
        }
        await this.#headerIo.writeHeader(dmPath, {
          ...header,
          requestedBytes: capacityBytes,
        });
        return { ...grown, capacityBytes };
      }),
    );
  }

  // ---- helpers --------------------------------------------------------------

  async #vgs(vgName: string | null): Promise<VolumeGroup[]> {
    return this.#vgsSelected(vgName === null ? null : `vg_name="${vgName}"`);
  }

  async #vgsSelected(selection: string | null): Promise<VolumeGroup[]> {
    const argv = ['vgs', ...REPORT_OPTIONS, '-o', VG_REPORT_FIELDS.join(',')];
    if (selection !== null) argv.push('-S', selection);
    const result = await this.#lvm(argv);
    return parseVgsReport(result.stdout, result.argv);
  }

  /** One group's `vgs` report (with `extra` options) and lvm's warnings. */
  async #vgsReport(
    vgName: string,
    extra: readonly string[],
  ): Promise<{ groups: VolumeGroup[]; stderr: string }> {
    const argv = ['vgs', ...extra, ...REPORT_OPTIONS, '-o', VG_REPORT_FIELDS.join(',')];
    argv.push('-S', `vg_name="${vgName}"`);
    const result = await this.#lvm(argv);
    return { groups: parseVgsReport(result.stdout, result.argv), stderr: result.stderr };
  }

  async #lvs(selection: string, vgName: string | null): Promise<LogicalVolume[]> {
    const argv = [
      'lvs',
      ...REPORT_OPTIONS,
      ...LV_TIME_CONFIG,
      '-o',
      LV_REPORT_FIELDS.join(','),
      '-S',
      selection,
    ];
    if (vgName !== null) argv.push(vgName);
    const result = await this.#lvm(argv);
    return parseLvsReport(result.stdout, result.argv);
  }

  /**
   * The VGs of the scope that exist (`vgs -S 'vg_name="a" || …'`) and the
   * LVs matching `selection` in them (`lvs -S '(vg_name="a" || …) &&
   * (<selection>)'`), both at once. lvm2 lists two volume groups that share
   * a name side by side (a copy, or a tenant's VG nested in a volume when no
   * device filter hides it): lvstamp then acts on neither.
   */
  async #lvsInScope(
    vgNames: readonly string[],
    selection: string,
  ): Promise<{ groups: VolumeGroup[]; lvs: LogicalVolume[] }> {
    for (const name of vgNames) validateVgName(name);
    const names = [...new Set(vgNames)];
    if (names.length === 0) return { groups: [], lvs: [] };
    const inGroups = names.map((name) => `vg_name="${name}"`).join(' || ');
    const [vgs, lvs] = await Promise.all([
      this.#vgsSelected(inGroups),
      this.#lvs(`(${inGroups}) && (${selection})`, null),
    ]);
    for (const name of names) {
      const same = vgs.filter((vg) => vg.name === name);
      if (same.length > 1) {
        throw new FailedPreconditionError(
          `lvm sees ${same.length} volume groups named ${name} (vg_uuid ${same.map((vg) => vg.uuid).join(' and ')}): ` +
            'a copy, or a volume group inside a volume; lvstamp acts on neither until lvm sees one (an lvm device filter, docs/DESIGN.md §2.3)',
        );
      }
    }
    const found = new Set(vgs.map((vg) => vg.name));
    return { groups: vgs, lvs: lvs.filter((lv) => found.has(lv.vgName)) };
  }

  /** Both LVs a volume ID can have, in the scope's VGs, and those VGs. */
  async #lookup(
    volumeId: string,
    vgNames: readonly string[],
  ): Promise<{ finished: Volume[]; pending: Volume[]; groups: VolumeGroup[] }> {
    const finalName = lvNameFor(volumeId, this.#naming);
    const newName = newLvNameFor(volumeId, this.#naming);
    const { groups, lvs } = await this.#lvsInScope(
      vgNames,
      `lv_name="${finalName}" || lv_name="${newName}"`,
    );
    const volumes = lvs.map((lv) => this.#volumeOrThrow(lv));
    return {
      finished: volumes.filter((v) => v.lvName === finalName),
      pending: volumes.filter((v) => v.lvName === newName),
      groups,
    };
  }

  /** Null when the LV carries the lvstamp tag and this owner's tag, else the failed check. */
  #ownershipByTags(lv: LogicalVolume, ownerId: string): [OwnershipCheck, string] | null {
    const tags = lv.tags.length === 0 ? 'none' : lv.tags.join(',');
    if (!lv.tags.includes(this.#naming.tag))
      return ['tag', `it lacks the tag ${this.#naming.tag} (tags: ${tags})`];
    const ownerTag = ownerTagFor(ownerId, this.#naming);
    if (!lv.tags.includes(ownerTag))
      return ['owner-tag', `it lacks the owner tag ${ownerTag} (tags: ${tags})`];
    return null;
  }

  /** Throws NotOwnedError unless the LV carries the lvstamp tag and this owner's tag. */
  #requireOwned(lv: LogicalVolume, ownerId: string, act: string): void {
    const failed = this.#ownershipByTags(lv, ownerId);
    if (failed !== null) {
      const [check, detail] = failed;
      throw new NotOwnedError(`${lv.vgName}/${lv.lvName}`, check, `refusing to ${act}: ${detail}`);
    }
  }

  /**
   * The valid header of the active LV, whose volume ID matches its name and
   * whose owner is `ownerId`.
   * @throws NotOwnedError naming the failed check otherwise.
   */
  async #requireHeader(
    volume: Volume,
    ownerId: string,
    act: string,
  ): Promise<DecodeResult & { status: 'ok' }> {
    const where = `${volume.vgName}/${volume.lvName}`;
    const refuse = (check: OwnershipCheck, detail: string): never => {
      throw new NotOwnedError(where, check, `refusing to ${act}: ${detail}`);
    };
    if (!isActive(volume) || volume.dmPath === null) refuse('header', 'its header cannot be read');
    const decoded = await this.#headerIo.readHeader(volume.dmPath ?? '');
    if (decoded.status !== 'ok') return refuse('header', `its header is ${decoded.status}`);
    if (decoded.header.volumeId !== volume.volumeId)
      refuse('header-id', `its header belongs to volume ${decoded.header.volumeId}`);
    if (decoded.header.ownerId !== ownerId)
      refuse('header-owner', `its header names owner ${decoded.header.ownerId}, not ${ownerId}`);
    return decoded;
  }

  /**
   * The LV, active: an inactive one is activated with `lvchange --activate y
   * <vg>/<lv>` (lvchange(8); this LV only) once its tags prove it is
   * `ownerId`'s (or when `force`), then read back. Caller holds the host lock.
   */
  async #activateOwned(volume: Volume, ownerId: string, force = false): Promise<Volume> {
    if (isActive(volume)) return volume;
    if (!force) this.#requireOwned(volume, ownerId, 'activate');
    await this.#lvm(['lvchange', '--activate', 'y', `${volume.vgName}/${volume.lvName}`]);
    return this.#readBack(volume.vgName, volume.lvName);
  }

  /** The one LV named `lvName` in `vgName`, right after a change. */
  async #readBack(vgName: string, lvName: string): Promise<Volume> {
    const lvs = await this.#lvs(`lv_name="${lvName}"`, vgName);
    const [lv, ...more] = lvs;
    if (lv === undefined || more.length > 0) {
      throw new FailedPreconditionError(
        `expected one LV ${vgName}/${lvName} after the change, lvs listed ${lvs.length}`,
      );
    }
    return this.#volumeOrThrow(lv);
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
    const parsed = parseLvName(lv.lvName, this.#naming);
    if (parsed === null) return null;
    return { ...lv, volumeId: parsed.volumeId, creating: parsed.creating, capacityBytes: null };
  }

  /**
   * The volume with its capacity from its header (capacityOf); null when the
   * LV is inactive, still being created, or its header is unreadable, not
   * `ok`, of another volume or does not fit the LV. Never throws.
   */
  async #withCapacity(volume: Volume): Promise<Volume> {
    if (volume.creating || !volume.active || volume.dmPath === null) return volume;
    try {
      const decoded = await this.#headerIo.readHeader(volume.dmPath);
      if (decoded.status !== 'ok' || decoded.header.volumeId !== volume.volumeId) return volume;
      return {
        ...volume,
        capacityBytes: capacityOf(
          { version: decoded.version, ...decoded.header },
          volume.sizeBytes,
        ),
      };
    } catch {
      return volume;
    }
  }

  /**
   * The capacity an `ok` header gives the volume (capacityOf).
   * @throws FailedPreconditionError when it does not fit the LV.
   */
  #capacityFrom(decoded: DecodeResult & { status: 'ok' }, volume: Volume): number {
    const capacity = capacityOf({ version: decoded.version, ...decoded.header }, volume.sizeBytes);
    if (capacity === null) {
      throw new FailedPreconditionError(
        `${volume.vgName}/${volume.lvName}: its v${decoded.version} header (data offset ${decoded.header.dataOffsetBytes}, capacity ${decoded.header.requestedBytes}) does not fit its ${volume.sizeBytes}-byte LV`,
      );
    }
    return capacity;
  }

  #volumeOrThrow(lv: LogicalVolume): Volume {
    const volume = this.#toVolume(lv);
    if (volume === null)
      throw new FailedPreconditionError(`${lv.vgName}/${lv.lvName} is not an lvstamp volume name`);
    return volume;
  }

  /** Runs a change of `vgName`; lvm's "no space" and broken-group failures become typed errors. */
  async #mapOutOfSpace<T>(vgName: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      if (
        error instanceof CommandFailedError &&
        /insufficient free (space|extents)/i.test(error.stderr)
      ) {
        throw new OutOfSpaceError(`volume group ${vgName}: ${CommandFailedError.describe(error)}`, {
          cause: error,
        });
      }
      throw classifyLvmFailure(vgName, error);
    }
  }

  /** An lvm command with the manager's deadline. */
  async #lvm(argv: readonly string[]): Promise<CommandResult> {
    return this.#run(argv, this.#timeoutMs === undefined ? {} : { timeoutMs: this.#timeoutMs });
  }

  async #run(argv: readonly string[], options: RunOptions): Promise<CommandResult> {
    const result = await this.#runner.run(argv, options);
    if (result.stderr.trim() !== '') {
      this.#logger?.warn('command succeeded with output on stderr', {
        argv: result.argv,
        stderr: result.stderr,
      });
    }
    return result;
  }
}

/** Active in the kernel with a device lvm reports (an inactive LV keeps its lv_dm_path). */
function isActive(lv: LogicalVolume): boolean {
  return lv.active && lv.kernelMajor !== null;
}

// lvm uuids: 32 alphanumerics in groups joined by '-'.
const LV_UUID = /^[A-Za-z0-9]+(-[A-Za-z0-9]+)*$/;

/** The wipe policies deleteVolume knows; callers in plain JS may pass anything. */
const WIPE_POLICIES: readonly string[] = ['none', 'discard', 'zero'];

// lvm(8) "VALID NAMES": up to 127 characters of a-z A-Z 0-9 + _ . -, not
// starting with '-', and not '.' or '..'.
const VG_NAME = /^[A-Za-z0-9+_.][A-Za-z0-9+_.-]{0,126}$/;

function validateVgName(vgName: string): void {
  if (!VG_NAME.test(vgName) || vgName === '.' || vgName === '..') {
    throw new InvalidArgumentError(
      `"${vgName}" is not a valid volume group name (lvm(8) VALID NAMES)`,
    );
  }
}

function validateVolumeId(volumeId: string): void {
  if (!isHexId(volumeId))
    throw new InvalidArgumentError(`volume ID must be 32 lowercase hex digits, got "${volumeId}"`);
}

function validateBytes(field: string, bytes: number): void {
  if (!Number.isSafeInteger(bytes) || bytes <= 0) {
    throw new InvalidArgumentError(
      `${field} must be a positive whole number of bytes, got ${bytes}`,
    );
  }
}

/**
 * The argv that makes the LV of a new volume (lvcreate(8)): signatures
 * wiped and the first 4 KiB zeroed (`--wipesignatures y --zero y`),
 * activated, exactly `sizeBytes` (a multiple of the extent size), with the
 * given tags. The benchmarks run the same argv as the bare baseline.
 */
export function lvcreateArgv(request: {
  readonly vgName: string;
  readonly lvName: string;
  readonly sizeBytes: number;
  readonly tags: readonly string[];
}): string[] {
  return [
    'lvcreate',
    '--yes',
    '--wipesignatures',
    'y',
    '--zero',
    'y',
    '--activate',
    'y',
    '-n',
    request.lvName,
    '-L',
    `${request.sizeBytes}b`,
    ...request.tags.flatMap((tag) => ['--addtag', tag]),
    request.vgName,
  ];
}

/** The CreatedVolume fields of a volume: a new and an adopted volume answer alike. */
function createdVolumeOf(volume: CreatedVolume): CreatedVolume {
  const { volumeId, vgName, lvName, sizeBytes, capacityBytes } = volume;
  return { volumeId, vgName, lvName, sizeBytes, capacityBytes };
}

/**
 * The `pv_uuid` values of a `pvs --reportformat json -o pv_uuid` report.
 * @throws UnparseableOutputError when stdout is not that report.
 */
function parsePvUuids(result: CommandResult): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(result.stdout);
  } catch {
    throw new UnparseableOutputError(result, 'not a JSON report');
  }
  const rows = (parsed as { report?: { pv?: { pv_uuid?: unknown }[] }[] }).report?.[0]?.pv;
  if (!Array.isArray(rows) || rows.some((row) => typeof row.pv_uuid !== 'string')) {
    throw new UnparseableOutputError(result, 'expected {"report":[{"pv":[{"pv_uuid":...}]}]}');
  }
  return rows.map((row) => String(row.pv_uuid));
}

/** The longest prefix shared by the finished and the in-progress LV prefixes. */
function commonPrefix(naming: Naming): string {
  const a = naming.lvPrefix;
  const b = naming.newLvPrefix;
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i += 1;
  return a.slice(0, i);
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
