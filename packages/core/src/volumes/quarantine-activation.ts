/**
 * Activation of quarantined LVs for a read of sector 0 (DESIGN.md §6
 * "Quarantine": the expiry, inspect, restore), and deactivation after it.
 * Every `lvchange` names exactly one LV.
 */
import type { LogicalVolume } from '../lvm/types.js';
import { parseOwnerId, parseQuarantinedLvName } from '../naming.js';
import { failedTagCheck } from './ownership.js';
import type { CoreParts } from './parts.js';
import { listQuarantined } from './quarantine-lookup.js';

/**
 * Activates the quarantined LVs `lvNames` of the scope that are inactive
 * and carry both tags (a volume `lvchange --activate y`, a snapshot with
 * `-K`), under the host lock, so that the expiry can read sector 0.
 * @returns `vg/lv` of each activated.
 * @throws as listQuarantined; CommandFailedError, LockTimeoutError.
 */
export async function activateQuarantined(
  p: CoreParts,
  scope: { readonly vgNames: readonly string[]; readonly ownerId: string },
  lvNames: readonly string[],
): Promise<string[]> {
  if (lvNames.length === 0) return [];
  const ownerId = parseOwnerId(scope.ownerId);
  return p.hostLock.withLock('activate quarantined lvstamp LVs', async () => {
    const activated: string[] = [];
    for (const lv of (await listQuarantined(p, scope, lvNames)).lvs) {
      if (lv.active || failedTagCheck(lv, ownerId, p.naming) !== null) continue;
      await activateQuarantinedLv(p, lv);
      activated.push(`${lv.vgName}/${lv.lvName}`);
    }
    return activated;
  });
}

/**
 * Deactivates quarantined LVs (`vg/lv`) that were activated for a read
 * (`lvchange --activate n`); best effort: a failure is logged, never thrown.
 */
export async function deactivateQuarantined(p: CoreParts, lvs: readonly string[]): Promise<void> {
  for (const device of lvs) {
    const [vgName = '', lvName = '', ...rest] = device.split('/');
    if (rest.length > 0 || parseQuarantinedLvName(lvName, p.naming) === null) {
      p.logger?.warn(`not deactivating ${device}: not a quarantined LV name`);
      continue;
    }
    try {
      await p.hostLock.withLock(`deactivate ${device}`, () =>
        p.lvm.logicalVolumes.changeTagsAndActivation(vgName, lvName, { activate: 'n' }),
      );
    } catch (error) {
      p.logger?.warn(
        `could not deactivate quarantined ${device} again: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }
}

/**
 * `lvchange -ay` of exactly this quarantined LV; a snapshot with `-K` (it
 * carries the activation-skip flag). The caller holds the host lock.
 * @throws CommandFailedError.
 */
export async function activateQuarantinedLv(p: CoreParts, lv: LogicalVolume): Promise<void> {
  const parsed = parseQuarantinedLvName(lv.lvName, p.naming);
  await p.lvm.logicalVolumes.changeTagsAndActivation(lv.vgName, lv.lvName, {
    activate: 'y',
    ignoreActivationSkip: parsed?.kind === 'snapshot',
  });
}
