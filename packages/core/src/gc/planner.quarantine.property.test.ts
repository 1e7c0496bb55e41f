import fc from 'fast-check';
import { describe, it } from 'vitest';
import { DEFAULT_NAMING, ownerTagFor, quarantinedLvNameFor, snapshotTagsFor } from '../naming.js';
import { planGc } from './planner.js';
import {
  HOUR,
  IDS,
  NOW,
  OWNERS,
  PROPERTY_RUNS,
  PROPERTY_SEED,
  PROPERTY_TIMEOUT_MS,
  gcInputArb,
  propertySeedLine,
  type GcInput,
} from '../testing/gc-inventories.js';
import { hasBothTags, headerIs, snapshotTagsOf, tagValues } from '../testing/gc-oracle.js';
import type { GcPlan, Inventory, InventoryHeader, InventoryQuarantined } from './types.js';

// DESIGN.md §6 "Quarantine" over random inventories: with a window, no
// finished volume and no snapshot is removed directly, and a quarantined LV
// is removed only once its window passed with both signals; then, over
// random sequences of runs against a model node, no volume or snapshot goes
// from live to removed without a full window in quarantine. The oracle reads
// tags with testing/gc-oracle.ts, not with the planner's code.

const DAY = 24 * HOUR;
const WINDOWS = [HOUR, 7 * DAY];
const [OWNER, OTHER_OWNER] = OWNERS;

/** Quarantine tag variants: a time around the window, none, two, malformed. */
function quarantineTagsArb(windowMs: number): fc.Arbitrary<readonly string[]> {
  const seconds = (ms: number) => `lvstamp.quarantined=${Math.floor(ms / 1000)}`;
  return fc.oneof(
    {
      weight: 6,
      arbitrary: fc
        .constantFrom(
          NOW - windowMs - 1000,
          NOW - windowMs,
          NOW - windowMs + 1000,
          NOW - 30 * DAY,
          NOW,
          NOW + HOUR,
        )
        .map((t) => [seconds(t)]),
    },
    { weight: 1, arbitrary: fc.constant([]) },
    { weight: 1, arbitrary: fc.constant([seconds(NOW - 30 * DAY), seconds(NOW - 40 * DAY)]) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(['lvstamp.quarantined=soon'], ['lvstamp.quarantined=-5']),
    },
  );
}

const headerFor = (volumeId: string, ownerId: string): InventoryHeader => ({
  status: 'ok',
  version: 2,
  header: {
    volumeId,
    ownerId,
    createdAtMs: NOW - 60 * DAY,
    dataOffsetBytes: 1048576,
    requestedBytes: 1 << 30,
    name: 'pvc-x',
  },
});

/** A random quarantined LV: either kind, every signal right or wrong. */
function quarantinedArb(windowMs: number): fc.Arbitrary<InventoryQuarantined> {
  return fc
    .record({
      kind: fc.constantFrom('volume' as const, 'snapshot' as const),
      id: fc.constantFrom(...IDS),
      vg: fc.constantFrom('vg0', 'vg1'),
      ownerTags: fc.constantFrom('both', 'both', 'both', 'none', 'other', 'upper'),
      qTags: quarantineTagsArb(windowMs),
      snapTags: fc.boolean(),
      header: fc.constantFrom('own', 'own', 'own', 'other-id', 'other-owner', 'unreadable'),
      open: fc.constantFrom<number | null>(0, 0, 0, 1, null),
    })
    .map((r): InventoryQuarantined => {
      const source = IDS[(IDS.indexOf(r.id) + 1) % IDS.length] ?? '';
      const expected = r.kind === 'volume' ? r.id : source;
      const ownerTag =
        r.ownerTags === 'both'
          ? [ownerTagFor(OWNER)]
          : r.ownerTags === 'other'
            ? [ownerTagFor(OTHER_OWNER)]
            : r.ownerTags === 'upper'
              ? [ownerTagFor(OWNER.toUpperCase())]
              : [];
      const snapTags =
        r.kind === 'snapshot' && r.snapTags
          ? snapshotTagsFor({ sourceVolumeId: source, sizeBytes: 1 << 30, createdMs: NOW - DAY })
          : [];
      const header: InventoryHeader =
        r.header === 'unreadable'
          ? { status: 'unreadable', reason: 'LV is inactive' }
          : headerFor(
              r.header === 'other-id' ? r.id.replace(/^./, 'f') : expected,
              r.header === 'other-owner' ? OTHER_OWNER : OWNER,
            );
      const lvName = quarantinedLvNameFor(r.kind, r.id);
      return {
        kind: r.kind,
        id: r.id,
        vgName: r.vg,
        lvName,
        lvUuid: `uuid-${r.vg}-${lvName}`,
        device: `${r.vg}/${lvName}`,
        sizeBytes: 1 << 30,
        tags: [
          ...(r.ownerTags === 'none' ? [] : ['lvstamp']),
          ...ownerTag,
          ...r.qTags,
          ...snapTags,
        ],
        kernel: r.header === 'unreadable' ? null : { major: 253, minor: 7 },
        header,
        openCount: r.open,
      };
    });
}

const inputArb = fc
  .record({ input: gcInputArb, windowMs: fc.constantFrom(...WINDOWS) })
  .chain(({ input, windowMs }) =>
    fc
      .uniqueArray(quarantinedArb(windowMs), { maxLength: 5, selector: (q) => q.device })
      .map((quarantined): GcInput => ({
        ...input,
        inventory: { ...input.inventory, quarantined },
        policy: { ...input.policy, quarantineMs: windowMs },
      })),
  );

/** The oracle: a quarantined LV may be removed (DESIGN.md §6 "Quarantine"). */
function expirable(q: InventoryQuarantined, input: GcInput): boolean {
  const window = input.policy.quarantineMs ?? 0;
  if (window <= 0 || !hasBothTags(q.tags, input.policy.ownerId)) return false;
  const times = tagValues(q.tags, 'quarantined');
  if (times.length !== 1 || !/^(0|[1-9][0-9]*)$/.test(times[0] ?? '')) return false;
  const at = Number(times[0]) * 1000;
  if (at > input.nowMs || input.nowMs - at < window) return false;
  const source = q.kind === 'snapshot' ? (snapshotTagsOf(q.tags)?.source ?? null) : q.id;
  if (source === null || q.openCount !== 0) return false;
  const live = q.kind === 'volume' ? input.liveSet : input.snapshotLiveSet;
  if (live === undefined || live.has(q.id)) return false;
  return headerIs(q.header, source, input.policy.ownerId);
}

function must(holds: boolean, invariant: string): void {
  if (!holds) throw new Error(`invariant broken: ${invariant}`);
}

/**
 * The percentage share with a window (DESIGN.md §6 "Cap"): floor(percent ×
 * own stamped LVs / 100), at least 1; no bound without a percentage.
 */
function shareOf(input: GcInput): number {
  const { inventory, policy } = input;
  const percent = policy.maxDeletionPercent;
  if (percent === undefined) return Infinity;
  const ownStamped = [...inventory.volumes, ...(inventory.snapshots ?? [])].filter(
    (v) => v.header.status === 'ok' && v.header.header.ownerId === policy.ownerId,
  ).length;
  return Math.max(1, Math.floor((percent * ownStamped) / 100));
}

function checkPlan(input: GcInput, plan: GcPlan): void {
  const quarantined = new Map((input.inventory.quarantined ?? []).map((q) => [q.device, q]));
  const volumes = new Map(input.inventory.volumes.map((v) => [v.device, v]));
  let acts = 0;
  let shared = 0;
  for (const entry of plan.entries) {
    const at = `${entry.action} ${entry.device}`;
    if (entry.action !== 'keep' && entry.action !== 'remove-map') acts += 1;
    if (entry.action !== 'keep' && entry.action !== 'remove-map' && entry.target !== 'quarantined')
      shared += 1;
    must(entry.action !== 'remove-snapshot', `no snapshot is removed directly (${at})`);
    if (entry.action === 'remove-volume') {
      must(
        volumes.get(entry.device)?.creating === true,
        `only an interrupted create is removed directly (${at})`,
      );
    }
    if (entry.target === 'quarantined') {
      const q = quarantined.get(entry.device);
      must(q !== undefined, `a quarantined entry names a listed LV (${at})`);
      if (q === undefined) continue;
      if (entry.action === 'remove-quarantined') {
        must(expirable(q, input), `a quarantined LV is removed only when expirable (${at})`);
      } else if (expirable(q, input)) {
        must(
          entry.reason.startsWith(
            `deletion cap of ${input.policy.maxDeletions} reached (at most ${input.policy.maxDeletions} per run)`,
          ),
          `an expirable LV is removed unless the per-run cap (never the percentage) held it (${at})`,
        );
      }
    }
  }
  must(
    acts <= input.policy.maxDeletions && plan.deletionCap === input.policy.maxDeletions,
    'quarantines and expiries count against maxDeletions',
  );
  must(shared <= shareOf(input), 'quarantines are held to the percentage share, at least 1');
  must(
    plan.entries.filter((e) => e.target === 'quarantined').length === quarantined.size,
    'one entry per quarantined LV',
  );
}

describe(`planGc with quarantine (${propertySeedLine('planGc quarantine')})`, () => {
  it(
    'removes no finished volume or snapshot directly, and a quarantined LV only after its window with both signals',
    () => {
      fc.assert(
        fc.property(inputArb, (input) => {
          checkPlan(
            input,
            planGc(
              input.inventory,
              input.liveSet,
              input.policy,
              input.nowMs,
              input.snapshotLiveSet === undefined ? {} : { snapshotLiveSet: input.snapshotLiveSet },
            ),
          );
        }),
        { seed: PROPERTY_SEED, numRuns: PROPERTY_RUNS },
      );
    },
    PROPERTY_TIMEOUT_MS,
  );

  it(
    'no path from live to removed without a whole window in quarantine, over sequences of runs',
    () => {
      fc.assert(
        fc.property(
          fc.constantFrom(...WINDOWS),
          fc.constantFrom<number | undefined>(undefined, 0, 20, 50),
          fc.array(
            fc.record({
              live: fc.subarray(IDS),
              liveSnapshots: fc.subarray(IDS),
              advanceMs: fc.constantFrom(0, HOUR, DAY, 3 * DAY, 8 * DAY),
            }),
            { minLength: 1, maxLength: 8 },
          ),
          (windowMs, percent, runs) => {
            const model = new ModelNode();
            let now = NOW;
            for (const run of runs) {
              now += run.advanceMs;
              const plan = planGc(
                model.inventory(now),
                new Set(run.live),
                {
                  ownerId: OWNER,
                  minAgeMs: HOUR,
                  maxDeletions: 3,
                  ...(percent === undefined ? {} : { maxDeletionPercent: percent }),
                  quarantineMs: windowMs,
                  dryRun: false,
                },
                now,
                { snapshotLiveSet: new Set(run.liveSnapshots) },
              );
              model.apply(plan, now, windowMs, new Set(run.live), new Set(run.liveSnapshots));
            }
          },
        ),
        { seed: PROPERTY_SEED, numRuns: Math.max(100, Math.floor(PROPERTY_RUNS / 10)) },
      );
    },
    PROPERTY_TIMEOUT_MS,
  );
});

/**
 * A node of five old, owned volumes and five snapshots that applies plans
 * the way the executor does (quarantine: tag with the plan time and rename;
 * expiry and removal: gone) and checks each act against its own history.
 */
class ModelNode {
  readonly #lvs = new Map<
    string,
    { kind: 'volume' | 'snapshot'; id: string; quarantinedAtMs: number | null }
  >();

  constructor() {
    for (const id of IDS) {
      this.#lvs.set(`v-${id}`, { kind: 'volume', id, quarantinedAtMs: null });
      this.#lvs.set(`s-${id}`, { kind: 'snapshot', id, quarantinedAtMs: null });
    }
  }

  inventory(nowMs: number): Inventory {
    const source = (id: string) => IDS[(IDS.indexOf(id) + 1) % IDS.length] ?? '';
    const tagsOf = (kind: 'volume' | 'snapshot', id: string) => [
      'lvstamp',
      ownerTagFor(OWNER),
      ...(kind === 'snapshot'
        ? snapshotTagsFor({ sourceVolumeId: source(id), sizeBytes: 1 << 30, createdMs: NOW - DAY })
        : []),
    ];
    const all = [...this.#lvs.values()];
    const lvBase = (lvName: string, id: string, kind: 'volume' | 'snapshot') => ({
      vgName: 'vg0',
      lvName,
      lvUuid: `uuid-${lvName}`,
      device: `vg0/${lvName}`,
      sizeBytes: 1 << 30,
      lvCreatedAtMs: NOW - 2 * DAY,
      kernel: { major: 253, minor: IDS.indexOf(id) },
      header: headerFor(kind === 'volume' ? id : source(id), OWNER),
      openCount: 0,
    });
    return {
      takenAtMs: nowMs,
      naming: DEFAULT_NAMING,
      volumes: all
        .filter((l) => l.kind === 'volume' && l.quarantinedAtMs === null)
        .map((l) => ({
          ...lvBase(`lvstamp_${l.id}`, l.id, 'volume'),
          volumeId: l.id,
          creating: false,
          tags: tagsOf('volume', l.id),
          dataMaps: [],
        })),
      maps: [],
      snapshots: all
        .filter((l) => l.kind === 'snapshot' && l.quarantinedAtMs === null)
        .map((l) => ({
          ...lvBase(`lvstamp_snap_${l.id}`, l.id, 'snapshot'),
          snapshotId: l.id,
          tags: tagsOf('snapshot', l.id),
        })),
      quarantined: all
        .filter((l) => l.quarantinedAtMs !== null)
        .map((l) => {
          const lvName = quarantinedLvNameFor(l.kind, l.id);
          return {
            ...lvBase(lvName, l.id, l.kind),
            kind: l.kind,
            id: l.id,
            tags: [
              ...tagsOf(l.kind, l.id),
              `lvstamp.quarantined=${Math.floor((l.quarantinedAtMs ?? 0) / 1000)}`,
            ],
          };
        })
        .sort((a, b) => (a.device < b.device ? -1 : 1)),
    };
  }

  apply(
    plan: GcPlan,
    nowMs: number,
    windowMs: number,
    live: ReadonlySet<string>,
    liveSnapshots: ReadonlySet<string>,
  ): void {
    for (const e of plan.entries) {
      const at = `${e.action} ${e.device} at ${new Date(nowMs).toISOString()}`;
      if (e.action === 'remove-volume' || e.action === 'remove-snapshot') {
        must(false, `removed without quarantine (${at})`);
      }
      if (e.action === 'quarantine-volume' || e.action === 'quarantine-snapshot') {
        const kind = e.action === 'quarantine-volume' ? 'volume' : 'snapshot';
        const id = e.target === 'volume' ? e.volumeId : e.snapshotId;
        const lv = this.#lvs.get(`${kind[0] ?? ''}-${id}`);
        must(
          lv !== undefined && lv.quarantinedAtMs === null,
          `quarantines a live-named LV (${at})`,
        );
        must(
          !(kind === 'volume' ? live : liveSnapshots).has(id),
          `quarantines nothing live (${at})`,
        );
        if (lv !== undefined) lv.quarantinedAtMs = Math.floor(plan.plannedAtMs / 1000) * 1000;
      }
      if (e.action === 'remove-quarantined') {
        const key = `${e.kind[0] ?? ''}-${e.id}`;
        const lv = this.#lvs.get(key);
        must(lv?.quarantinedAtMs != null, `removes only what is in quarantine (${at})`);
        must(
          lv?.quarantinedAtMs != null && nowMs - lv.quarantinedAtMs >= windowMs,
          `a whole window passed in quarantine (${at})`,
        );
        must(
          !(e.kind === 'volume' ? live : liveSnapshots).has(e.id),
          `removes nothing live (${at})`,
        );
        this.#lvs.delete(key);
      }
    }
  }
}
