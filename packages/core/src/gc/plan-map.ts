/** The GC planner's rules for data device maps (DESIGN.md §6 rules 1–4). */

import { dmNameFor } from '../naming.js';
import type { GcMapEntry, GcRule, InventoryMap } from './types.js';
import { ageCheck, ownershipOf, type Ownership, type PlanContext } from './plan-context.js';
import { numberKey } from './util.js';

/**
 * Map rules (DESIGN.md §6): kept when its UUID, name, table or target does
 * not prove it an lvstamp data device over a proved LV, when it is open or
 * live, or while its LV is young; else removed (rule 4, data untouched).
 */
export function decideMap(m: InventoryMap, context: PlanContext): GcMapEntry {
  const keep = (rule: GcRule, severity: 'info' | 'warn', reason: string): GcMapEntry => ({
    target: 'map',
    volumeId: m.volumeId,
    device: m.name,
    action: 'keep',
    rule,
    severity,
    reason,
  });

  if (m.volumeId === null)
    return keep(1, 'warn', `UUID ${m.uuid} carries no volume ID; not an lvstamp data device`);
  const expectedName = dmNameFor(m.volumeId, context.inventory.naming);
  if (m.name !== expectedName) {
    return keep(1, 'warn', `map name does not match its UUID ${m.uuid} (expected ${expectedName})`);
  }
  if (m.target === null)
    return keep(1, 'warn', 'no single linear table; not the layout of an lvstamp data device');

  if (m.lv === null && m.targetElsewhere === true) {
    return keep(
      1,
      'warn',
      `its table targets ${numberKey(m.target)}, a device outside the volume groups scanned; judged only by a run over that device's volume group`,
    );
  }
  const lv = m.lv === null ? undefined : context.volumeByDevice.get(m.lv);
  let owner: (Ownership & { proved: true }) | null = null;
  if (lv !== undefined) {
    if (lv.volumeId !== m.volumeId) {
      return keep(1, 'warn', `targets ${lv.device}, which belongs to volume ${lv.volumeId}`);
    }
    const lvOwner = ownershipOf(lv, context);
    if (!lvOwner.proved)
      return keep(1, 'warn', `its LV ${lv.device} is not provably lvstamp's: ${lvOwner.reason}`);
    owner = lvOwner;
  }

  const live = context.liveSet.has(m.volumeId);
  if (m.openCount > 0) {
    const open = `open (${m.openCount}): mounted or in use`;
    return live
      ? keep(2, 'info', `in the live set; ${open}`)
      : keep(1, 'warn', `${open}, but not in the live set`);
  }
  if (live) return keep(2, 'info', 'in the live set');

  if (owner !== null) {
    const young = ageCheck(owner, context);
    if (young !== null) return keep(3, young.severity, young.reason);
  }

  const why =
    lv === undefined
      ? `stale: its table targets ${numberKey(m.target)}, which is no lvstamp LV`
      : `data device of ${lv.device}, whose volume is not in the live set`;
  return {
    target: 'map',
    volumeId: m.volumeId,
    device: m.name,
    action: 'remove-map',
    rule: 4,
    severity: 'info',
    reason: `${why}; removing the map leaves the data untouched`,
  };
}
