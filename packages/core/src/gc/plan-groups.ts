/**
 * Rule 1 for volume groups lvm refuses to change (DESIGN.md §6 rule 1): a
 * missing or duplicate PV, a read-only, exported or shared group. lvm
 * would refuse a quarantine's rename or a removal there after the map was
 * already gone and the tag written, so nothing in such a group is acted on.
 */
import type { UnusableGroup } from '../lvm/types.js';
import type { GcPlanEntry, Inventory } from './types.js';

/** The sentence a kept entry and the executor's skip give for `group`. */
export function unusableGroupText(group: UnusableGroup): string {
  return `volume group ${group.vgName} cannot be changed (${group.problem}): ${group.detail}; nothing in it is changed until lvm can change it again`;
}

/**
 * `entry` kept with a warning (rule 1) when its LV, or for a map the LV it
 * targets, is in one of the inventory's unusable groups; else unchanged.
 * The reason keeps what the entry would otherwise have done.
 */
export function holdInUnusableGroup<E extends GcPlanEntry>(
  entry: E,
  inventory: Inventory,
): E | (E & { readonly action: 'keep' }) {
  const groups = inventory.unusableGroups ?? [];
  if (groups.length === 0) return entry;
  const vgName = entryGroup(entry, inventory);
  const group = groups.find((g) => g.vgName === vgName);
  if (group === undefined) return entry;
  const before =
    entry.action === 'keep' ? entry.reason : `would otherwise ${entry.action}: ${entry.reason}`;
  return {
    ...entry,
    action: 'keep',
    rule: 1,
    severity: 'warn',
    reason: `${unusableGroupText(group)}; ${before}`,
  };
}

function entryGroup(entry: GcPlanEntry, inventory: Inventory): string | null {
  if (entry.target !== 'map') return entry.vgName;
  const lv = inventory.maps.find((m) => m.name === entry.device)?.lv ?? null;
  return lv === null ? null : (lv.split('/')[0] ?? null);
}
