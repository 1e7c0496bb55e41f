import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_NAMING,
  dmNameFor,
  dmUuidFor,
  lvNameFor,
  newLvNameFor,
  ownerTagFor,
  parseSnapshotTags,
  snapshotLvNameFor,
  snapshotTagsFor,
} from '../naming.js';
import { planGc } from './planner.js';
import type {
  GcPlan,
  GcPolicy,
  Inventory,
  InventoryHeader,
  InventoryMap,
  InventoryVolume,
} from './types.js';

// Random nodes: a few volume IDs and two owners, so that live sets, owners,
// duplicate IDs and maps collide often.

const OWNERS = ['11111111111111111111111111111111', '22222222222222222222222222222222'] as const;
const IDS = ['a', 'b', 'c', 'd', 'e', 'f'].map((l) => l.repeat(32));
const NOW = Date.parse('2025-06-01T12:00:00.000Z');
const HOUR = 3_600_000;

const idArb = fc.constantFrom(...IDS);
const timeArb = fc.option(fc.integer({ min: NOW - 10 * HOUR, max: NOW + HOUR }), { nil: null });

const headerArb: fc.Arbitrary<InventoryHeader> = fc.oneof(
  fc.record({
    status: fc.constant('ok' as const),
    version: fc.constant(1 as const),
    header: fc.record({
      volumeId: idArb,
      ownerId: fc.constantFrom(...OWNERS),
      createdAtMs: fc.integer({ min: NOW - 10 * HOUR, max: NOW + HOUR }),
      dataOffsetBytes: fc.constant(1048576),
      requestedBytes: fc.constant(1 << 30),
      name: fc.constant('pvc-x'),
    }),
  }),
  fc.constant({ status: 'not-stamped' as const, reason: 'magic absent' }),
  fc.constant({ status: 'unsupported' as const, reason: 'version 7 > 1', version: 7 }),
  fc.constant({ status: 'corrupt' as const, reason: 'checksum mismatch' }),
  fc.constant({ status: 'unreadable' as const, reason: 'LV is inactive' }),
);

interface RawVolume {
  readonly volumeId: string;
  readonly vgName: string;
  readonly creating: boolean;
  readonly header: InventoryHeader;
  readonly lvCreatedAtMs: number | null;
  readonly tags: string[];
  readonly openCount: number | null;
  readonly attached: boolean;
  readonly mapOpen: number;
}

const rawVolumeArb: fc.Arbitrary<RawVolume> = fc.record({
  volumeId: idArb,
  vgName: fc.constantFrom('vg0', 'vg1'),
  creating: fc.boolean(),
  header: headerArb,
  lvCreatedAtMs: timeArb,
  tags: fc.subarray(['lvstamp', ownerTagFor(OWNERS[0]), ownerTagFor(OWNERS[1])]),
  openCount: fc.option(fc.nat(2), { nil: null, freq: 5 }),
  attached: fc.boolean(),
  mapOpen: fc.nat(1),
});

const nodeArb = fc
  .record({
    raws: fc.uniqueArray(rawVolumeArb, {
      maxLength: 12,
      selector: (r) => `${r.vgName}/${String(r.creating)}/${r.volumeId}`,
    }),
    strayMaps: fc.uniqueArray(
      fc.record({ volumeId: idArb, openCount: fc.nat(1), linear: fc.boolean() }),
      {
        maxLength: 3,
        selector: (m) => m.volumeId,
      },
    ),
  })
  .map(({ raws, strayMaps }): Inventory => {
    const volumes: InventoryVolume[] = [];
    const maps: InventoryMap[] = [];
    raws.forEach((r, i) => {
      const lvName = r.creating ? newLvNameFor(r.volumeId) : lvNameFor(r.volumeId);
      const device = `${r.vgName}/${lvName}`;
      const kernel = { major: 253, minor: i };
      // A data device per volume ID at most (its name is derived from the ID).
      const attached = r.attached && !maps.some((m) => m.volumeId === r.volumeId);
      if (attached) {
        maps.push({
          name: dmNameFor(r.volumeId),
          uuid: dmUuidFor(r.volumeId),
          volumeId: r.volumeId,
          kernel: { major: 253, minor: 500 + i },
          openCount: r.mapOpen,
          target: kernel,
          lv: device,
        });
      }
      volumes.push({
        volumeId: r.volumeId,
        creating: r.creating,
        vgName: r.vgName,
        lvName,
        lvUuid: `uuid-${String(i)}`,
        device,
        sizeBytes: 1 << 30,
        lvCreatedAtMs: r.lvCreatedAtMs,
        tags: r.tags,
        kernel,
        header: r.header,
        openCount: r.openCount,
        dataMaps: attached ? [dmNameFor(r.volumeId)] : [],
      });
    });
    for (const s of strayMaps) {
      if (maps.some((m) => m.volumeId === s.volumeId)) continue;
      maps.push({
        name: dmNameFor(s.volumeId),
        uuid: dmUuidFor(s.volumeId),
        volumeId: s.volumeId,
        kernel: { major: 253, minor: 900 },
        openCount: s.openCount,
        target: s.linear ? { major: 7, minor: 3 } : null,
        lv: null,
      });
    }
    return { takenAtMs: NOW, naming: DEFAULT_NAMING, volumes, maps };
  });

const policyArb: fc.Arbitrary<GcPolicy> = fc.record(
  {
    ownerId: fc.constantFrom(...OWNERS),
    minAgeMs: fc.integer({ min: 0, max: 5 * HOUR }),
    maxDeletions: fc.nat(6),
    maxDeletionPercent: fc.integer({ min: 0, max: 100 }),
    dryRun: fc.boolean(),
  },
  { requiredKeys: ['ownerId', 'minAgeMs', 'maxDeletions', 'dryRun'] },
);

const liveArb = fc.subarray(IDS).map((ids) => new Set(ids));

/** Creation time the planner may age a volume by, when its ownership is proved; else undefined. */
function provedCreation(v: InventoryVolume, policy: GcPolicy): number | null | undefined {
  if (v.header.status === 'ok') {
    const h = v.header.header;
    return h.volumeId === v.volumeId && h.ownerId === policy.ownerId ? h.createdAtMs : undefined;
  }
  if (
    v.header.status === 'not-stamped' &&
    v.creating &&
    v.tags.includes(ownerTagFor(policy.ownerId))
  ) {
    return v.lvCreatedAtMs;
  }
  return undefined;
}

function oldEnough(created: number | null | undefined, policy: GcPolicy): boolean {
  return typeof created === 'number' && created <= NOW && NOW - created >= policy.minAgeMs;
}

function checkPlan(
  inventory: Inventory,
  live: ReadonlySet<string>,
  policy: GcPolicy,
  plan: GcPlan,
): void {
  const volumes = new Map(inventory.volumes.map((v) => [v.device, v]));
  const maps = new Map(inventory.maps.map((m) => [m.name, m]));
  expect(plan.entries).toHaveLength(inventory.volumes.length + inventory.maps.length);

  for (const entry of plan.entries) {
    expect(entry.reason.trim()).not.toBe('');
    if (entry.target === 'volume') {
      expect(entry.action).not.toBe('remove-map');
      if (entry.action !== 'remove-volume') continue;
      const v = volumes.get(entry.device);
      if (v === undefined) throw new Error(`no volume ${entry.device}`);
      // Never: live, foreign owner, corrupt, unsupported, unreadable,
      // headerless finished, open, young or of unknown age.
      expect(live.has(v.volumeId)).toBe(false);
      expect(oldEnough(provedCreation(v, policy), policy)).toBe(true);
      expect(v.openCount).toBe(0);
      for (const name of v.dataMaps) expect(maps.get(name)?.openCount).toBe(0);
      if (!v.creating) expect(v.header.status).toBe('ok');
    } else {
      expect(entry.action).not.toBe('remove-volume');
      if (entry.action !== 'remove-map') continue;
      const m = maps.get(entry.device);
      if (m === undefined) throw new Error(`no map ${entry.device}`);
      expect(m.openCount).toBe(0);
      expect(m.volumeId === null || live.has(m.volumeId)).toBe(false);
      expect(m.target).not.toBeNull();
      if (m.lv !== null) {
        const v = volumes.get(m.lv);
        if (v === undefined) throw new Error(`no volume ${m.lv}`);
        expect(v.volumeId).toBe(m.volumeId);
        expect(oldEnough(provedCreation(v, policy), policy)).toBe(true);
      }
    }
  }

  const ownStamped = inventory.volumes.filter(
    (v) => v.header.status === 'ok' && v.header.header.ownerId === policy.ownerId,
  ).length;
  const removals = plan.entries.filter((e) => e.action === 'remove-volume').length;
  expect(removals).toBeLessThanOrEqual(policy.maxDeletions);
  if (policy.maxDeletionPercent !== undefined) {
    expect(removals * 100).toBeLessThanOrEqual(policy.maxDeletionPercent * ownStamped);
  }
  expect(plan.summary.removeVolume).toBe(removals);
  if (!plan.capped) {
    expect(plan.entries.some((e) => e.reason.startsWith('deletion cap'))).toBe(false);
  }
}

describe('planGc properties', () => {
  it('never removes what it must keep, always says why, never exceeds the cap', () => {
    fc.assert(
      fc.property(nodeArb, liveArb, policyArb, (inventory, live, policy) => {
        checkPlan(inventory, live, policy, planGc(inventory, live, policy, NOW));
      }),
      { numRuns: 2000 },
    );
  });

  it('gives the same plan for any order of the inventory', () => {
    fc.assert(
      fc.property(nodeArb, liveArb, policyArb, fc.boolean(), (inventory, live, policy, reverse) => {
        const shuffled: Inventory = {
          ...inventory,
          volumes: reverse ? [...inventory.volumes].reverse() : inventory.volumes,
          maps: [...inventory.maps].reverse(),
        };
        expect(planGc(shuffled, live, policy, NOW)).toEqual(planGc(inventory, live, policy, NOW));
      }),
      { numRuns: 300 },
    );
  });

  it('generates nodes that reach every rule and action (the properties above are not vacuous)', () => {
    const seen = new Set<string>();
    for (const [inventory, live, policy] of fc.sample(fc.tuple(nodeArb, liveArb, policyArb), {
      numRuns: 2000,
      seed: 42,
    })) {
      for (const e of planGc(inventory, live, policy, NOW).entries)
        seen.add(`${e.target} ${e.action} ${String(e.rule)}`);
    }
    expect([...seen].sort()).toEqual([
      'map keep 1',
      'map keep 2',
      'map keep 3',
      'map remove-map 4',
      'volume keep 1',
      'volume keep 2',
      'volume keep 3',
      'volume keep 5',
      'volume keep 6',
      'volume remove-volume 5',
      'volume remove-volume 6',
    ]);
  });
});

// Snapshot LVs (DESIGN.md §6 "Snapshots"): random tags, sector 0, open counts and live sets.

const snapshotArb = fc.record({
  snapshotId: idArb,
  vgName: fc.constantFrom('vg0', 'vg1'),
  header: headerArb,
  base: fc.subarray(['lvstamp', ownerTagFor(OWNERS[0]), ownerTagFor(OWNERS[1])]),
  source: fc.option(idArb, { nil: null }),
  createdMs: fc.integer({ min: NOW - 10 * HOUR, max: NOW + HOUR }),
  openCount: fc.option(fc.nat(1), { nil: null, freq: 5 }),
});

const snapshotNodeArb = fc
  .uniqueArray(snapshotArb, { maxLength: 8, selector: (s) => `${s.vgName}/${s.snapshotId}` })
  .map((raws): Inventory => ({
    takenAtMs: NOW,
    naming: DEFAULT_NAMING,
    volumes: [],
    maps: [],
    snapshots: raws.map((r, i) => ({
      snapshotId: r.snapshotId,
      vgName: r.vgName,
      lvName: snapshotLvNameFor(r.snapshotId),
      lvUuid: `uuid-s${String(i)}`,
      device: `${r.vgName}/${snapshotLvNameFor(r.snapshotId)}`,
      sizeBytes: 1 << 30,
      lvCreatedAtMs: r.createdMs,
      tags: [
        ...r.base,
        ...(r.source === null
          ? []
          : snapshotTagsFor({
              sourceVolumeId: r.source,
              sizeBytes: 1 << 30,
              createdMs: r.createdMs,
            })),
      ],
      kernel: { major: 253, minor: 700 + i },
      header: r.header,
      openCount: r.openCount,
    })),
  }));

describe('planGc snapshot properties', () => {
  it('removes a snapshot only with both signals, not live, not open and old enough', () => {
    fc.assert(
      fc.property(
        snapshotNodeArb,
        fc.option(liveArb, { nil: undefined }),
        liveArb,
        policyArb,
        (inventory, snapshotLive, live, policy) => {
          const plan = planGc(
            inventory,
            live,
            policy,
            NOW,
            snapshotLive === undefined ? {} : { snapshotLiveSet: snapshotLive },
          );
          const byDevice = new Map((inventory.snapshots ?? []).map((s) => [s.device, s]));
          expect(plan.entries).toHaveLength(byDevice.size);
          for (const entry of plan.entries) {
            expect(entry.reason.trim()).not.toBe('');
            if (entry.action !== 'remove-snapshot') continue;
            const s = byDevice.get(entry.device);
            if (s === undefined) throw new Error(`no snapshot ${entry.device}`);
            const tags = parseSnapshotTags(s.tags);
            expect(snapshotLive?.has(s.snapshotId)).toBe(false);
            expect(s.tags).toContain('lvstamp');
            expect(s.tags).toContain(ownerTagFor(policy.ownerId));
            expect(tags).not.toBeNull();
            expect(s.header.status).toBe('ok');
            if (s.header.status !== 'ok' || tags === null) continue;
            expect(s.header.header.ownerId).toBe(policy.ownerId);
            expect(s.header.header.volumeId).toBe(tags.sourceVolumeId);
            expect(s.openCount).toBe(0);
            expect(oldEnough(tags.createdMs, policy)).toBe(true);
          }
          const removals = plan.entries.filter((e) => e.action === 'remove-snapshot').length;
          expect(removals).toBeLessThanOrEqual(policy.maxDeletions);
          expect(plan.summary.removeSnapshot).toBe(removals);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('generates snapshots that reach every snapshot rule and action', () => {
    const seen = new Set<string>();
    for (const [inventory, snapshotLive, policy] of fc.sample(
      fc.tuple(snapshotNodeArb, liveArb, policyArb),
      { numRuns: 3000, seed: 42 },
    )) {
      for (const e of planGc(inventory, new Set(), policy, NOW, { snapshotLiveSet: snapshotLive })
        .entries)
        seen.add(`${e.target} ${e.action} ${String(e.rule)}`);
    }
    expect([...seen].sort()).toEqual([
      'snapshot keep 1',
      'snapshot keep 2',
      'snapshot keep 3',
      'snapshot keep 6',
      'snapshot remove-snapshot 6',
    ]);
  });
});
