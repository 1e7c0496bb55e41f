import type { DataDeviceManager } from '../device/data-device.js';
import {
  AlreadyExistsError,
  CommandFailedError,
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  NotOwnedError,
  OutOfRangeError,
  OutOfSpaceError,
  ThinPoolUnusableError,
} from '../errors.js';
import { runLogged } from '../exec/logged.js';
import type { FilesystemManager } from '../fs/filesystem.js';
import { DATA_OFFSET_BYTES } from '../header/constants.js';
import type { DecodeResult, HeaderFields } from '../header/types.js';
import type { ThinProvisioning } from '../provisioning.js';
import { isThinLv } from '../lvm/thin-snapshots.js';
import type { CreatedVolume, LogicalVolume, VolumeScope } from '../lvm/types.js';
import { validateVgName } from '../lvm/volume-groups.js';
import {
  fromTagFor,
  isHexId,
  lvDmName,
  lvNameFor,
  newLvNameFor,
  ownerTagFor,
  parseFromTag,
  parseOwnerId,
  parseSnapshotLvName,
  parseSnapshotTags,
  snapshotIdForName,
  snapshotLvNameFor,
  snapshotTagsFor,
  validateVolumeName,
  volumeIdForName,
} from '../naming.js';
import { withDefaults, type ResolvedServiceParts, type ServiceParts } from './parts.js';
import { resolveRef } from './resolve-ref.js';
import {
  failedHeaderCheck,
  failedTagCheck,
  isActive,
  ownedHeaderOf,
  requireCapacity,
  requireOwnerHeader,
  requireOwnerTags,
} from './ownership.js';
import { CAPACITY_BLOCK_BYTES, volumeSize } from './size.js';
import { thinAdmits, thinPoolCapacity } from './thin-capacity.js';

/** Deadline of one `fsfreeze` in milliseconds (a freeze waits for dirty data to reach the disk). */
export const FREEZE_TIMEOUT_MS = 120_000;

/** A snapshot of a volume (docs/DESIGN.md §3, §5 "Snapshots"). */
export interface Snapshot {
  /** 32 hex digits: SHA-256 of the snapshot name, first 16 bytes. */
  readonly snapshotId: string;
  readonly vgName: string;
  /** `lvstamp_snap_<snapshotId>`. */
  readonly lvName: string;
  /** The volume it was taken of (`lvstamp.source`); that volume may be gone since. */
  readonly sourceVolumeId: string;
  /** The source's capacity at snapshot time, in bytes (`lvstamp.size`). */
  readonly sizeBytes: number;
  /** When lvstamp took it, Unix milliseconds (`lvstamp.created`). */
  readonly createdMs: number;
}

/** Where a restored or cloned volume's data comes from. */
export interface ContentSource {
  readonly kind: 'snapshot' | 'volume';
  /** The snapshot ID or the volume ID, 32 hex digits. */
  readonly id: string;
}

/** A create from a content source (docs/DESIGN.md §5 "Restore and clone"). */
export interface CreateVolumeFromRequest {
  /** Volume name, 1–128 bytes of UTF-8 (DESIGN.md §3). */
  readonly name: string;
  readonly source: ContentSource;
  /** Smallest capacity in bytes; 0 = the source's capacity. Below the source's → OutOfRangeError. */
  readonly requiredBytes: number;
  /** Largest capacity in bytes; undefined or 0 = no limit. */
  readonly limitBytes?: number;
  /** Smallest capacity the volume's filesystem can be made on, in bytes; default 0. */
  readonly minimumBytes?: number;
  /** The new volume's group: it must be the source's (a thin copy lives in its origin's pool). */
  readonly vgName: string;
  /** Every group searched for the source and for an existing LV of the new volume. */
  readonly scope: VolumeScope;
  /**
   * The target class's pool: the source must be a thin LV of it, and the
   * pool's budget must admit the copy (DESIGN.md §4 "Thin capacity"). Null:
   * not checked (standalone use, where no class names a pool).
   */
  readonly thin?: ThinProvisioning | null;
}

/**
 * A thick (non-thin) LV was asked to be snapshotted or copied: lvstamp
 * makes no block copies (docs/DESIGN.md §5 "Snapshots").
 */
export class ThickVolumeError extends InvalidArgumentError {
  /** `vg/lv` of the thick LV. */
  readonly lv: string;
  readonly vgName: string;

  constructor(what: string, lv: LogicalVolume) {
    super(
      `${what} is the thick logical volume ${lv.vgName}/${lv.lvName}; snapshots and clones need a thin class (docs/DESIGN.md §5)`,
    );
    this.lv = `${lv.vgName}/${lv.lvName}`;
    this.vgName = lv.vgName;
  }
}

/** Dependencies of a SnapshotService (ServiceParts). */
export type SnapshotServiceOptions = ServiceParts<
  Pick<DataDeviceManager, 'find' | 'list'>,
  Pick<FilesystemManager, 'mounts'>
>;

/**
 * Thin snapshots, restore and clone (docs/DESIGN.md §3, §5): every act under
 * the host lock, every destructive act after both ownership signals
 * (DESIGN.md §2.3). Keeps no state. Not serialised per snapshot:
 * createNodeServices wraps it in withVolumeLocks (SNAPSHOT_SERVICE_KEYS).
 */
export class SnapshotService {
  readonly #p: ResolvedServiceParts<
    SnapshotServiceOptions['dataDevices'],
    SnapshotServiceOptions['filesystems']
  >;

  constructor(options: SnapshotServiceOptions) {
    this.#p = withDefaults(options);
  }

  // ---- create ---------------------------------------------------------------

  /**
   * Takes a snapshot of a thin volume (docs/DESIGN.md §5 "Snapshots"),
   * idempotently, under the host lock: one look-up (`vgs`, `lvs`) of
   * `lvstamp_snap_<sid>` and `lvstamp_<vid>`; an existing snapshot of the
   * same source is returned as it is; the source's tags, thin type and
   * header (ok, this owner, its ID) are checked; a filesystem mounted from
   * its data device is frozen (`fsfreeze -f`) around one `lvcreate -s -pr`
   * carrying every tag, and thawed in a `finally`.
   * @throws InvalidArgumentError for a bad name, group name or owner ID;
   *   ThickVolumeError (an InvalidArgumentError) for a thick source.
   * @throws NotFoundError when the source is malformed, absent, or lacks this
   *   owner's tags.
   * @throws AlreadyExistsError when the snapshot exists for another source.
   * @throws FailedPreconditionError when the source's header is not its own
   *   valid header of this owner, or an LV exists in several groups;
   *   NotOwnedError when the snapshot LV lacks this owner's tags.
   * @throws OutOfSpaceError (the pool is full); CommandFailedError,
   *   CommandTimeoutError, UnparseableOutputError, LockTimeoutError.
   */
  async createSnapshot(request: {
    readonly name: string;
    readonly sourceVolumeId: string;
    readonly scope: VolumeScope;
  }): Promise<Snapshot> {
    const snapshotId = snapshotIdForName(request.name);
    const ownerId = parseOwnerId(request.scope.ownerId);
    validateVgNames(request.scope.vgNames);
    const vid = request.sourceVolumeId;
    if (!isHexId(vid)) throw new NotFoundError(`volume ${vid} does not exist`);
    const snapLv = snapshotLvNameFor(snapshotId, this.#p.naming);
    const sourceLv = lvNameFor(vid, this.#p.naming);
    return this.#p.hostLock.withLock(`snapshot ${snapshotId}`, async () => {
      const { lvs } = await this.#p.lvm.logicalVolumes.inGroups(request.scope.vgNames, {
        names: [snapLv, sourceLv],
      });
      const existing = single(lvs.filter((lv) => lv.lvName === snapLv));
      if (existing !== null) {
        const snapshot = this.#ownSnapshot(existing, ownerId, 'reuse');
        if (snapshot.sourceVolumeId !== vid) {
          throw new AlreadyExistsError(
            `snapshot "${request.name}" (${snapshotId}) exists for volume ${snapshot.sourceVolumeId}, not ${vid}`,
          );
        }
        return snapshot;
      }
      const source = single(lvs.filter((lv) => lv.lvName === sourceLv));
      if (source === null || failedTagCheck(source, ownerId, this.#p.naming) !== null) {
        throw new NotFoundError(`volume ${vid} does not exist`);
      }
      if (!isThinLv(source)) throw new ThickVolumeError(`volume ${vid}`, source);
      const active = await this.#activeVolume(source);
      const capacityBytes = await this.#ownHeaderCapacity(active, vid, ownerId);
      const createdMs = this.#p.clock();
      await this.#frozen(vid, () =>
        this.#p.lvm.thinSnapshots.createSnapshot({
          vgName: source.vgName,
          origin: sourceLv,
          lvName: snapLv,
          tags: [
            this.#p.naming.tag,
            ownerTagFor(ownerId, this.#p.naming),
            ...snapshotTagsFor({ sourceVolumeId: vid, sizeBytes: capacityBytes, createdMs }),
          ],
        }),
      );
      return {
        snapshotId,
        vgName: source.vgName,
        lvName: snapLv,
        sourceVolumeId: vid,
        sizeBytes: capacityBytes,
        createdMs,
      };
    });
  }

  // ---- look-ups -------------------------------------------------------------

  /**
   * This owner's snapshots in the scope, sorted by snapshot ID: one `vgs`
   * and one `lvs`, no activation. A snapshot LV without this owner's tags
   * is left out; one with them but without readable snapshot tags is left
   * out and logged.
   * @throws InvalidArgumentError for a bad group name or owner ID; as
   *   LogicalVolumes.inGroups.
   */
  async listSnapshots(scope: VolumeScope): Promise<Snapshot[]> {
    const ownerId = parseOwnerId(scope.ownerId);
    validateVgNames(scope.vgNames);
    const { lvs } = await this.#p.lvm.logicalVolumes.inGroups(scope.vgNames, {
      prefix: this.#p.naming.snapshotLvPrefix,
    });
    const snapshots: Snapshot[] = [];
    for (const lv of lvs) {
      if (parseSnapshotLvName(lv.lvName, this.#p.naming) === null) continue;
      if (failedTagCheck(lv, ownerId, this.#p.naming) !== null) continue;
      const snapshot = this.#toSnapshot(lv);
      if (snapshot === null) {
        this.#p.logger?.warn('snapshot LV without readable lvstamp.source/size/created tags', {
          lv: `${lv.vgName}/${lv.lvName}`,
          tags: lv.tags,
        });
        continue;
      }
      snapshots.push(snapshot);
    }
    return snapshots.sort((a, b) => compare(a.snapshotId, b.snapshotId));
  }

  /**
   * The snapshot with this ID in the scope, or null (also for an LV without
   * this owner's tags or the snapshot tags).
   * @throws InvalidArgumentError for a malformed ID; FailedPreconditionError
   *   when several groups hold it; as LogicalVolumes.inGroups.
   */
  async findSnapshot(snapshotId: string, scope: VolumeScope): Promise<Snapshot | null> {
    validateSnapshotId(snapshotId);
    const ownerId = parseOwnerId(scope.ownerId);
    validateVgNames(scope.vgNames);
    const { lvs } = await this.#p.lvm.logicalVolumes.inGroups(scope.vgNames, {
      names: [snapshotLvNameFor(snapshotId, this.#p.naming)],
    });
    const lv = single(lvs);
    if (lv === null || failedTagCheck(lv, ownerId, this.#p.naming) !== null) return null;
    return this.#toSnapshot(lv);
  }

  /**
   * Turns what a person typed into a snapshot ID: a snapshot name (its ID
   * is derived), or the ID of an existing snapshot; a ref that is both is
   * refused rather than guessed.
   * @throws InvalidArgumentError when it is neither a valid ID nor a valid
   *   name, or ambiguous.
   */
  async resolveSnapshot(ref: string, scope: VolumeScope): Promise<string> {
    return resolveRef(ref, 'snapshot', async (id) => (await this.findSnapshot(id, scope)) !== null);
  }

  // ---- delete ---------------------------------------------------------------

  /**
   * Deletes a snapshot (docs/DESIGN.md §5 "Snapshots"), under the host lock:
   * an absent snapshot is success (`existed: false`); otherwise both signals
   * right before `lvremove`: the tags (`lvstamp`, this owner,
   * `lvstamp.source`), then, after `lvchange -ay -K` of exactly this LV,
   * sector 0: a valid header of this owner whose volume ID is the
   * `lvstamp.source` tag. A snapshot is never "in use"; an open one is
   * refused.
   * @param options.forceUnowned skips the tag and header checks (never the
   *   scope, the name or the open check).
   * @throws InvalidArgumentError for a malformed ID, group or owner ID.
   * @throws NotOwnedError naming the LV and the failed check.
   * @throws FailedPreconditionError when the LV is open, exists in several
   *   groups, or stays without a kernel device after `-K` activation.
   * @throws CommandFailedError, CommandTimeoutError, UnparseableOutputError,
   *   LockTimeoutError.
   */
  async deleteSnapshot(
    snapshotId: string,
    scope: VolumeScope,
    options: { readonly forceUnowned?: boolean } = {},
  ): Promise<{ existed: boolean }> {
    validateSnapshotId(snapshotId);
    const ownerId = parseOwnerId(scope.ownerId);
    validateVgNames(scope.vgNames);
    const snapLv = snapshotLvNameFor(snapshotId, this.#p.naming);
    return this.#p.hostLock.withLock(`delete snapshot ${snapshotId}`, async () => {
      const lvs = this.#p.lvm.logicalVolumes;
      const found = single((await lvs.inGroups(scope.vgNames, { names: [snapLv] })).lvs);
      if (found === null) return { existed: false };
      let lv = found;
      // Snapshots rest inactive (DESIGN.md §3): one this call activates and does not remove
      // (refused, or a failed step) is deactivated again; one that was active stays active.
      const activation = { done: false };
      try {
        if (options.forceUnowned !== true) {
          const snapshot = this.#ownSnapshot(lv, ownerId, 'delete');
          lv = await this.#activeSnapshot(lv, () => (activation.done = true));
          // Its second signal: sector 0 is the source volume's header of this owner.
          const expected = { volumeId: snapshot.sourceVolumeId, ownerId };
          await requireOwnerHeader(lv, expected, this.#p.headers, 'delete');
        }
        if (lv.open) {
          throw new FailedPreconditionError(`${lv.vgName}/${lv.lvName} is open; left alone`);
        }
        await lvs.remove(lv.vgName, lv.lvName);
      } catch (error) {
        if (activation.done) await this.#restInactive(found);
        throw error;
      }
      return { existed: true };
    });
  }

  /**
   * `lvchange --activate n` of a snapshot this service activated, on a
   * failure path: best effort, a failure of its own is logged and the
   * caller's error stands.
   */
  async #restInactive(lv: LogicalVolume): Promise<void> {
    try {
      await this.#p.lvm.thinSnapshots.deactivate(lv.vgName, lv.lvName);
    } catch (error) {
      this.#p.logger?.warn('snapshot left active: deactivation failed', {
        lv: `${lv.vgName}/${lv.lvName}`,
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }

  // ---- restore and clone ----------------------------------------------------

  /**
   * Creates a volume holding a snapshot's or a volume's data (docs/DESIGN.md
   * §5 "Restore and clone"), idempotently, under one holding of the host
   * lock: the source (tags of this owner; a volume must be thin); an
   * existing `lvstamp_<id>` is returned when its header's name, owner and
   * capacity fit and its `lvstamp.from` tag names this source; a leftover
   * `lvstamp_new_<id>` is removed (tags); `lvcreate -s -kn -ay -prw` as
   * `lvstamp_new_<id>` tagged with `lvstamp.from` (a mounted source
   * volume's filesystem frozen around it); its sector 0 must be the
   * source's header; `lvextend` when the capacity is above the source's;
   * header v2 with the new ID written and flushed; `lvrename`. The data area
   * is never cleared: it holds the data.
   * @throws InvalidArgumentError for a bad name, group or owner ID, a group
   *   other than the source's; ThickVolumeError for a thick source.
   * @throws NotFoundError when the source is malformed, absent or not this
   *   owner's.
   * @throws OutOfRangeError when the capacity asked is below the source's or
   *   the range cannot be met.
   * @throws AlreadyExistsError when the volume exists with another name,
   *   owner, size or source.
   * @throws FailedPreconditionError when the copy's sector 0 is not the
   *   source's header (the copy is removed first).
   * @throws OutOfSpaceError; CommandFailedError, CommandTimeoutError,
   *   UnparseableOutputError, LockTimeoutError.
   */
  async createVolumeFrom(request: CreateVolumeFromRequest): Promise<CreatedVolume> {
    validateVolumeName(request.name);
    const ownerId = parseOwnerId(request.scope.ownerId);
    validateVgNames([request.vgName, ...request.scope.vgNames]);
    const { source } = request;
    const volumeId = volumeIdForName(request.name);
    if (!isHexId(source.id)) throw new NotFoundError(`${source.kind} ${source.id} does not exist`);
    const originLv =
      source.kind === 'snapshot'
        ? snapshotLvNameFor(source.id, this.#p.naming)
        : lvNameFor(source.id, this.#p.naming);
    const finalLv = lvNameFor(volumeId, this.#p.naming);
    const newLv = newLvNameFor(volumeId, this.#p.naming);
    const vgNames = [...new Set([request.vgName, ...request.scope.vgNames])];
    return this.#p.hostLock.withLock(`create ${volumeId} from ${source.kind}`, async () => {
      const lvm = this.#p.lvm.logicalVolumes;
      const found = await lvm.inGroups(vgNames, { names: [originLv, finalLv, newLv] });
      const { lvs } = found;
      const origin = single(lvs.filter((lv) => lv.lvName === originLv));
      const gone = (): never => {
        throw new NotFoundError(`${source.kind} ${source.id} does not exist`);
      };
      if (origin === null || failedTagCheck(origin, ownerId, this.#p.naming) !== null)
        return gone();
      if (!isThinLv(origin)) throw new ThickVolumeError(`${source.kind} ${source.id}`, origin);
      // The source's volume ID (its header's) and capacity.
      let sourceVolumeId = source.id;
      let sourceCapacity: number;
      if (source.kind === 'snapshot') {
        const tags = parseSnapshotTags(origin.tags, this.#p.naming);
        if (tags === null) return gone();
        sourceVolumeId = tags.sourceVolumeId;
        sourceCapacity = tags.sizeBytes;
      } else {
        const active = await this.#activeVolume(origin);
        sourceCapacity = await this.#ownHeaderCapacity(active, source.id, ownerId);
      }
      if (origin.vgName !== request.vgName) {
        throw new InvalidArgumentError(
          `${source.kind} ${source.id} is in volume group ${origin.vgName}: a thin copy lives in its origin's pool, not in ${request.vgName}`,
        );
      }
      const capacityBytes = this.#copyCapacity(request, sourceCapacity);
      const fromTag = fromTagFor(source, this.#p.naming);

      const existing = single(lvs.filter((lv) => lv.lvName === finalLv));
      if (existing !== null) {
        return this.#adoptCopy(existing, request, volumeId, ownerId, capacityBytes);
      }
      for (const leftover of lvs.filter((lv) => lv.lvName === newLv)) {
        requireOwnerTags(leftover, ownerId, this.#p.naming, 'remove');
        await lvm.remove(leftover.vgName, leftover.lvName);
      }
      const vg = await this.#p.lvm.volumeGroups.usable(request.vgName, found);
      const { lvSizeBytes } = volumeSize({
        requiredBytes: capacityBytes,
        extentSizeBytes: vg.extentSizeBytes,
      });
      if (request.thin) {
        await this.#requireInPool(
          vg.name,
          request.thin,
          origin,
          Math.max(lvSizeBytes, origin.sizeBytes),
          volumeId,
        );
      }
      const create = (): Promise<void> =>
        this.#p.lvm.thinSnapshots.createCopy({
          vgName: vg.name,
          origin: originLv,
          lvName: newLv,
          tags: [this.#p.naming.tag, ownerTagFor(ownerId, this.#p.naming), fromTag],
        });
      if (source.kind === 'volume') await this.#frozen(source.id, create);
      else await create();
      // lvcreate -ay made the node; its path is lvm's naming rule (lvDmName).
      const dmPath = `/dev/mapper/${lvDmName(vg.name, newLv)}`;
      const decoded = await this.#p.headers.readHeader(dmPath);
      const problem = copyHeaderProblem(decoded, sourceVolumeId, ownerId);
      if (problem !== null) {
        await lvm.remove(vg.name, newLv);
        throw new FailedPreconditionError(
          `${source.kind} ${source.id} is not an lvstamp volume of this installation (${problem}); the copy was removed`,
        );
      }
      if (lvSizeBytes > origin.sizeBytes) await lvm.extend(vg.name, newLv, lvSizeBytes);
      const header: HeaderFields = {
        volumeId,
        ownerId,
        createdAtMs: this.#p.clock(),
        dataOffsetBytes: DATA_OFFSET_BYTES,
        requestedBytes: capacityBytes,
        name: request.name,
      };
      await this.#p.headers.writeHeader(dmPath, header);
      await lvm.rename(vg.name, newLv, finalLv);
      return {
        volumeId,
        vgName: vg.name,
        lvName: finalLv,
        sizeBytes: Math.max(lvSizeBytes, origin.sizeBytes),
        capacityBytes,
      };
    });
  }

  /**
   * The origin is a thin LV of the class's pool, and the pool admits a
   * writable LV of `lvSizeBytes` (thinAdmits): one pool report (`lvs`), the
   * pool activated alone first when its usage is unknown.
   * @throws InvalidArgumentError when the origin is in another pool;
   *   ThinPoolUnusableError; OutOfSpaceError when the budget refuses.
   */
  async #requireInPool(
    vgName: string,
    thin: ThinProvisioning,
    origin: LogicalVolume,
    lvSizeBytes: number,
    volumeId: string,
  ): Promise<void> {
    const pools = this.#p.lvm.thinPools;
    let report = await pools.report(vgName, thin.thinPool);
    if (report.pool !== null && report.pool.isThinPool && report.pool.dataHundredths === null) {
      await pools.activate(vgName, thin.thinPool);
      report = await pools.report(vgName, thin.thinPool);
    }
    if (!report.thinLvs.some((lv) => lv.lvName === origin.lvName)) {
      throw new InvalidArgumentError(
        `${origin.vgName}/${origin.lvName} is not in the thin pool ${vgName}/${thin.thinPool} of the class asked for: a thin copy lives in its origin's pool`,
      );
    }
    const capacity = thinPoolCapacity(thin, report);
    if (capacity.condition === 'unusable' || capacity.condition === 'absent') {
      throw new ThinPoolUnusableError(vgName, thin.thinPool, capacity.detail ?? capacity.condition);
    }
    const refused = thinAdmits(capacity, lvSizeBytes, lvSizeBytes);
    if (refused !== null) {
      throw new OutOfSpaceError(
        `thin pool ${vgName}/${thin.thinPool} cannot take volume ${volumeId} (${lvSizeBytes} bytes): ${refused}`,
      );
    }
  }

  // ---- driver start ---------------------------------------------------------

  /**
   * Thaws every filesystem mounted from a data device (`fsfreeze -u` on each
   * mount point; EINVAL, "not frozen", is success), so that a process that
   * died between freeze and thaw leaves no filesystem frozen. Run at driver
   * start (docs/DESIGN.md §5 "Snapshots").
   * @returns the mount points thawed.
   * @throws CommandFailedError of dmsetup; a failed thaw is logged, not thrown.
   */
  async thawDataDeviceMounts(): Promise<string[]> {
    const [maps, mounts] = await Promise.all([
      this.#p.dataDevices.list(),
      this.#p.filesystems.mounts(),
    ]);
    const thawed: string[] = [];
    for (const map of maps) {
      for (const mount of mounts.filter((m) => m.major === map.major && m.minor === map.minor)) {
        if (await this.#thaw(mount.mountPoint)) thawed.push(mount.mountPoint);
      }
    }
    return thawed;
  }

  // ---- helpers --------------------------------------------------------------

  /**
   * The snapshot of an LV with this owner's tags and readable snapshot tags.
   * @throws NotOwnedError otherwise.
   */
  #ownSnapshot(lv: LogicalVolume, ownerId: string, act: string): Snapshot {
    requireOwnerTags(lv, ownerId, this.#p.naming, act);
    const snapshot = this.#toSnapshot(lv);
    if (snapshot === null) {
      throw new NotOwnedError(
        `${lv.vgName}/${lv.lvName}`,
        'tag',
        `refusing to ${act}: it lacks readable ${this.#p.naming.tag}.source/size/created tags (tags: ${lv.tags.join(',')})`,
      );
    }
    return snapshot;
  }

  #toSnapshot(lv: LogicalVolume): Snapshot | null {
    const snapshotId = parseSnapshotLvName(lv.lvName, this.#p.naming);
    const tags = parseSnapshotTags(lv.tags, this.#p.naming);
    if (snapshotId === null || tags === null) return null;
    return {
      snapshotId,
      vgName: lv.vgName,
      lvName: lv.lvName,
      sourceVolumeId: tags.sourceVolumeId,
      sizeBytes: tags.sizeBytes,
      createdMs: tags.createdMs,
    };
  }

  /** A volume LV, active (`lvchange --activate y`, this LV only; its tags were checked). */
  async #activeVolume(lv: LogicalVolume): Promise<LogicalVolume> {
    if (isActive(lv)) return lv;
    const lvs = this.#p.lvm.logicalVolumes;
    await lvs.activate(lv.vgName, lv.lvName);
    return lvs.get(lv.vgName, lv.lvName);
  }

  /**
   * A snapshot LV, active: `lvchange -ay -K` (a plain `-ay` leaves it
   * inactive), then read back. `onActivated` runs once that command succeeded.
   * @throws FailedPreconditionError when lvm still reports no kernel device.
   */
  async #activeSnapshot(lv: LogicalVolume, onActivated?: () => void): Promise<LogicalVolume> {
    if (isActive(lv)) return lv;
    await this.#p.lvm.thinSnapshots.activate(lv.vgName, lv.lvName);
    onActivated?.();
    const after = await this.#p.lvm.logicalVolumes.get(lv.vgName, lv.lvName);
    if (!isActive(after)) {
      throw new FailedPreconditionError(
        `${lv.vgName}/${lv.lvName} was activated (lvchange -ay -K) but lv_kernel_major is still -1`,
      );
    }
    return after;
  }

  /**
   * The capacity of an active volume LV from its own header (ok, this
   * owner, its ID).
   * @throws FailedPreconditionError otherwise.
   */
  async #ownHeaderCapacity(lv: LogicalVolume, volumeId: string, ownerId: string): Promise<number> {
    const where = `${lv.vgName}/${lv.lvName}`;
    const decoded = await this.#p.headers.readHeader(lv.dmPath ?? '');
    const problem = copyHeaderProblem(decoded, volumeId, ownerId);
    if (problem !== null || decoded.status !== 'ok') {
      throw new FailedPreconditionError(`${where}: ${problem ?? 'header not ok'}`);
    }
    return requireCapacity(ownedHeaderOf(decoded, lv.sizeBytes), lv);
  }

  /** The capacity of a copy: the source's unless more is asked; never less. */
  #copyCapacity(request: CreateVolumeFromRequest, sourceCapacity: number): number {
    const limit = request.limitBytes ?? 0;
    if (request.requiredBytes !== 0 && request.requiredBytes < sourceCapacity) {
      throw new OutOfRangeError(
        `the size asked for (${request.requiredBytes} bytes) is below the source's capacity (${sourceCapacity} bytes); a copy never shrinks`,
      );
    }
    if (limit !== 0 && limit < sourceCapacity) {
      throw new OutOfRangeError(
        `the size limit (${limit} bytes) is below the source's capacity (${sourceCapacity} bytes); a copy never shrinks`,
      );
    }
    const { capacityBytes } = volumeSize({
      requiredBytes: Math.max(request.requiredBytes, sourceCapacity),
      limitBytes: limit,
      minimumBytes: request.minimumBytes ?? 0,
      extentSizeBytes: CAPACITY_BLOCK_BYTES,
    });
    return capacityBytes;
  }

  /** An existing `lvstamp_<id>` answers a retried restore when name, owner, size and source fit. */
  async #adoptCopy(
    existing: LogicalVolume,
    request: CreateVolumeFromRequest,
    volumeId: string,
    ownerId: string,
    capacityBytes: number,
  ): Promise<CreatedVolume> {
    const where = `${existing.vgName}/${existing.lvName}`;
    requireOwnerTags(existing, ownerId, this.#p.naming, 'reuse');
    const from = parseFromTag(existing.tags, this.#p.naming);
    if (from === null || from.kind !== request.source.kind || from.id !== request.source.id) {
      throw new AlreadyExistsError(
        `volume "${request.name}" (${volumeId}) exists, but not as a copy of ${request.source.kind} ${request.source.id}`,
      );
    }
    if (existing.vgName !== request.vgName) {
      throw new AlreadyExistsError(`volume ${volumeId} exists in ${existing.vgName}`);
    }
    const active = await this.#activeVolume(existing);
    const decoded = await this.#p.headers.readHeader(active.dmPath ?? '');
    const problem = copyHeaderProblem(decoded, volumeId, ownerId);
    if (problem !== null || decoded.status !== 'ok') {
      throw new FailedPreconditionError(`${where}: ${problem ?? 'header not ok'}`);
    }
    const capacity = requireCapacity(ownedHeaderOf(decoded, active.sizeBytes), active);
    if (decoded.header.name !== request.name || capacity !== capacityBytes) {
      throw new AlreadyExistsError(
        `volume "${request.name}" (${volumeId}) exists as "${decoded.header.name}" with capacity ${capacity}, not ${capacityBytes}`,
      );
    }
    return {
      volumeId,
      vgName: active.vgName,
      lvName: active.lvName,
      sizeBytes: active.sizeBytes,
      capacityBytes,
    };
  }

  /**
   * Runs `act` with the filesystem mounted from the volume's data device
   * frozen (`fsfreeze -f` on one of its mount points), thawing it in a
   * `finally`; without a mount, runs `act` as it is (crash-consistent). lvm's
   * suspend does not freeze a filesystem on the data device (docs/SNAPSHOTS.md §1).
   * @throws FailedPreconditionError when the filesystem is frozen already.
   */
  async #frozen(volumeId: string, act: () => Promise<void>): Promise<void> {
    const map = await this.#p.dataDevices.find(volumeId);
    const mount =
      map === null
        ? undefined
        : (await this.#p.filesystems.mounts()).find(
            (m) => m.major === map.major && m.minor === map.minor,
          );
    if (mount === undefined) return act();
    try {
      await runLogged(this.#p.runner, this.#p.logger, ['fsfreeze', '-f', mount.mountPoint], {
        timeoutMs: FREEZE_TIMEOUT_MS,
      });
    } catch (error) {
      // EBUSY: frozen already, by someone else (their freeze is theirs to end: never thawed here).
      if (error instanceof CommandFailedError && /Device or resource busy/.test(error.stderr)) {
        throw new FailedPreconditionError(
          `the filesystem on ${mount.mountPoint} is frozen already (fsfreeze -f: Device or resource busy); thaw it (fsfreeze -u) and retry`,
          { cause: error },
        );
      }
      throw error;
    }
    try {
      await act();
    } finally {
      await this.#thaw(mount.mountPoint);
    }
  }

  /** `fsfreeze -u`; true when it thawed, false when it was not frozen (EINVAL) or failed (logged). */
  async #thaw(mountPoint: string): Promise<boolean> {
    try {
      await this.#p.runner.run(['fsfreeze', '-u', mountPoint], { timeoutMs: FREEZE_TIMEOUT_MS });
      return true;
    } catch (error) {
      if (error instanceof CommandFailedError && /Invalid argument/.test(error.stderr))
        return false;
      this.#p.logger?.warn('fsfreeze -u failed', {
        mountPoint,
        error: (error as Error).message,
      });
      return false;
    }
  }
}

/** Why a decoded sector 0 is not `volumeId`'s header of `ownerId` with lvstamp's data offset; null when it is. */
function copyHeaderProblem(
  decoded: DecodeResult,
  volumeId: string,
  ownerId: string,
): string | null {
  const failed = failedHeaderCheck(decoded, volumeId, ownerId);
  if (failed !== null) return failed.detail;
  if (decoded.status === 'ok' && decoded.header.dataOffsetBytes !== DATA_OFFSET_BYTES)
    return `its data offset is ${decoded.header.dataOffsetBytes}, not ${DATA_OFFSET_BYTES}`;
  return null;
}

function single(lvs: readonly LogicalVolume[]): LogicalVolume | null {
  if (lvs.length > 1) {
    const [first] = lvs;
    throw new FailedPreconditionError(
      `${first?.lvName ?? ''} exists in several volume groups: ${lvs.map((lv) => lv.vgName).join(', ')}`,
    );
  }
  return lvs[0] ?? null;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function validateSnapshotId(snapshotId: string): void {
  if (!isHexId(snapshotId))
    throw new InvalidArgumentError(`"${snapshotId}" is not a snapshot ID (32 hex digits)`);
}

function validateVgNames(vgNames: readonly string[]): void {
  for (const name of vgNames) validateVgName(name);
}
