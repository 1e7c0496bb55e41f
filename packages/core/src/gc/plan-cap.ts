/**
 * The deletion caps of the GC planner (DESIGN.md §6 "Cap"): how many acts
 * that take an LV out of use one run may plan.
 */
import { CAPPED_ACTIONS } from './types.js';
import type { GcPlanEntry, GcPolicy, Inventory } from './types.js';
import { quarantineOn } from './plan-context.js';

/**
 * `decided` (in plan order) with every act past a cap kept with a warning
 * "deletion cap of N reached (which cap); would otherwise remove: …". Own
 * stamped LVs: the inventory's volumes and snapshots outside quarantine
 * whose header is `ok` with the policy's owner.
 * @returns the entries, whether a cap kept any act, and the plan's
 *   `deletionCap` (the per-run limit, or the smaller of both caps without a
 *   quarantine window).
 */
export function capEntries(
  decided: readonly GcPlanEntry[],
  inventory: Inventory,
  policy: GcPolicy,
): { readonly entries: GcPlanEntry[]; readonly capped: boolean; readonly deletionCap: number } {
  const ownStamped = [...inventory.volumes, ...(inventory.snapshots ?? [])].filter(
    (v) => v.header.status === 'ok' && v.header.header.ownerId === policy.ownerId,
  ).length;
  const caps = deletionCaps(policy, ownStamped);
  let acts = 0;
  let shared = 0;
  let capped = false;
  const entries = decided.map((entry): GcPlanEntry => {
    if (!CAPPED_ACTIONS.has(entry.action)) return entry;
    // An expiry is capped per run only (DESIGN.md §6 "Cap"); every other act by both caps.
    const expiry = entry.action === 'remove-quarantined';
    const hit =
      acts >= caps.perRun.limit
        ? caps.perRun
        : !expiry && caps.share !== null && shared >= caps.share.limit
          ? caps.share
          : null;
    if (hit === null) {
      acts += 1;
      if (!expiry) shared += 1;
      return entry;
    }
    capped = true;
    return {
      ...entry,
      action: 'keep',
      severity: 'warn',
      reason: `deletion cap of ${hit.limit} reached (${hit.why}); would otherwise remove: ${entry.reason}`,
    };
  });
  const deletionCap =
    quarantineOn(policy) || caps.share === null
      ? caps.perRun.limit
      : Math.min(caps.perRun.limit, caps.share.limit);
  return { entries, capped, deletionCap };
}

interface Cap {
  readonly limit: number;
  readonly why: string;
}

/**
 * The deletion caps of DESIGN.md §6 "Cap": `perRun` (maxDeletions) bounds
 * every act; `share` (null without a percentage) bounds every act but an
 * expiry: floor(percent × own stamped LVs / 100), and with a quarantine
 * window at least 1 (a quarantine is reversible and announced).
 */
function deletionCaps(
  policy: GcPolicy,
  ownStamped: number,
): { readonly perRun: Cap; readonly share: Cap | null } {
  const perRun = { limit: policy.maxDeletions, why: `at most ${policy.maxDeletions} per run` };
  const percent = policy.maxDeletionPercent;
  if (percent === undefined) return { perRun, share: null };
  const floor = Math.floor((percent * ownStamped) / 100);
  const atLeastOne = quarantineOn(policy) && floor < 1;
  const why = `at most ${percent}% of ${ownStamped} own stamped volume(s)${atLeastOne ? ', at least 1 with a quarantine window' : ''}`;
  return { perRun, share: { limit: atLeastOne ? 1 : floor, why } };
}
