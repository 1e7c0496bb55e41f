import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_NAMING } from '../naming.js';
import { planGc } from './planner.js';
import {
  PROPERTY_RUNS,
  PROPERTY_SEED,
  PROPERTY_TIMEOUT_MS,
  gcInputArb,
  propertySeedLine,
  type GcInput,
} from '../testing/gc-inventories.js';
import { fromTagOf, hasBothTags, headerIs, snapshotTagsOf } from '../testing/gc-oracle.js';
import type {
  GcPlanEntry,
  GcPlan,
  GcPolicy,
  Inventory,
  InventoryMap,
  InventorySnapshot,
  InventoryVolume,
} from './types.js';

// Every safety rule of DESIGN.md §6, and its liveness side, over random
// inventories. The oracle below is written from DESIGN.md §2.3 and §6, not
// from the planner, and reads tags and headers with testing/gc-oracle.ts,
// not with the code under test: `removable*` say which devices a plan may
// remove, and the planner must remove exactly those, up to the deletion cap.
//
// Broken planners this property is known to catch on every seed tried
// (each with one deliberate fault; most within a few hundred inventories):
//   grace period ignored, or off by 1 ms   future time taken as age 0 (or within the grace)
//   unknown age taken as old               open count unknown taken as 0 (LV, snapshot)
//   open never checked                     its data device's open count ignored
//   live set ignored                       tags never checked (volumes, snapshots)
//   any owner tag accepted                 owner compared case-insensitively
//   another owner's header accepted        header ID trusted without the name's
//   clone `from=volume.<id>` not matched   the first of two `from` tags taken
//   lvstamp.size/created not required      snapshot aged by lv_time, or by sector 0
//   map over a young LV removed            map over an LV not provably lvstamp's removed
//   a map removal naming an LV             cap ignored, or applied per kind
//   snapshot removals not counted          percentage cap rounded, not floored
//   own stamped LVs counting other owners  everything kept (maps too)
//   entries unsorted, or in reverse order  the inventory sorted in place

const naming = DEFAULT_NAMING;

/** Creation time of a volume whose two signals hold (DESIGN.md §2.3, §6 rule 1), else undefined. */
function provedCreation(v: InventoryVolume, policy: GcPolicy): number | null | undefined {
  if (!hasBothTags(v.tags, policy.ownerId)) return undefined;
  const { header } = v;
  if (header.status === 'not-stamped') return v.creating ? v.lvCreatedAtMs : undefined;
  if (header.status !== 'ok' || header.header.ownerId !== policy.ownerId) return undefined;
  if (headerIs(header, v.volumeId, policy.ownerId)) return header.header.createdAtMs;
  // An interrupted restore or clone: its source's header, one well-formed from tag (§6 "Snapshots").
  const from = fromTagOf(v.tags);
  if (!v.creating || from === null) return undefined;
  return from.kind === 'snapshot' || from.id === header.header.volumeId
    ? v.lvCreatedAtMs
    : undefined;
}

/** Old enough by DESIGN.md §6 rule 3: a known creation time, not in the future, ≥ grace period. */
function oldEnough(created: number | null | undefined, input: GcInput): boolean {
  return (
    typeof created === 'number' &&
    created <= input.nowMs &&
    input.nowMs - created >= input.policy.minAgeMs
  );
}

/** Open by DESIGN.md §6 rule 1: the LV (count unknown or > 0) or a data device over it. */
function volumeOpen(v: InventoryVolume, maps: ReadonlyMap<string, InventoryMap>): boolean {
  return v.openCount !== 0 || v.dataMaps.some((name) => (maps.get(name)?.openCount ?? 0) > 0);
}

function removableVolume(
  v: InventoryVolume,
  input: GcInput,
  maps: ReadonlyMap<string, InventoryMap>,
): boolean {
  return (
    !input.liveSet.has(v.volumeId) &&
    !volumeOpen(v, maps) &&
    oldEnough(provedCreation(v, input.policy), input)
  );
}

function removableMap(
  m: InventoryMap,
  input: GcInput,
  volumes: ReadonlyMap<string, InventoryVolume>,
): boolean {
  if (m.volumeId === null || m.name !== `${naming.dmNamePrefix}${m.volumeId}`) return false;
  if (m.target === null || m.openCount > 0 || input.liveSet.has(m.volumeId)) return false;
  if (m.lv === null) return m.targetElsewhere !== true;
  const lv = volumes.get(m.lv);
  if (lv === undefined) return true;
  return lv.volumeId === m.volumeId && oldEnough(provedCreation(lv, input.policy), input);
}

function removableSnapshot(s: InventorySnapshot, input: GcInput): boolean {
  const { policy } = input;
  if (input.snapshotLiveSet === undefined || input.snapshotLiveSet.has(s.snapshotId)) return false;
  if (!hasBothTags(s.tags, policy.ownerId)) return false;
  // Aged by its lvstamp.created tag, never by lv_time or sector 0 (§6 "Snapshots", rule 3).
  const tags = snapshotTagsOf(s.tags);
  if (tags === null || s.openCount !== 0) return false;
  return headerIs(s.header, tags.source, policy.ownerId) && oldEnough(tags.createdMs, input);
}

/** The deletion cap of DESIGN.md §6: per run, and floor(percent × own stamped LVs / 100). */
function capOf(input: GcInput): number {
  const { inventory, policy } = input;
  const ownStamped = [...inventory.volumes, ...(inventory.snapshots ?? [])].filter(
    (v) => v.header.status === 'ok' && v.header.header.ownerId === policy.ownerId,
  ).length;
  const percent = policy.maxDeletionPercent;
  return percent === undefined
    ? policy.maxDeletions
    : Math.min(policy.maxDeletions, Math.floor((percent * ownStamped) / 100));
}

/** The actions an entry about a `target` may carry (checked at run time, whatever the types say). */
function actionsOf(target: 'map' | 'volume' | 'snapshot'): readonly string[] {
  return ['keep', target === 'map' ? 'remove-map' : `remove-${target}`];
}

/** A removal the deletion cap turned into keep (DESIGN.md §6: "would otherwise remove"). */
function cappedRemoval(entry: GcPlanEntry): boolean {
  return entry.action === 'keep' && entry.reason.startsWith('deletion cap of ');
}

/** A broken invariant: its name and the device, for the counterexample fast-check prints. */
function must(holds: boolean, invariant: string): void {
  if (!holds) throw new Error(`invariant broken: ${invariant}`);
}

/**
 * Asserts every invariant on one plan (plain checks, not `expect`: 10,000
 * inventories a run). Throws naming the first broken invariant.
 */
function checkPlan(input: GcInput, plan: GcPlan): void {
  const { inventory, liveSet, policy } = input;
  const volumes = new Map(inventory.volumes.map((v) => [v.device, v]));
  const maps = new Map(inventory.maps.map((m) => [m.name, m]));
  const snapshots = new Map((inventory.snapshots ?? []).map((s) => [s.device, s]));
  must(plan.entries.length === volumes.size + maps.size + snapshots.size, 'one entry per device');

  // A removal the cap turned into keep still says "would otherwise remove": it too must be allowed.
  let removals = 0;
  let capped = 0;
  let previous: GcPlanEntry | undefined;
  for (const entry of plan.entries) {
    const at = `${entry.action} ${entry.device}`;
    must(
      previous === undefined ||
        previous.device < entry.device ||
        (previous.device === entry.device && previous.target < entry.target),
      `entries are sorted by device (code-unit order), then target (${at})`,
    );
    previous = entry;
    must(
      capped === 0 || (entry.action !== 'remove-volume' && entry.action !== 'remove-snapshot'),
      `the cap keeps the last removals in entry order (${at})`,
    );
    must(entry.reason.trim() !== '', `every entry says why (${at})`);
    if (entry.target === 'map') {
      const m = maps.get(entry.device);
      must(m !== undefined, `a map entry names a listed map (${at})`);
      must(actionsOf('map').includes(entry.action), `a map entry never removes an LV (${at})`);
      if (m === undefined || entry.action !== 'remove-map') continue;
      must(
        !('lvName' in entry) && !volumes.has(entry.device),
        `a map removal touches no LV (${at})`,
      );
      must(m.volumeId === null || !liveSet.has(m.volumeId), `nothing live is removed (${at})`);
      must(m.openCount === 0, `nothing open is removed (${at})`);
      must(removableMap(m, input, volumes), `a map is removed only by rule 4 (${at})`);
    } else if (entry.target === 'volume') {
      const v = volumes.get(entry.device);
      must(
        v !== undefined && actionsOf('volume').includes(entry.action),
        `a volume entry names a listed LV (${at})`,
      );
      if (v !== undefined && !liveSet.has(v.volumeId) && !volumeOpen(v, maps)) {
        // Rule 3: an owned, closed orphan of unknown or future age is kept, with a warning.
        const created = provedCreation(v, policy);
        must(
          !(created === null || (created !== undefined && created > input.nowMs)) ||
            (entry.action === 'keep' && entry.rule === 3 && entry.severity === 'warn'),
          `unknown or future age is kept with a warning (${at})`,
        );
      }
      if (v === undefined || !(entry.action === 'remove-volume' || cappedRemoval(entry))) continue;
      if (cappedRemoval(entry)) capped += 1;
      else removals += 1;
      const created = provedCreation(v, policy);
      must(!liveSet.has(v.volumeId), `nothing live is removed (${at})`);
      must(created !== undefined, `nothing without both signals is removed (${at})`);
      must(!volumeOpen(v, maps), `nothing open is removed (${at})`);
      must(oldEnough(created, input), `nothing young or of unknown age is removed (${at})`);
      must(entry.lvUuid === v.lvUuid, `the entry names the LV's uuid (${at})`);
    } else {
      const s = snapshots.get(entry.device);
      must(
        s !== undefined && actionsOf('snapshot').includes(entry.action),
        `a snapshot entry names a listed LV (${at})`,
      );
      if (s === undefined || !(entry.action === 'remove-snapshot' || cappedRemoval(entry)))
        continue;
      if (cappedRemoval(entry)) capped += 1;
      else removals += 1;
      must(input.snapshotLiveSet?.has(s.snapshotId) === false, `nothing live is removed (${at})`);
      must(
        removableSnapshot(s, input),
        `a snapshot is removed only with both signals, closed and old (${at})`,
      );
    }
  }

  const cap = capOf(input);
  must(removals <= cap && plan.deletionCap === cap, `the caps hold (${removals} > ${cap})`);
  // Liveness: everything removable is planned, up to the cap (maps are not capped).
  const removable =
    inventory.volumes.filter((v) => removableVolume(v, input, maps)).length +
    (inventory.snapshots ?? []).filter((s) => removableSnapshot(s, input)).length;
  must(
    removals === Math.min(removable, cap),
    `every removable orphan within the cap is planned (${removals} of ${removable}, cap ${cap})`,
  );
  must(
    plan.capped === removable > cap && capped === removable - removals,
    'capped exactly when the cap turned a removal into keep',
  );
  must(
    plan.entries.filter((e) => e.action === 'remove-map').length ===
      inventory.maps.filter((m) => removableMap(m, input, volumes)).length,
    'every removable map is planned',
  );
}

function plan(input: GcInput): GcPlan {
  return planGc(
    input.inventory,
    input.liveSet,
    input.policy,
    input.nowMs,
    input.snapshotLiveSet === undefined ? {} : { snapshotLiveSet: input.snapshotLiveSet },
  );
}

/** The same inventory with every list reversed (the planner sorts; order must not matter). */
function reversed(inventory: Inventory): Inventory {
  return {
    ...inventory,
    volumes: [...inventory.volumes].reverse(),
    maps: [...inventory.maps].reverse(),
    ...(inventory.snapshots === undefined ? {} : { snapshots: [...inventory.snapshots].reverse() }),
  };
}

/** Recursively freezes an object graph, so that any write by the planner throws. */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

describe(`planGc properties (seed ${String(PROPERTY_SEED)}, ${String(PROPERTY_RUNS)} inventories; replay with LVSTAMP_PROPERTY_SEED)`, () => {
  it(
    'removes only what DESIGN.md §6 allows, everything it allows within the cap, deterministically, without touching its input',
    () => {
      console.log(propertySeedLine('planGc'));
      fc.assert(
        fc.property(gcInputArb, (input) => {
          // Frozen: a write to the inventory throws; the sets are checked by content.
          const liveBefore = [...input.liveSet, '|', ...(input.snapshotLiveSet ?? [])].join();
          const first = plan(deepFreeze(input));
          must(
            liveBefore === [...input.liveSet, '|', ...(input.snapshotLiveSet ?? [])].join(),
            'the input is not modified',
          );
          checkPlan(input, first);
          // Planned again from the same devices listed in reverse: one comparison shows the plan
          // deterministic and independent of the inventory's order.
          must(
            JSON.stringify(plan({ ...input, inventory: reversed(input.inventory) })) ===
              JSON.stringify(first),
            'the same input, in any order, gives the same plan',
          );
        }),
        { numRuns: PROPERTY_RUNS, seed: PROPERTY_SEED },
      );
    },
    PROPERTY_TIMEOUT_MS,
  );

  it(
    'generates inventories that reach every rule and action (the properties are not vacuous)',
    () => {
      const seen = new Map<string, number>();
      for (const input of fc.sample(gcInputArb, { numRuns: 3000, seed: 42 })) {
        const planned = plan(input);
        for (const e of planned.entries) {
          const key = `${e.target} ${e.action} ${String(e.rule)}`;
          seen.set(key, (seen.get(key) ?? 0) + 1);
        }
        if (planned.capped) seen.set('capped', (seen.get('capped') ?? 0) + 1);
      }
      expect([...seen.keys()].sort()).toEqual([
        'capped',
        'map keep 1',
        'map keep 2',
        'map keep 3',
        'map remove-map 4',
        'snapshot keep 1',
        'snapshot keep 2',
        'snapshot keep 3',
        'snapshot keep 6',
        'snapshot remove-snapshot 6',
        'volume keep 1',
        'volume keep 2',
        'volume keep 3',
        'volume keep 5',
        'volume keep 6',
        'volume remove-volume 5',
        'volume remove-volume 6',
      ]);
      // Each removal kind is common enough for the liveness side to bite.
      for (const key of [
        'map remove-map 4',
        'volume remove-volume 5',
        'volume remove-volume 6',
        'snapshot remove-snapshot 6',
      ]) {
        expect(seen.get(key) ?? 0, key).toBeGreaterThan(30);
      }
    },
    PROPERTY_TIMEOUT_MS,
  );
});
