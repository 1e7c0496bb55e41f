/**
 * Thin snapshots (docs/DESIGN.md §3, §5 "Snapshots"): take, list, find and
 * delete, every act under the host lock and every destructive act after
 * both ownership signals (DESIGN.md §2.3). Snapshots rest inactive.
 */
import { withFrozen } from '../fs/freeze.js';
import {
  AlreadyExistsError,
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  NotOwnedError,
} from '../errors.js';
import { isThinLv } from '../lvm/thin-snapshots.js';
import type { LogicalVolume } from '../lvm/types.js';
import {
  isHexId,
  lvNameFor,
  ownerTagFor,
  parseOwnerId,
  parseSnapshotLvName,
  parseSnapshotTags,
  snapshotIdForName,
  snapshotLvNameFor,
  snapshotTagsFor,
  type Naming,
} from '../naming.js';
import { restInactive } from './activation.js';
import {
  activateOwned,
  mountPointOf,
  requireUsableGroups,
  single,
  validateVgNames,
} from './lookup.js';
import { failedTagCheck, isActive, requireOwnerHeader, requireOwnerTags } from './ownership.js';
import type { SnapshotParts } from './parts.js';
import { sourceHeader, ThickVolumeError } from './source.js';
import type { Snapshot, VolumeScope } from './types.js';

/**
 * Takes a snapshot of a thin volume, idempotently, under the host lock: one
 * look-up of `lvstamp_snap_<sid>` and `lvstamp_<vid>`; an existing snapshot
 * of the same source is returned as it is; else the source's tags, thin
 * type and header (ok, this owner, its ID) are checked, and one `lvcreate
 * -s -pr` carrying every tag runs with a filesystem mounted from the
 * source's data device frozen (withFrozen).
 * @throws InvalidArgumentError for a bad name, group or owner ID;
 *   ThickVolumeError for a thick source.
 * @throws NotFoundError when the source is malformed, absent, or lacks this
 *   owner's tags; AlreadyExistsError when the snapshot exists for another
 *   source; NotOwnedError (the snapshot's or the source's header);
 *   FailedPreconditionError when an LV exists in several groups;
 *   VolumeGroupUnusableError (a missing or duplicate PV…: checked before
 *   the source is activated or the snapshot made).
 * @throws OutOfSpaceError (the pool is full); CommandFailedError,
 *   CommandTimeoutError, UnparseableOutputError, LockTimeoutError.
 */
export async function createSnapshot(
  p: SnapshotParts,
  request: { readonly name: string; readonly sourceVolumeId: string; readonly scope: VolumeScope },
): Promise<Snapshot> {
  const snapshotId = snapshotIdForName(request.name);
  const ownerId = parseOwnerId(request.scope.ownerId);
  validateVgNames(request.scope.vgNames);
  const vid = request.sourceVolumeId;
  if (!isHexId(vid)) throw new NotFoundError(`volume ${vid} does not exist`);
  const snapLv = snapshotLvNameFor(snapshotId, p.naming);
  const sourceLv = lvNameFor(vid, p.naming);
  return p.hostLock.withLock(`snapshot ${snapshotId}`, async () => {
    const found = await p.lvm.logicalVolumes.inGroups(request.scope.vgNames, {
      names: [snapLv, sourceLv],
    });
    const { lvs } = found;
    const existing = single(lvs.filter((lv) => lv.lvName === snapLv));
    if (existing !== null) {
      const snapshot = ownSnapshot(existing, ownerId, 'reuse', p.naming);
      if (snapshot.sourceVolumeId !== vid) {
        throw new AlreadyExistsError(
          `snapshot "${request.name}" (${snapshotId}) exists for volume ${snapshot.sourceVolumeId}, not ${vid}`,
        );
      }
      return snapshot;
    }
    const source = single(lvs.filter((lv) => lv.lvName === sourceLv));
    if (source === null || failedTagCheck(source, ownerId, p.naming) !== null) {
      throw new NotFoundError(`volume ${vid} does not exist`);
    }
    if (!isThinLv(source)) throw new ThickVolumeError(`volume ${vid}`, source);
    // A broken group (a PV seen twice…) is refused before anything is activated or made.
    await requireUsableGroups(p, [source], found);
    const active = await activateOwned(p, source, ownerId);
    const expected = { volumeId: vid, ownerId };
    const { capacityBytes } = await sourceHeader(p, active, expected, 'snapshot');
    const createdMs = p.clock();
    await withFrozen(p.runner, p.logger, await mountPointOf(p, vid), () =>
      p.lvm.thinSnapshots.createSnapshot({
        vgName: source.vgName,
        origin: sourceLv,
        lvName: snapLv,
        tags: [
          p.naming.tag,
          ownerTagFor(ownerId, p.naming),
          ...snapshotTagsFor({ sourceVolumeId: vid, sizeBytes: capacityBytes, createdMs }),
        ],
      }),
    );
    const sizeBytes = capacityBytes;
    return {
      snapshotId,
      vgName: source.vgName,
      lvName: snapLv,
      sourceVolumeId: vid,
      sizeBytes,
      createdMs,
    };
  });
}

/**
 * This owner's snapshots in the scope, sorted by snapshot ID: one look-up,
 * no activation. A snapshot LV without this owner's tags is left out; one
 * with them but without readable snapshot tags is left out and logged.
 * @throws InvalidArgumentError for a bad group or owner ID; as
 *   LogicalVolumes.inGroups.
 */
export async function listSnapshots(p: SnapshotParts, scope: VolumeScope): Promise<Snapshot[]> {
  const ownerId = parseOwnerId(scope.ownerId);
  validateVgNames(scope.vgNames);
  const { lvs } = await p.lvm.logicalVolumes.inGroups(scope.vgNames, {
    prefix: p.naming.snapshotLvPrefix,
  });
  const snapshots: Snapshot[] = [];
  for (const lv of lvs) {
    if (parseSnapshotLvName(lv.lvName, p.naming) === null) continue;
    if (failedTagCheck(lv, ownerId, p.naming) !== null) continue;
    const snapshot = toSnapshot(lv, p.naming);
    if (snapshot === null) {
      p.logger?.warn('snapshot LV without readable lvstamp.source/size/created tags', {
        lv: `${lv.vgName}/${lv.lvName}`,
        tags: lv.tags,
      });
      continue;
    }
    snapshots.push(snapshot);
  }
  return snapshots.sort((a, b) =>
    a.snapshotId < b.snapshotId ? -1 : a.snapshotId > b.snapshotId ? 1 : 0,
  );
}

/**
 * The snapshot with this ID in the scope, or null (also for an LV without
 * this owner's tags or the snapshot tags).
 * @throws InvalidArgumentError for a malformed ID; FailedPreconditionError
 *   when several groups hold it; as LogicalVolumes.inGroups.
 */
export async function findSnapshot(
  p: SnapshotParts,
  snapshotId: string,
  scope: VolumeScope,
): Promise<Snapshot | null> {
  validateSnapshotId(snapshotId);
  const ownerId = parseOwnerId(scope.ownerId);
  validateVgNames(scope.vgNames);
  const { lvs } = await p.lvm.logicalVolumes.inGroups(scope.vgNames, {
    names: [snapshotLvNameFor(snapshotId, p.naming)],
  });
  const lv = single(lvs);
  if (lv === null || failedTagCheck(lv, ownerId, p.naming) !== null) return null;
  return toSnapshot(lv, p.naming);
}

/**
 * Deletes a snapshot under the host lock: absent is success (`existed:
 * false`); else both signals right before `lvremove`: the tags (`lvstamp`,
 * this owner, `lvstamp.source`), then, after `lvchange -ay -K` of exactly
 * this LV, sector 0: this owner's valid header whose volume ID is the
 * `lvstamp.source` tag. An open snapshot is refused. One this call
 * activated and did not remove is put back to rest.
 * @param options.forceUnowned skips the tag and header checks (never the
 *   scope, the name, the group state or the open check).
 * @throws InvalidArgumentError for a malformed ID, group or owner ID;
 *   VolumeGroupUnusableError before anything is activated; NotOwnedError; FailedPreconditionError when the LV is open, exists in
 *   several groups, or has no kernel device after `-K` activation;
 *   CommandFailedError, CommandTimeoutError, UnparseableOutputError,
 *   LockTimeoutError.
 */
export async function deleteSnapshot(
  p: SnapshotParts,
  snapshotId: string,
  scope: VolumeScope,
  options: { readonly forceUnowned?: boolean } = {},
): Promise<{ existed: boolean }> {
  validateSnapshotId(snapshotId);
  const ownerId = parseOwnerId(scope.ownerId);
  validateVgNames(scope.vgNames);
  const snapLv = snapshotLvNameFor(snapshotId, p.naming);
  return p.hostLock.withLock(`delete snapshot ${snapshotId}`, async () => {
    const lvs = p.lvm.logicalVolumes;
    const report = await lvs.inGroups(scope.vgNames, { names: [snapLv] });
    const found = single(report.lvs);
    if (found === null) return { existed: false };
    // A broken group is refused before anything is activated or removed, as create refuses it.
    await requireUsableGroups(p, [found], report);
    let lv = found;
    const activation = { done: false };
    try {
      if (options.forceUnowned !== true) {
        const snapshot = ownSnapshot(lv, ownerId, 'delete', p.naming);
        lv = await activeSnapshot(p, lv, () => (activation.done = true));
        // Its second signal: sector 0 is the source volume's header of this owner.
        const expected = { volumeId: snapshot.sourceVolumeId, ownerId };
        await requireOwnerHeader(lv, expected, p.headers, 'delete');
      }
      if (lv.open)
        throw new FailedPreconditionError(`${lv.vgName}/${lv.lvName} is open; left alone`);
      await lvs.remove(lv.vgName, lv.lvName);
    } catch (error) {
      if (activation.done) await restInactive(p, found);
      throw error;
    }
    return { existed: true };
  });
}

/**
 * The snapshot of an LV with this owner's tags and readable snapshot tags.
 * @throws NotOwnedError otherwise.
 */
export function ownSnapshot(
  lv: LogicalVolume,
  ownerId: string,
  act: string,
  naming: Naming,
): Snapshot {
  requireOwnerTags(lv, ownerId, naming, act);
  const snapshot = toSnapshot(lv, naming);
  if (snapshot === null) {
    throw new NotOwnedError(
      `${lv.vgName}/${lv.lvName}`,
      'tag',
      `refusing to ${act}: it lacks readable ${naming.tag}.source/size/created tags (tags: ${lv.tags.join(',')})`,
    );
  }
  return snapshot;
}

function toSnapshot(lv: LogicalVolume, naming: Naming): Snapshot | null {
  const snapshotId = parseSnapshotLvName(lv.lvName, naming);
  const tags = parseSnapshotTags(lv.tags, naming);
  if (snapshotId === null || tags === null) return null;
  const { sourceVolumeId, sizeBytes, createdMs } = tags;
  return { snapshotId, vgName: lv.vgName, lvName: lv.lvName, sourceVolumeId, sizeBytes, createdMs };
}

/**
 * A snapshot LV, active: `lvchange -ay -K` (a plain `-ay` leaves it
 * inactive), then read back. `onActivated` runs once that command succeeded.
 * @throws FailedPreconditionError when lvm still reports no kernel device.
 */
async function activeSnapshot(
  p: SnapshotParts,
  lv: LogicalVolume,
  onActivated: () => void,
): Promise<LogicalVolume> {
  if (isActive(lv)) return lv;
  await p.lvm.thinSnapshots.activate(lv.vgName, lv.lvName);
  onActivated();
  const after = await p.lvm.logicalVolumes.get(lv.vgName, lv.lvName);
  if (!isActive(after)) {
    throw new FailedPreconditionError(
      `${lv.vgName}/${lv.lvName} was activated (lvchange -ay -K) but lv_kernel_major is still -1`,
    );
  }
  return after;
}

function validateSnapshotId(snapshotId: string): void {
  if (!isHexId(snapshotId))
    throw new InvalidArgumentError(`"${snapshotId}" is not a snapshot ID (32 hex digits)`);
}
