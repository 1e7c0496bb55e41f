/**
 * Activation of lvstamp's own LVs, each after its tags prove it this
 * owner's (DESIGN.md §2.3), and snapshots put back to rest (DESIGN.md §3).
 * Every `lvchange` names exactly one LV; never a group-wide activation.
 */
import { InvalidArgumentError, NotFoundError } from '../errors.js';
import type { LogicalVolume } from '../lvm/types.js';
import { parseOwnerId, parseSnapshotLvName } from '../naming.js';
import { listLogicalVolumes } from './list.js';
import {
  activateOwned,
  getVolume,
  lookupVolume,
  requireUsableGroups,
  single,
  validateVgNames,
} from './lookup.js';
import { failedTagCheck, isActive } from './ownership.js';
import type { CoreParts } from './parts.js';
import type { Volume, VolumeScope } from './types.js';

/**
 * The finished volume, active: an inactive LV is activated (`lvchange
 * --activate y <vg>/<lv>`, lvchange(8)) under the host lock after a second
 * look-up, once its group is usable and its tags prove it this owner's.
 * An active LV is returned as it is (no lvm change, so a broken group does
 * not stop a volume that still serves I/O). The header is the caller's to
 * check.
 * @throws NotFoundError; VolumeGroupUnusableError (a missing or duplicate
 *   PV…) before an activation; NotOwnedError when an inactive LV lacks the
 *   tags; as findVolume; CommandFailedError, LockTimeoutError.
 */
export async function activateVolume(
  p: CoreParts,
  volumeId: string,
  scope: VolumeScope,
): Promise<Volume> {
  const volume = await getVolume(p, volumeId, scope);
  if (isActive(volume)) return volume;
  const ownerId = parseOwnerId(scope.ownerId);
  return p.hostLock.withLock(`activate ${volumeId}`, async () => {
    const found = await lookupVolume(p, volumeId, scope.vgNames);
    const again = single(found.finished, `volume ${volumeId}`);
    if (again === null) throw new NotFoundError(`volume ${volumeId} does not exist`);
    await requireUsableGroups(p, [again], found.groups);
    return activateOwned(p, again, ownerId);
  });
}

/**
 * Activates every inactive lvstamp volume (`volumes`) or snapshot
 * (`snapshots`, `lvchange -ay -K`: thin snapshots carry the
 * activation-skip flag, docs/SNAPSHOTS.md §1) of the scope that carries the
 * lvstamp tag and this owner's, so that the GC can read its sector 0: one
 * `lvchange` each, under the host lock, after a re-listing under it.
 * @returns `vg/lv` of each LV activated.
 * @throws as listLogicalVolumes; CommandFailedError, LockTimeoutError.
 */
export async function activateOwnedLvs(
  p: CoreParts,
  scope: VolumeScope,
  kind: 'volumes' | 'snapshots',
): Promise<string[]> {
  const ownerId = parseOwnerId(scope.ownerId);
  const inactiveOwned = async (): Promise<LogicalVolume[]> =>
    (await listLogicalVolumes(p, scope))[kind].filter(
      (lv) => !isActive(lv) && failedTagCheck(lv, ownerId, p.naming) === null,
    );
  if ((await inactiveOwned()).length === 0) return [];
  return p.hostLock.withLock(`activate inactive lvstamp ${kind}`, async () => {
    const activated: string[] = [];
    for (const lv of await inactiveOwned()) {
      if (kind === 'volumes') await p.lvm.logicalVolumes.activate(lv.vgName, lv.lvName);
      else await p.lvm.thinSnapshots.activate(lv.vgName, lv.lvName);
      activated.push(`${lv.vgName}/${lv.lvName}`);
    }
    return activated;
  });
}

/**
 * Puts back to rest the snapshot LVs activateOwnedLvs activated (DESIGN.md
 * §3): one `lvchange --activate n <vg>/<lv>` each, under one holding of
 * the host lock. Best effort: a failure is logged and the others still run.
 * @param lvs `vg/lv` of snapshot LVs.
 * @throws InvalidArgumentError for an entry that is not
 *   `<vg>/lvstamp_snap_<id>`, before any command.
 */
export async function deactivateSnapshots(p: CoreParts, lvs: readonly string[]): Promise<void> {
  const targets = lvs.map((entry) => {
    const [vgName = '', lvName = '', ...rest] = entry.split('/');
    if (rest.length > 0 || parseSnapshotLvName(lvName, p.naming) === null) {
      throw new InvalidArgumentError(`"${entry}" is not <vg>/<snapshot LV>`);
    }
    validateVgNames([vgName]);
    return { vgName, lvName };
  });
  if (targets.length === 0) return;
  try {
    await p.hostLock.withLock('deactivate lvstamp snapshots', async () => {
      for (const { vgName, lvName } of targets) await restInactive(p, { vgName, lvName });
    });
  } catch (error) {
    warnLeftActive(p, lvs.join(' '), error);
  }
}

/**
 * `lvchange --activate n` of one snapshot, best effort: a failure is logged
 * (the snapshot stays active, harmless) and never thrown, so the caller's
 * own error stands.
 */
export async function restInactive(
  p: CoreParts,
  lv: { readonly vgName: string; readonly lvName: string },
): Promise<void> {
  try {
    await p.lvm.thinSnapshots.deactivate(lv.vgName, lv.lvName);
  } catch (error) {
    warnLeftActive(p, `${lv.vgName}/${lv.lvName}`, error);
  }
}

function warnLeftActive(p: CoreParts, lv: string, error: unknown): void {
  p.logger?.warn('snapshot left active: deactivation failed', {
    lv,
    error: error instanceof Error ? error.message : String(error),
  });
}
