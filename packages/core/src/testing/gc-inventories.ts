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
} from '../naming.js';

/**
 * The seed given in `LVSTAMP_PROPERTY_SEED` (decimal, optionally negative, a
 * safe integer), or null when unset or empty.
 * @throws Error naming the variable and the value for anything else.
 */
export function parsePropertySeed(given: string | undefined): number | null {
  if (given === undefined || given === '') return null;
  if (!/^-?(0|[1-9][0-9]*)$/.test(given) || !Number.isSafeInteger(Number(given))) {
    throw new Error(`LVSTAMP_PROPERTY_SEED must be an integer, got "${given}"`);
  }
  return Number(given);
}

/** Inventories per property run when `LVSTAMP_PROPERTY_RUNS` is unset (the CI setting). */
export const DEFAULT_PROPERTY_RUNS = 10_000;

/**
 * The inventories per property given in `LVSTAMP_PROPERTY_RUNS`: a positive
 * decimal integer (a safe integer); DEFAULT_PROPERTY_RUNS when unset or empty.
 * @throws Error naming the variable and the value for anything else (0,
 *   negative, fractional, not a number), so that a typo never silently runs
 *   the default or no inventory at all.
 */
export function parsePropertyRuns(given: string | undefined): number {
  if (given === undefined || given === '') return DEFAULT_PROPERTY_RUNS;
  if (!/^[1-9][0-9]*$/.test(given) || !Number.isSafeInteger(Number(given))) {
    throw new Error(
      `LVSTAMP_PROPERTY_RUNS must be a positive integer (inventories per property), got "${given}"`,
    );
  }
  return Number(given);
}

/** Seed of this run: `LVSTAMP_PROPERTY_SEED` when set (to replay a failure), else random. */
export const PROPERTY_SEED: number =
  parsePropertySeed(process.env.LVSTAMP_PROPERTY_SEED) ?? Math.floor(Math.random() * 2 ** 31);

/** Inventories per property: `LVSTAMP_PROPERTY_RUNS` when set, else 10,000. */
export const PROPERTY_RUNS: number = parsePropertyRuns(process.env.LVSTAMP_PROPERTY_RUNS);

/**
 * Timeout of one property test, ms: a hang detector, not a speed target. A
 * run takes seconds unloaded but several times that on a loaded 2-core CI
 * machine, where the suite's default timeout failed healthy runs.
 */
export const PROPERTY_TIMEOUT_MS = 600_000;

/** The line a property test prints first, pass or fail: its seed and how to replay it. */
export function propertySeedLine(what: string): string {
  return `${what} property seed ${String(PROPERTY_SEED)} (${String(PROPERTY_RUNS)} runs); replay: LVSTAMP_PROPERTY_SEED=${String(PROPERTY_SEED)}`;
}

export const NOW = Date.parse('2025-06-01T12:00:00.000Z');
export const HOUR = 3_600_000;
/**
 * Two installations: the GC's owner is one of them, the other is a
 * neighbour. Hex letters on purpose: an owner ID is lowercase everywhere
 * lvstamp writes it (parseOwnerId normalizes; the header decodes to
 * lowercase), and lvm tags are compared as exact strings, so an owner tag
 * that differs only in case is another owner's (CASE_VARIANTS).
 */
export const OWNERS = [
  '0123456789abcdef0123456789abcdef',
  'fedcba9876543210fedcba9876543210',
] as const;
/** Each owner with its letters in another case: never this installation's tag. */
export const CASE_VARIANTS = [
  '0123456789ABCDEF0123456789abcdef',
  'FEDCBA9876543210FEDCBA9876543210',
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

const okHeaderArb: fc.Arbitrary<InventoryHeader> = fc.record({
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
});
/** Sector 0 of an LV: every status; an `ok` header's volume ID is re-aimed by `matchesName`. */
const headerArb: fc.Arbitrary<InventoryHeader> = fc.oneof(
  { weight: 6, arbitrary: okHeaderArb },
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

const validFromArb = fc
  .record({ kind: fc.constantFrom('snapshot' as const, 'volume' as const), id: idArb })
  .map((s) => fromTagFor(s));
const malformedFromArb = fc.constantFrom(
  'lvstamp.from=volume.nothex',
  `lvstamp.from=snapshot.${(IDS[0] ?? '').toUpperCase()}`,
  `lvstamp.from=clone.${IDS[1] ?? ''}`,
  `lvstamp.from=volume.${IDS[2] ?? ''}0`,
);
/** Restore/clone `from` tags: none, one well-formed, one malformed, or two (lvm tags are a set). */
const fromTagsArb: fc.Arbitrary<string[]> = fc.oneof(
  { weight: 3, arbitrary: fc.constant<string[]>([]) },
  { weight: 4, arbitrary: validFromArb.map((t) => [t]) },
  { weight: 1, arbitrary: malformedFromArb.map((t) => [t]) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(validFromArb, fc.oneof(validFromArb, malformedFromArb))
      .map(([a, b]) => [...new Set([a, b])]),
  },
);

/**
 * Tags of a volume LV: each ownership tag present or missing, the owner tag
 * of this owner, a neighbour, or either in another case (foreign: lvm tags
 * are case-sensitive), and restore/clone `from` tags.
 */
const volumeTagsArb: fc.Arbitrary<string[]> = fc
  .record({
    lvstamp: fc.oneof(
      { weight: 5, arbitrary: fc.constant(true) },
      { weight: 1, arbitrary: fc.constant(false) },
    ),
    owner: fc.constantFrom<(string | null)[]>(
      OWNERS[0],
      OWNERS[0],
      OWNERS[0],
      OWNERS[0],
      OWNERS[1],
      CASE_VARIANTS[0],
      CASE_VARIANTS[1],
      null,
    ),
    extraOwner: fc.boolean(),
    from: fromTagsArb,
  })
  .map(({ lvstamp, owner, extraOwner, from }) => [
    ...(lvstamp ? [DEFAULT_NAMING.tag] : []),
    ...(owner === null ? [] : [ownerTagFor(owner)]),
    ...(extraOwner && owner === OWNERS[0] ? [ownerTagFor(OWNERS[1])] : []),
    ...from,
  ]);

/** How one snapshot tag appears: once (the true value), missing, malformed, or twice. */
type SnapshotTagShape =
  | { readonly shape: 'one' | 'missing' }
  | { readonly shape: 'malformed' | 'also'; readonly value: string };

/** Mostly one well-formed tag; else missing, malformed, or a second value beside it (DESIGN.md §3). */
function snapshotTagArb(
  valid: fc.Arbitrary<string>,
  malformed: readonly string[],
): fc.Arbitrary<SnapshotTagShape> {
  return fc.oneof(
    { weight: 20, arbitrary: fc.constant({ shape: 'one' as const }) },
    { weight: 1, arbitrary: fc.constant({ shape: 'missing' as const }) },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom(...malformed)
        .map((value) => ({ shape: 'malformed' as const, value })),
    },
    { weight: 1, arbitrary: valid.map((value) => ({ shape: 'also' as const, value })) },
  );
}

/** The `lvstamp.<key>` tags of `shape` around the true `value` (lvm tags are a set). */
function snapshotTags(key: string, shape: SnapshotTagShape, value: string): string[] {
  const tag = (v: string) => `${DEFAULT_NAMING.tag}.${key}=${v}`;
  switch (shape.shape) {
    case 'one':
      return [tag(value)];
    case 'missing':
      return [];
    case 'malformed':
      return [tag(shape.value)];
    case 'also':
      return [...new Set([tag(value), tag(shape.value)])];
  }
}

const openArb = fc.constantFrom<(number | null)[]>(0, 0, 0, 0, 0, 1, 2, null);

const rawVolumeArb = fc.record({
  vg: fc.constantFrom(...VGS),
  volumeId: idArb,
  creating: fc.boolean(),
  lvCreatedAtMs: maybeTimeArb,
  tags: volumeTagsArb,
  header: headerArb,
  headerMatchesName: matchesNameArb,
  /**
   * Sometimes a `lvstamp_new_<id>` is an interrupted restore or clone
   * (DESIGN.md §6 "Snapshots"): an `ok` header of its source and one
   * `lvstamp.from` tag naming that snapshot or source volume.
   */
  copy: fc.oneof(
    { weight: 2, arbitrary: fc.constant(null) },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constantFrom('snapshot' as const, 'volume' as const),
        id: idArb,
        /** Sometimes a second, other `from` tag: then no copy is proved (the tag is not one). */
        second: fc.oneof(
          { weight: 4, arbitrary: fc.constant(null) },
          { weight: 1, arbitrary: validFromArb },
        ),
      }),
    },
  ),
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
  source: idArb,
  sourceTag: snapshotTagArb(idArb, [
    'nothex',
    (IDS[0] ?? '').toUpperCase(),
    (IDS[0] ?? '').slice(1),
  ]),
  sizeTag: snapshotTagArb(fc.constant('2147483648'), ['-1', '1e9', '9007199254740993']),
  createdTag: snapshotTagArb(timeArb.map(String), ['01', '-5', '1.5', 'now']),
  createdMs: timeArb,
  /** More often `ok` than a volume's: the snapshot's other signals vary more. */
  header: fc.oneof({ weight: 1, arbitrary: okHeaderArb }, { weight: 1, arbitrary: headerArb }),
  /** lvm's lv_time: mostly the created tag's time, else unrelated (the age is the tag's). */
  lvTime: fc.oneof(fc.constant('same' as const), maybeTimeArb),
  /** Sector 0 of a snapshot is its source's header: mostly so. */
  headerIsSource: fc.oneof(
    { weight: 9, arbitrary: fc.constant(true) },
    { weight: 1, arbitrary: fc.constant(false) },
  ),
  openCount: openArb,
});

const policyArb: fc.Arbitrary<GcPolicy> = fc.record(
  {
    ownerId: ownerArb,
    minAgeMs: fc.constantFrom(...GRACES),
    maxDeletions: fc.nat(6),
    maxDeletionPercent: fc.oneof(fc.constantFrom(0, 30, 50, 100), fc.integer({ min: 0, max: 100 })),
    wipe: fc.constantFrom('none', 'discard', 'zero'),
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
        // An interrupted copy's source volume: the clone source, or another ID for a restore.
        const copy = r.copy !== null && r.creating && r.header.status === 'ok' ? r.copy : null;
        const sourceId =
          copy?.kind === 'volume' && copy.id !== r.volumeId
            ? copy.id
            : (IDS[(IDS.indexOf(r.volumeId) + 1) % IDS.length] ?? '');
        const header: InventoryHeader =
          r.header.status !== 'ok'
            ? r.header
            : copy !== null
              ? { ...r.header, header: { ...r.header.header, volumeId: sourceId } }
              : r.headerMatchesName
                ? { ...r.header, header: { ...r.header.header, volumeId: r.volumeId } }
                : r.header;
        const tags =
          copy === null
            ? r.tags
            : [
                ...r.tags.filter((t) => !t.startsWith('lvstamp.from=')),
                ...new Set([
                  fromTagFor({ kind: copy.kind, id: copy.kind === 'volume' ? sourceId : copy.id }),
                  ...(copy.second === null ? [] : [copy.second]),
                ]),
              ];
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
          tags,
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
        const source = r.source;
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
          lvCreatedAtMs: r.lvTime === 'same' ? r.createdMs : r.lvTime,
          tags: [
            ...r.base.filter((t) => !t.startsWith('lvstamp.from=')),
            ...snapshotTags('source', r.sourceTag, source),
            ...snapshotTags('size', r.sizeTag, String(1 << 30)),
            ...snapshotTags('created', r.createdTag, String(r.createdMs)),
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
