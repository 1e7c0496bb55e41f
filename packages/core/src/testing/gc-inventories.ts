// Random GC inputs for the property tests of the planner and the executor
// (DESIGN.md §6): inventories whose every signal varies, with a printed,
// replayable seed.
import fc from 'fast-check';
import type {
  Inventory,
  InventoryHeader,
  InventoryMap,
  InventorySnapshot,
  InventoryVolume,
  GcPolicy,
} from '../gc/types.js';
import {
  DEFAULT_NAMING,
  dmNameFor,
  dmUuidFor,
  fromTagFor,
  lvNameFor,
  newLvNameFor,
  ownerTagFor,
  snapshotLvNameFor,
  snapshotTagsFor,
} from '../naming.js';

/** Seed of this run: `LVSTAMP_PROPERTY_SEED` when set (to replay a failure), else random. */
export const PROPERTY_SEED: number = (() => {
  const given = process.env.LVSTAMP_PROPERTY_SEED;
  if (given !== undefined && given !== '') {
    const seed = Number(given);
    if (!Number.isSafeInteger(seed))
      throw new Error(`LVSTAMP_PROPERTY_SEED must be an integer, got "${given}"`);
    return seed;
  }
  return Math.floor(Math.random() * 2 ** 31);
})();

/** Inventories per property: `LVSTAMP_PROPERTY_RUNS` when set, else 10,000. */
export const PROPERTY_RUNS: number = Number(process.env.LVSTAMP_PROPERTY_RUNS ?? '') || 10_000;

export const NOW = Date.parse('2025-06-01T12:00:00.000Z');
export const HOUR = 3_600_000;
/** Two installations: the GC's owner is one of them, the other is a neighbour. */
export const OWNERS = [
  '11111111111111111111111111111111',
  '22222222222222222222222222222222',
] as const;
/** Few IDs, so that live sets, duplicate IDs across groups and maps collide often. */
export const IDS = ['a', 'b', 'c', 'd', 'e'].map((l) => l.repeat(32));
const VGS = ['vg0', 'vg1', 'vg2'];
/** Grace periods; creation times are drawn around them. */
const GRACES = [0, HOUR, 2 * HOUR];

/** One GC run's input. */
export interface GcInput {
  readonly inventory: Inventory;
  readonly liveSet: ReadonlySet<string>;
  readonly snapshotLiveSet: ReadonlySet<string> | undefined;
  readonly policy: GcPolicy;
  readonly nowMs: number;
}

const idArb = fc.constantFrom(...IDS);
/** Mostly the first owner, the GC's usual one, so that removable orphans are common. */
const ownerArb = fc.constantFrom(OWNERS[0], OWNERS[0], OWNERS[0], OWNERS[1]);

/** Times around each grace period (±1 ms), now, the future, long ago; or unknown. */
const timeArb: fc.Arbitrary<number> = fc.oneof(
  fc.constantFrom(
    ...GRACES.flatMap((g) => [NOW - g - 1, NOW - g, NOW - g + 1]),
    NOW + 1,
    NOW + HOUR,
    NOW - 10 * HOUR,
  ),
  fc.integer({ min: NOW - 3 * HOUR, max: NOW + HOUR }),
);
const maybeTimeArb = fc.option(timeArb, { nil: null, freq: 8 });

/** Sector 0 of an LV: every status; an `ok` header's volume ID is re-aimed by `matchesName`. */
const headerArb: fc.Arbitrary<InventoryHeader> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      status: fc.constant('ok' as const),
      version: fc.constantFrom(1 as const, 2 as const),
      header: fc.record({
        volumeId: idArb,
        ownerId: ownerArb,
        createdAtMs: timeArb,
        dataOffsetBytes: fc.constant(1048576),
        requestedBytes: fc.constant(1 << 30),
        name: fc.constant('pvc-x'),
      }),
    }),
  },
  { weight: 2, arbitrary: fc.constant({ status: 'not-stamped' as const, reason: 'magic absent' }) },
  {
    weight: 1,
    arbitrary: fc.constant({ status: 'unsupported' as const, reason: 'version 7 > 2', version: 7 }),
  },
  {
    weight: 1,
    arbitrary: fc.constant({ status: 'corrupt' as const, reason: 'checksum mismatch' }),
  },
  {
    weight: 1,
    arbitrary: fc.constant({ status: 'unreadable' as const, reason: 'LV is inactive' }),
  },
);
/** Mostly true: the header's volume ID is the one the LV name carries. */
const matchesNameArb = fc.oneof(
  { weight: 4, arbitrary: fc.constant(true) },
  { weight: 1, arbitrary: fc.constant(false) },
);

/** Tags of a volume LV: each ownership tag present or missing, and restore/clone `from` tags. */
const volumeTagsArb: fc.Arbitrary<string[]> = fc
  .record({
    lvstamp: fc.oneof(
      { weight: 5, arbitrary: fc.constant(true) },
      { weight: 1, arbitrary: fc.constant(false) },
    ),
    owner: fc.constantFrom<(string | null)[]>(OWNERS[0], OWNERS[0], OWNERS[1], null),
    extraOwner: fc.boolean(),
    from: fc.option(
      fc.oneof(
        fc
          .record({ kind: fc.constantFrom('snapshot' as const, 'volume' as const), id: idArb })
          .map((s) => fromTagFor(s)),
        fc.constant('lvstamp.from=volume.nothex'),
      ),
      { nil: null, freq: 3 },
    ),
  })
  .map(({ lvstamp, owner, extraOwner, from }) => [
    ...(lvstamp ? [DEFAULT_NAMING.tag] : []),
    ...(owner === null ? [] : [ownerTagFor(owner)]),
    ...(extraOwner && owner === OWNERS[0] ? [ownerTagFor(OWNERS[1])] : []),
    ...(from === null ? [] : [from]),
  ]);

const openArb = fc.constantFrom<(number | null)[]>(0, 0, 0, 0, 0, 1, 2, null);

const rawVolumeArb = fc.record({
  vg: fc.constantFrom(...VGS),
  volumeId: idArb,
  creating: fc.boolean(),
  lvCreatedAtMs: maybeTimeArb,
  tags: volumeTagsArb,
  header: headerArb,
  headerMatchesName: matchesNameArb,
  openCount: openArb,
});

const rawMapArb = fc.record({
  volumeId: fc.option(idArb, { nil: null, freq: 10 }),
  nameMatches: fc.oneof(
    { weight: 9, arbitrary: fc.constant(true) },
    { weight: 1, arbitrary: fc.constant(false) },
  ),
  /** Where its linear table points: a listed LV, a device that is gone, one elsewhere, or no linear table. */
  target: fc.oneof(
    { weight: 6, arbitrary: fc.nat(20).map((index) => ({ kind: 'lv' as const, index })) },
    { weight: 2, arbitrary: fc.constant({ kind: 'gone' as const }) },
    { weight: 1, arbitrary: fc.constant({ kind: 'elsewhere' as const }) },
    { weight: 1, arbitrary: fc.constant({ kind: 'nonlinear' as const }) },
  ),
  openCount: fc.constantFrom(0, 0, 0, 1),
});

const rawSnapshotArb = fc.record({
  vg: fc.constantFrom(...VGS),
  snapshotId: idArb,
  base: volumeTagsArb,
  source: fc.option(idArb, { nil: null, freq: 6 }),
  createdMs: timeArb,
  header: headerArb,
  /** Sector 0 of a snapshot is its source's header: mostly so. */
  headerIsSource: matchesNameArb,
  openCount: openArb,
});

const policyArb: fc.Arbitrary<GcPolicy> = fc.record(
  {
    ownerId: ownerArb,
    minAgeMs: fc.constantFrom(...GRACES),
    maxDeletions: fc.nat(6),
    maxDeletionPercent: fc.oneof(fc.constantFrom(0, 30, 50, 100), fc.integer({ min: 0, max: 100 })),
    dryRun: fc.boolean(),
  },
  { requiredKeys: ['ownerId', 'minAgeMs', 'maxDeletions', 'dryRun'] },
);

const idSetArb = fc.subarray(IDS, { maxLength: 3 }).map((ids) => new Set(ids));

/**
 * A random node (volumes in several groups, data device maps, snapshots),
 * live sets, a policy and now. The inventory is consistent the way
 * `takeInventory` builds one: a map's `lv` is the listed LV its table
 * targets, that LV lists the map in `dataMaps`, an inactive LV has no kernel
 * number and an unreadable header.
 */
export const gcInputArb: fc.Arbitrary<GcInput> = fc
  .record({
    volumes: fc.uniqueArray(rawVolumeArb, {
      maxLength: 8,
      selector: (r) => `${r.vg}/${String(r.creating)}/${r.volumeId}`,
    }),
    maps: fc.uniqueArray(rawMapArb, {
      maxLength: 4,
      selector: (m) => m.volumeId ?? 'none', // device-mapper UUIDs are unique on a host
    }),
    snapshots: fc.option(
      fc.uniqueArray(rawSnapshotArb, { maxLength: 4, selector: (s) => `${s.vg}/${s.snapshotId}` }),
      { nil: undefined, freq: 4 },
    ),
    liveSet: idSetArb,
    snapshotLiveSet: fc.option(idSetArb, { nil: undefined, freq: 4 }),
    policy: policyArb,
  })
  .map(
    ({
      volumes: rawVolumes,
      maps: rawMaps,
      snapshots: rawSnapshots,
      liveSet,
      snapshotLiveSet,
      policy,
    }): GcInput => {
      const volumes: InventoryVolume[] = rawVolumes.map((r, i) => {
        const lvName = r.creating ? newLvNameFor(r.volumeId) : lvNameFor(r.volumeId);
        const header: InventoryHeader =
          r.header.status === 'ok' && r.headerMatchesName
            ? { ...r.header, header: { ...r.header.header, volumeId: r.volumeId } }
            : r.header;
        const active = header.status !== 'unreadable';
        return {
          volumeId: r.volumeId,
          creating: r.creating,
          vgName: r.vg,
          lvName,
          lvUuid: `uuid-v${String(i)}`,
          device: `${r.vg}/${lvName}`,
          sizeBytes: 1 << 30,
          lvCreatedAtMs: r.lvCreatedAtMs,
          tags: r.tags,
          kernel: active ? { major: 253, minor: i } : null,
          header,
          openCount: active ? r.openCount : 0,
          dataMaps: [],
        };
      });
      const maps: InventoryMap[] = [];
      rawMaps.forEach((r, i) => {
        const id = r.volumeId ?? IDS[i % IDS.length] ?? '';
        const name = r.nameMatches ? dmNameFor(id) : `${dmNameFor(id)}-x`;
        if (maps.some((m) => m.name === name)) return;
        const lv =
          r.target.kind === 'lv'
            ? volumes[r.target.index % Math.max(volumes.length, 1)]
            : undefined;
        const target =
          r.target.kind === 'nonlinear'
            ? null
            : lv?.kernel != null
              ? lv.kernel
              : { major: r.target.kind === 'elsewhere' ? 253 : 7, minor: 900 + i };
        const lvDevice = lv?.kernel != null ? lv.device : null;
        if (lv !== undefined && lvDevice !== null) {
          volumes[volumes.indexOf(lv)] = { ...lv, dataMaps: [...lv.dataMaps, name] };
        }
        maps.push({
          name,
          uuid: r.volumeId === null ? `LVSTAMP-garbage${String(i)}` : dmUuidFor(id),
          volumeId: r.volumeId,
          kernel: { major: 253, minor: 500 + i },
          openCount: r.openCount,
          target,
          lv: target === null ? null : lvDevice,
          targetElsewhere: target !== null && lvDevice === null && r.target.kind === 'elsewhere',
        });
      });
      const snapshots: InventorySnapshot[] | undefined = rawSnapshots?.map((r, i) => {
        const lvName = snapshotLvNameFor(r.snapshotId);
        const source = r.source ?? IDS[1] ?? '';
        const header: InventoryHeader =
          r.header.status === 'ok' && r.headerIsSource
            ? { ...r.header, header: { ...r.header.header, volumeId: source } }
            : r.header;
        const active = header.status !== 'unreadable';
        return {
          snapshotId: r.snapshotId,
          vgName: r.vg,
          lvName,
          lvUuid: `uuid-s${String(i)}`,
          device: `${r.vg}/${lvName}`,
          sizeBytes: 1 << 30,
          lvCreatedAtMs: r.createdMs,
          tags: [
            ...r.base.filter((t) => !t.startsWith('lvstamp.from=')),
            ...(r.source === null
              ? []
              : snapshotTagsFor({
                  sourceVolumeId: r.source,
                  sizeBytes: 1 << 30,
                  createdMs: r.createdMs,
                })),
          ],
          kernel: active ? { major: 253, minor: 700 + i } : null,
          header,
          openCount: active ? r.openCount : 0,
        };
      });
      const sortedBy =
        <T>(key: (t: T) => string) =>
        (a: T, b: T) =>
          key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0;
      return {
        inventory: {
          takenAtMs: NOW,
          naming: DEFAULT_NAMING,
          volumes: volumes.sort(sortedBy((v) => v.device)),
          maps: maps.sort(sortedBy((m) => m.name)),
          ...(snapshots === undefined
            ? {}
            : { snapshots: snapshots.sort(sortedBy((s) => s.device)) }),
        },
        liveSet,
        snapshotLiveSet,
        policy,
        nowMs: NOW,
      };
    },
  );
