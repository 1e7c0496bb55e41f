/**
 * The plan of `lvstamp quarantine purge` (DESIGN.md §6 "Quarantine", purge),
 * pure: the quarantined LVs a person names, judged by rule 7's two signals
 * and open check, without a live set or cap. GcService.planPurge takes the
 * inventory and activates what it must read.
 */
import { InvalidArgumentError, NotFoundError } from '../errors.js';
import type { Naming } from '../naming.js';
import type { WipePolicy } from '../volumes/types.js';
import { holdInUnusableGroup } from './plan-groups.js';
import { planGc } from './planner.js';
import { decideQuarantined } from './quarantine.js';
import type { GcPlan, Inventory, InventoryQuarantined } from './types.js';
import { formatDuration } from './util.js';

/** What a purge is asked for (GcService.planPurge). */
export interface PurgeRequest {
  /** The owner ID, 32 lowercase hex digits. */
  readonly ownerId: string;
  /** How long an LV must have been in quarantine, ms (0: all). */
  readonly olderThanMs: number;
  /** Unix milliseconds. */
  readonly nowMs: number;
  readonly dryRun: boolean;
  /** The wipe of a thick quarantined volume before its removal; absent: `discard`. */
  readonly wipe?: WipePolicy;
}

/**
 * The purge plan of `inventory`: one entry per quarantined LV, judged by
 * rule 7 (decideQuarantined) with `olderThanMs` as the window, no live set
 * and no cap (the deletion cap is the number of entries); an LV in a group
 * lvm refuses to change is kept (rule 1). The inventory's volumes, maps and
 * snapshots are not judged.
 * @throws InvalidArgumentError for a bad owner ID (planGc's policy check).
 */
export function purgePlan(inventory: Inventory, request: PurgeRequest, naming: Naming): GcPlan {
  const base = planGc(
    { ...inventory, volumes: [], maps: [], snapshots: [] },
    new Set(),
    {
      ownerId: request.ownerId,
      minAgeMs: 0,
      maxDeletions: 0,
      dryRun: request.dryRun,
      ...(request.wipe === undefined ? {} : { wipe: request.wipe }),
    },
    request.nowMs,
  );
  const entries = (inventory.quarantined ?? []).map((q) =>
    holdInUnusableGroup(
      decideQuarantined(q, {
        ownerId: request.ownerId,
        naming,
        nowMs: request.nowMs,
        windowMs: request.olderThanMs,
        liveSet: null,
        windowName: `purge age ${formatDuration(request.olderThanMs)}`,
      }),
      inventory,
    ),
  );
  return {
    ...base,
    deletionCap: entries.length,
    entries,
    summary: {
      ...base.summary,
      quarantined: entries.length,
      quarantine: 0,
      removeQuarantined: entries.filter((e) => e.action === 'remove-quarantined').length,
      keep: entries.filter((e) => e.action === 'keep').length,
      warnings: entries.filter((e) => e.severity === 'warn').length,
    },
  };
}

/**
 * The quarantined LVs that `refs` name, in the order of `quarantined`: a ref
 * `vg/lv` names that device, a ref `lv` the one LV of that name in any group.
 * @throws NotFoundError for a ref that names none; InvalidArgumentError for
 *   an `lv` that several groups hold.
 */
export function namedQuarantined(
  quarantined: readonly InventoryQuarantined[],
  refs: readonly string[],
  vgNames: readonly string[],
): InventoryQuarantined[] {
  const chosen = new Set<InventoryQuarantined>();
  for (const ref of refs) {
    const hits = quarantined.filter((q) => (ref.includes('/') ? q.device : q.lvName) === ref);
    if (hits.length === 0) {
      throw new NotFoundError(
        `no quarantined LV ${ref} in ${vgNames.join(', ') || 'no volume group'} (lvstamp quarantine list shows them)`,
      );
    }
    if (hits.length > 1) {
      throw new InvalidArgumentError(
        `${ref} is in several volume groups (${hits.map((q) => q.vgName).join(', ')}); name it as <vg>/${ref}`,
      );
    }
    for (const q of hits) chosen.add(q);
  }
  return quarantined.filter((q) => chosen.has(q));
}
