/**
 * Delete (DESIGN.md §5 "Delete") and the GC's remover (DESIGN.md §6): every
 * LV proves it is this owner's (DESIGN.md §2.3) right before it is acted
 * on, under the host lock, and every check runs before the first act.
 */
import type { DataDeviceRef } from '../device/types.js';
import { FailedPreconditionError, InvalidArgumentError } from '../errors.js';
import { validateLvUuid } from '../lvm/logical-volumes.js';
import { isHexId, parseOwnerId } from '../naming.js';
import { refuseTargetOutside } from './attach.js';
import {
  activateOwned,
  lookupVolume,
  refuseOpenLv,
  refuseIfMounted,
  requireUsableGroups,
  single,
  validateVgNames,
} from './lookup.js';
import { requireOwnerHeader, requireOwnerTags } from './ownership.js';
import { volumeLockKey } from '../lock/host-lock.js';
import type { VolumeParts } from './parts.js';
import type {
  DeleteVolumeOptions,
  DeleteVolumeResult,
  Volume,
  VolumeScope,
  WipePolicy,
} from './types.js';
import { WIPE_POLICIES, wipeApplies, wipeDevice } from './wipe.js';

/**
 * Deletes a volume: its data device (refused while mounted or open), then
 * under the host lock `lvstamp_<id>` and any `lvstamp_new_<id>` of the
 * scope, each after its tags, and the finished LV after its header too (an
 * inactive LV is activated for that once its tags pass; a leftover has no
 * header yet). With wipe `discard` or `zero` a thick finished LV is wiped
 * first, so that it reads zeros (`wipeDevice`, DESIGN.md §5 "Wipe"); a
 * failed wipe leaves the LV in place. A volume already gone is success with
 * `existed: false`.
 * @param options.forceUnowned skips the tag and header checks (never the
 *   scope, the name, the group state or the open check).
 * @throws InvalidArgumentError for a malformed ID or wipe policy, before
 *   anything is touched.
 * @throws NotOwnedError; VolumeGroupUnusableError; FailedPreconditionError
 *   when the data device is mounted, an LV is open, or the volume exists in
 *   several groups; CommandFailedError, CommandTimeoutError,
 *   UnparseableOutputError, LockTimeoutError.
 */
export async function deleteVolume(
  p: VolumeParts,
  volumeId: string,
  scope: VolumeScope,
  options: DeleteVolumeOptions = {},
): Promise<DeleteVolumeResult> {
  if (!isHexId(volumeId))
    throw new InvalidArgumentError(`"${volumeId}" is not a volume ID (32 hex digits)`);
  const ownerId = parseOwnerId(scope.ownerId);
  const wipe = options.wipe ?? 'none';
  if (!(WIPE_POLICIES as readonly string[]).includes(wipe))
    throw new InvalidArgumentError(`unknown wipe policy "${wipe}"`);
  validateVgNames(scope.vgNames);
  // Whether a data device exists is read from sysfs (no process); dmsetup runs only to remove
  // one, and only after every check passed (a refused delete leaves the map in place).
  const map = await p.dataDevices.find(volumeId);
  if (map !== null) await refuseIfMounted(p.filesystems, map);
  const force = options.forceUnowned === true;
  // One volume's work: deletes of other volumes may run beside it (DESIGN.md §2.3 "The host lock").
  const removed = await p.hostLock.withVolumeLock(
    volumeLockKey(volumeId),
    `delete ${volumeId}`,
    () => deleteLvs(p, volumeId, { ...scope, ownerId }, { wipe, force }, map),
  );
  return { existed: removed !== null || map !== null, removed: removed ?? [] };
}

/**
 * The LV steps of delete; null when no LV existed. The caller holds the
 * host lock. `map` (unmounted) holds the finished LV open: it is removed
 * after the checks passed, and the LVs are then looked up again for the
 * open check.
 */
async function deleteLvs(
  p: VolumeParts,
  volumeId: string,
  scope: VolumeScope,
  how: { readonly wipe: WipePolicy; readonly force: boolean },
  map: DataDeviceRef | null,
): Promise<string[] | null> {
  const { ownerId } = scope;
  const found = await lookupVolume(p, volumeId, scope.vgNames);
  let { finished, pending } = found;
  if (finished.length + pending.length === 0) {
    if (map !== null) {
      // A data device without an LV in the scope: a leftover only when its target is gone too.
      await refuseTargetOutside(p, map, scope);
      await p.dataDevices.remove(map.volumeId);
    }
    return null;
  }
  single(finished, `volume ${volumeId}`);
  // A broken group (a PV seen twice, one missing, read-only…) is refused before anything is
  // activated, unmapped or removed, as create refuses it (VolumeGroupUnusableError).
  await requireUsableGroups(p, [...finished, ...pending], found.groups);
  const refuseOpen = async (lvs: readonly Volume[]): Promise<void> => {
    for (const lv of lvs) await refuseOpenLv(lv, p.hostRoot, 'unmount and detach it first');
  };
  if (map === null) await refuseOpen([...finished, ...pending]);
  if (!how.force)
    for (const lv of [...finished, ...pending]) requireOwnerTags(lv, ownerId, p.naming, 'delete');
  // The finished LV's header (and a wipe) need it active; activation changes no data.
  let ready: Volume[] = [];
  for (const lv of finished) {
    const needsActive = !how.force || how.wipe !== 'none';
    const active = needsActive ? await activateOwned(p, lv, ownerId, how.force) : lv;
    if (!how.force) {
      const expected = { volumeId: active.volumeId, ownerId };
      await requireOwnerHeader(active, expected, p.headers, 'delete');
    }
    ready.push(active);
  }
  if (map !== null) {
    await p.dataDevices.remove(volumeId);
    // Without the map, is anything else holding the LVs open? The same LVs (by lv_uuid) only.
    const again = await lookupVolume(p, volumeId, scope.vgNames);
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
    if (how.wipe !== 'none' && lv.dmPath !== null && wipeApplies(lv, !lv.creating)) {
      await wipeDevice(p, how.wipe, { dmPath: lv.dmPath, sizeBytes: lv.sizeBytes });
    }
    await p.lvm.logicalVolumes.remove(lv.vgName, lv.lvName);
    removed.push(`${lv.vgName}/${lv.lvName}`);
  }
  return removed;
}

/** One LV as the GC names it (gc/ports.ts LvRef). */
export interface RemovableLv {
  readonly vgName: string;
  readonly lvName: string;
  readonly lvUuid: string;
  readonly ownerId: string;
}

/**
 * Removes exactly one LV, named by group, name and `lv_uuid` (the GC's
 * remover, DESIGN.md §6): one `lvs` selected by `lv_uuid` re-checks it
 * (same group and name, not open, both tags), then `lvremove`. An LV
 * already gone is success. The caller holds the host lock across the
 * re-check and the removal (the GC executor takes it per entry), so the
 * lock is entered once more only by the lvremove itself. The header is the
 * executor's to re-check; the data device must already be gone.
 * @throws InvalidArgumentError for a bad VG name, uuid or owner ID;
 *   FailedPreconditionError when the uuid now has another name or group, or
 *   the LV is open; NotOwnedError; CommandFailedError,
 *   CommandTimeoutError, UnparseableOutputError, LockTimeoutError.
 */
export async function removeLogicalVolume(p: VolumeParts, ref: RemovableLv): Promise<void> {
  validateVgNames([ref.vgName]);
  const ownerId = parseOwnerId(ref.ownerId);
  validateLvUuid(ref.lvUuid);
  const lvs = p.lvm.logicalVolumes;
  const [lv, ...more] = await lvs.byUuid(ref.lvUuid);
  if (lv === undefined) return;
  if (more.length > 0 || lv.vgName !== ref.vgName || lv.lvName !== ref.lvName) {
    throw new FailedPreconditionError(
      `LV ${ref.lvUuid} is now ${lv.vgName}/${lv.lvName}, not ${ref.vgName}/${ref.lvName}; left alone`,
    );
  }
  await refuseOpenLv(lv, p.hostRoot, 'left alone');
  requireOwnerTags(lv, ownerId, p.naming, 'remove');
  await lvs.remove(lv.vgName, lv.lvName);
}
