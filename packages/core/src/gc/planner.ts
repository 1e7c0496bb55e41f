import { InvalidArgumentError } from '../errors.js';
import { isHexId, ownerTagFor, quarantineTagsOf } from '../naming.js';
import { WIPE_POLICIES } from '../volumes/wipe.js';
import type { WipePolicy } from '../volumes/types.js';
import { decideQuarantined } from './quarantine.js';
import type {
  GcQuarantinedEntry,
  InventoryQuarantined,
  GcPlan,
  GcPlanEntry,
  GcPlanSummary,
  GcPolicy,
  GcRule,
  GcVolumeEntry,
  Inventory,
  InventoryVolume,
} from './types.js';
import {
  ageCheck,
  ageText,
  openReasonOf,
  ownershipOf,
  quarantineOn,
  type PlanContext,
} from './plan-context.js';
import { capEntries } from './plan-cap.js';
import { decideMap } from './plan-map.js';
import { decideSnapshot } from './plan-snapshot.js';
import { holdInUnusableGroup } from './plan-groups.js';
import { compareText, formatDuration } from './util.js';

/** The GC's wipe when the policy names none (DESIGN.md §5 "Wipe"): the promise holds by default. */
export const DEFAULT_GC_WIPE: WipePolicy = 'discard';

/**
 * Plans one GC run: one entry per LV and per data device map, decided by the
 * first rule of DESIGN.md §6 that applies (rules 1–7 and their details,
 * everything in a group lvm refuses to change kept under rule 1,
 * snapshots under "Snapshots", quarantine under "Quarantine", the deletion
 * cap). Pure: the same input
 * gives the same plan, so a dry run shows exactly what an applied run does.
 * @param liveSet volume IDs (32 lowercase hex digits) still referenced.
 * @param nowMs current Unix time in milliseconds.
 * @param options.snapshotLiveSet snapshot IDs still referenced; without it
 *   every snapshot is kept with a warning.
 * @throws InvalidArgumentError for a malformed policy, `nowMs` or live-set entry.
 */
export function planGc(
  inventory: Inventory,
  liveSet: ReadonlySet<string>,
  policy: GcPolicy,
  nowMs: number,
  options: { readonly snapshotLiveSet?: ReadonlySet<string> } = {},
): GcPlan {
  validatePolicy(policy);
  if (!Number.isFinite(nowMs))
    throw new InvalidArgumentError(`now must be a finite time in milliseconds, got ${nowMs}`);
  for (const id of liveSet) {
    if (!isHexId(id)) {
      throw new InvalidArgumentError(
        `live set entry "${id}" is not a volume ID (32 lowercase hex digits)`,
      );
    }
  }
  for (const id of options.snapshotLiveSet ?? []) {
    if (!isHexId(id)) {
      throw new InvalidArgumentError(
        `snapshot live set entry "${id}" is not a snapshot ID (32 lowercase hex digits)`,
      );
    }
  }

  const context: PlanContext = {
    policy,
    liveSet,
    snapshotLiveSet: options.snapshotLiveSet ?? null,
    nowMs,
    ownerTag: ownerTagFor(policy.ownerId, inventory.naming),
    ownerTagPrefix: `${inventory.naming.tag}.owner=`,
    inventory,
    volumeByDevice: new Map(inventory.volumes.map((v) => [v.device, v])),
    volumeIds: new Set(inventory.volumes.map((v) => v.volumeId)),
    mapByName: new Map(inventory.maps.map((m) => [m.name, m])),
  };

  const decided: GcPlanEntry[] = [
    ...inventory.volumes.map((v) => decideVolume(v, context)),
    ...inventory.maps.map((m) => decideMap(m, context)),
    ...(inventory.snapshots ?? []).map((snap) => decideSnapshot(snap, context)),
    ...(inventory.quarantined ?? []).map((q) => judgeQuarantined(q, context)),
  ]
    .map((entry) => holdInUnusableGroup(entry, inventory))
    .sort(compareEntries);

  const { entries, capped, deletionCap } = capEntries(decided, inventory, policy);

  return {
    plannedAtMs: nowMs,
    inventoryTakenAtMs: inventory.takenAtMs,
    naming: inventory.naming,
    ownerId: policy.ownerId,
    dryRun: policy.dryRun,
    wipe: policy.wipe ?? DEFAULT_GC_WIPE,
    deletionCap,
    capped,
    entries,
    summary: summarize(
      entries,
      inventory.snapshots !== undefined,
      inventory.quarantined !== undefined || quarantineOn(policy),
    ),
  };
}

/**
 * Checks a GC policy.
 * @throws InvalidArgumentError when the owner ID is not 32 lowercase hex
 *   digits, `minAgeMs` is negative or not finite, `maxDeletions` is not a
 *   non-negative integer, `maxDeletionPercent` is outside 0–100, or `dryRun`
 *   is not a boolean, or `wipe` is not none, discard or zero.
 */
export function validatePolicy(policy: GcPolicy): void {
  if (!isHexId(policy.ownerId)) {
    throw new InvalidArgumentError(
      `policy owner ID must be 32 lowercase hex digits, got "${policy.ownerId}"`,
    );
  }
  if (!Number.isFinite(policy.minAgeMs) || policy.minAgeMs < 0) {
    throw new InvalidArgumentError(`policy minimum age must be ≥ 0 ms, got ${policy.minAgeMs}`);
  }
  if (!Number.isSafeInteger(policy.maxDeletions) || policy.maxDeletions < 0) {
    throw new InvalidArgumentError(
      `policy maximum deletions must be an integer ≥ 0, got ${policy.maxDeletions}`,
    );
  }
  const percent = policy.maxDeletionPercent;
  if (percent !== undefined && !(Number.isFinite(percent) && percent >= 0 && percent <= 100)) {
    throw new InvalidArgumentError(
      `policy maximum deletion percentage must be 0–100, got ${percent}`,
    );
  }
  const window = policy.quarantineMs;
  if (window !== undefined && !(Number.isFinite(window) && window >= 0)) {
    throw new InvalidArgumentError(`policy quarantine window must be ≥ 0 ms, got ${window}`);
  }
  if (policy.wipe !== undefined && !(WIPE_POLICIES as readonly string[]).includes(policy.wipe)) {
    throw new InvalidArgumentError(
      `policy wipe must be one of ${WIPE_POLICIES.join(', ')}, got "${policy.wipe}"`,
    );
  }
  if (typeof policy.dryRun !== 'boolean') {
    throw new InvalidArgumentError('policy dryRun must be true or false');
  }
}

function decideVolume(v: InventoryVolume, context: PlanContext): GcVolumeEntry {
  const base = {
    target: 'volume',
    volumeId: v.volumeId,
    device: v.device,
    vgName: v.vgName,
    lvName: v.lvName,
    lvUuid: v.lvUuid,
  } as const;
  const keep = (
    rule: GcRule,
    severity: 'info' | 'warn',
    reason: string,
    evidence: GcVolumeEntry['evidence'],
  ) => ({ ...base, action: 'keep', rule, severity, reason, evidence }) as const;

  const owner = ownershipOf(v, context);
  if (!owner.proved) return keep(1, 'warn', owner.reason, null);

  const live = context.liveSet.has(v.volumeId);
  const open = openReasonOf(v, context);
  if (open !== null) {
    return live
      ? keep(2, 'info', `in the live set; ${open}`, owner.evidence)
      : keep(1, 'warn', `${open}, but not in the live set`, owner.evidence);
  }
  if (live) return keep(2, 'info', 'in the live set', owner.evidence);

  const young = ageCheck(owner, context);
  if (young !== null) return keep(3, young.severity, young.reason, owner.evidence);

  const age = ageText(owner, context);
  if (v.creating) {
    const signal =
      owner.evidence === 'owner-tag'
        ? `no header yet, owner tag ${context.ownerTag}`
        : owner.evidence === 'source-header'
          ? `restore or clone: sector 0 still holds source ${owner.headerVolumeId}'s header, ${context.inventory.naming.tag}.from tag`
          : 'header written, rename pending';
    return {
      ...base,
      action: 'remove-volume',
      rule: 5,
      severity: 'info',
      reason: `interrupted create (${signal}), not in the live set, ${age}`,
      evidence: owner.evidence,
      ...(owner.headerVolumeId === undefined ? {} : { headerVolumeId: owner.headerVolumeId }),
    };
  }
  const interrupted =
    quarantineTagsOf(v.tags, context.inventory.naming).length > 0
      ? '; carries a quarantine tag: an interrupted quarantine, finished now'
      : '';
  if (quarantineOn(context.policy)) {
    return {
      ...base,
      action: 'quarantine-volume',
      rule: 6,
      severity: 'info',
      reason: `orphan: valid header of this owner, not in the live set, ${age}; quarantined for ${formatDuration(context.policy.quarantineMs ?? 0)} before removal${interrupted}`,
      evidence: owner.evidence,
    };
  }
  return {
    ...base,
    action: 'remove-volume',
    rule: 6,
    severity: 'info',
    reason: `orphan: valid header of this owner, not in the live set, ${age}${interrupted}`,
    evidence: owner.evidence,
  };
}

/** Rule 7: a quarantined LV, judged against the run's window and its own live set. */
function judgeQuarantined(q: InventoryQuarantined, context: PlanContext): GcQuarantinedEntry {
  const snapshotWithoutLiveSet = q.kind === 'snapshot' && context.snapshotLiveSet === null;
  const entry = decideQuarantined(q, {
    ownerId: context.policy.ownerId,
    naming: context.inventory.naming,
    nowMs: context.nowMs,
    windowMs: quarantineOn(context.policy) ? (context.policy.quarantineMs ?? 0) : null,
    liveSet: q.kind === 'volume' ? context.liveSet : context.snapshotLiveSet,
    windowName: `quarantine window ${formatDuration(context.policy.quarantineMs ?? 0)}`,
  });
  if (snapshotWithoutLiveSet && entry.action !== 'keep') {
    return {
      ...entry,
      action: 'keep',
      rule: 1,
      severity: 'warn',
      reason: 'no snapshot live set was given to this run; quarantined snapshots are kept',
    };
  }
  return entry;
}

function compareEntries(a: GcPlanEntry, b: GcPlanEntry): number {
  return compareText(a.device, b.device) || compareText(a.target, b.target);
}

function summarize(
  entries: readonly GcPlanEntry[],
  withSnapshots: boolean,
  withQuarantine: boolean,
): GcPlanSummary {
  const count = (test: (e: GcPlanEntry) => boolean) => entries.filter(test).length;
  return {
    volumes: count((e) => e.target === 'volume'),
    maps: count((e) => e.target === 'map'),
    keep: count((e) => e.action === 'keep'),
    removeMap: count((e) => e.action === 'remove-map'),
    removeVolume: count((e) => e.action === 'remove-volume'),
    ...(withSnapshots
      ? {
          snapshots: count((e) => e.target === 'snapshot'),
          removeSnapshot: count((e) => e.action === 'remove-snapshot'),
        }
      : {}),
    ...(withQuarantine
      ? {
          quarantined: count((e) => e.target === 'quarantined'),
          quarantine: count(
            (e) => e.action === 'quarantine-volume' || e.action === 'quarantine-snapshot',
          ),
          removeQuarantined: count((e) => e.action === 'remove-quarantined'),
        }
      : {}),
    warnings: count((e) => e.severity === 'warn'),
  };
}
