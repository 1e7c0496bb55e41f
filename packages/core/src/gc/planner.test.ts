import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../errors.js';
import {
  DEFAULT_NAMING,
  dmNameFor,
  dmUuidFor,
  lvNameFor,
  newLvNameFor,
  ownerTagFor,
  quarantinedLvNameFor,
} from '../naming.js';
import { planGc } from './planner.js';
import type { WipePolicy } from '../volumes/types.js';
import type {
  GcPlan,
  GcPlanEntry,
  GcPolicy,
  Inventory,
  InventoryHeader,
  InventoryMap,
  InventoryQuarantined,
  InventoryVolume,
} from './types.js';

// Readable builders: one healthy, old, stamped, unattached volume of this
// owner by default; each test changes only what it is about.

const OWNER = '0123456789abcdef0123456789abcdef';
const OTHER_OWNER = 'fedcba9876543210fedcba9876543210';
const NOW = Date.parse('2025-06-01T12:00:00.000Z');
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const POLICY: GcPolicy = { ownerId: OWNER, minAgeMs: HOUR, maxDeletions: 10, dryRun: true };

/** A readable volume ID: `aaaa…` for 'a', `bbbb…` for 'b'. */
function id(letter: string): string {
  return letter.repeat(32);
}

function okHeader(
  volumeId: string,
  createdAtMs = NOW - 2 * HOUR,
  ownerId = OWNER,
): InventoryHeader {
  return {
    status: 'ok',
    version: 1,
    header: {
      volumeId,
      ownerId,
      createdAtMs,
      dataOffsetBytes: 1048576,
      requestedBytes: 1073741824,
      name: `pvc-${volumeId.slice(0, 4)}`,
    },
  };
}

let nextMinor = 10;

function volume(volumeId: string, changes: Partial<InventoryVolume> = {}): InventoryVolume {
  const creating = changes.creating ?? false;
  const lvName = changes.lvName ?? (creating ? newLvNameFor(volumeId) : lvNameFor(volumeId));
  const vgName = changes.vgName ?? 'vg0';
  nextMinor += 1;
  return {
    volumeId,
    creating,
    vgName,
    lvName,
    lvUuid: `uuid-${lvName}`,
    device: `${vgName}/${lvName}`,
    sizeBytes: 1074790400,
    lvCreatedAtMs: NOW - 2 * HOUR,
    tags: ['lvstamp', ownerTagFor(OWNER)],
    kernel: { major: 253, minor: nextMinor },
    header: okHeader(volumeId),
    openCount: 0,
    dataMaps: [],
    ...changes,
  };
}

/** A data device over `lv` (or over nothing lvstamp knows when `lv` is null). */
function map(
  volumeId: string,
  lv: InventoryVolume | null,
  changes: Partial<InventoryMap> = {},
): InventoryMap {
  return {
    name: dmNameFor(volumeId),
    uuid: dmUuidFor(volumeId),
    volumeId,
    kernel: { major: 253, minor: 100 },
    openCount: 0,
    target: lv?.kernel ?? { major: 253, minor: 99 },
    lv: lv?.device ?? null,
    ...changes,
  };
}

/** A volume with its data device attached. */
function attached(
  volumeId: string,
  changes: Partial<InventoryVolume> = {},
  mapChanges: Partial<InventoryMap> = {},
) {
  const lv = volume(volumeId, { dataMaps: [dmNameFor(volumeId)], ...changes });
  return { lv, map: map(volumeId, lv, mapChanges) };
}

function inventory(volumes: InventoryVolume[], maps: InventoryMap[] = []): Inventory {
  return { takenAtMs: NOW - 1000, naming: DEFAULT_NAMING, volumes, maps };
}

function plan(
  volumes: InventoryVolume[],
  maps: InventoryMap[] = [],
  live: string[] = [],
  policy: Partial<GcPolicy> = {},
): GcPlan {
  return planGc(inventory(volumes, maps), new Set(live), { ...POLICY, ...policy }, NOW);
}

function only(p: GcPlan): GcPlanEntry {
  expect(p.entries).toHaveLength(1);
  return p.entries[0] as GcPlanEntry;
}

function decision(e: GcPlanEntry | undefined) {
  return e && { action: e.action, rule: e.rule, severity: e.severity };
}

function entryFor(p: GcPlan, device: string): GcPlanEntry | undefined {
  return p.entries.find((e) => e.device === device);
}

const KEEP_WARN_1 = { action: 'keep', rule: 1, severity: 'warn' } as const;

describe('planGc rule 1: ownership not proved or device open → keep, warn', () => {
  it('keeps a finished volume whose sector 0 holds no header', () => {
    const e = only(
      plan([volume(id('a'), { header: { status: 'not-stamped', reason: 'magic absent' } })]),
    );
    expect(e).toEqual({
      target: 'volume',
      volumeId: id('a'),
      device: `vg0/lvstamp_${id('a')}`,
      vgName: 'vg0',
      lvName: `lvstamp_${id('a')}`,
      lvUuid: `uuid-lvstamp_${id('a')}`,
      action: 'keep',
      rule: 1,
      severity: 'warn',
      evidence: null,
      reason:
        'prefixed name but no header in sector 0 (magic absent); a finished volume without a valid header is never deleted automatically',
    });
  });

  it('keeps a finished headerless volume even with the owner tag, old and not live', () => {
    const e = only(
      plan([
        volume(id('a'), {
          header: { status: 'not-stamped', reason: 'magic absent' },
          lvCreatedAtMs: NOW - 100 * HOUR,
        }),
      ]),
    );
    expect(decision(e)).toEqual(KEEP_WARN_1);
  });

  it('keeps a corrupt header and says why', () => {
    const reason = 'checksum mismatch (stored 0x1234abcd, computed 0x89abcdef)';
    const e = only(plan([volume(id('a'), { header: { status: 'corrupt', reason } })]));
    expect(decision(e)).toEqual(KEEP_WARN_1);
    expect(e.reason).toBe(
      'header corrupt: checksum mismatch (stored 0x1234abcd, computed 0x89abcdef); never deleted automatically',
    );
  });

  it('keeps a header of a newer version', () => {
    const e = only(
      plan([
        volume(id('a'), { header: { status: 'unsupported', version: 2, reason: 'version 2 > 1' } }),
      ]),
    );
    expect(decision(e)).toEqual(KEEP_WARN_1);
    expect(e.reason).toBe(
      'header version 2 is newer than this lvstamp understands (version 2 > 1); never modified or deleted',
    );
  });

  it('keeps an LV whose header could not be read (inactive)', () => {
    const e = only(
      plan([
        volume(id('a'), {
          kernel: null,
          header: { status: 'unreadable', reason: 'LV is inactive' },
        }),
      ]),
    );
    expect(decision(e)).toEqual(KEEP_WARN_1);
    expect(e.reason).toBe('header unreadable: LV is inactive; kept until it can be read');
  });

  it('keeps a header whose volume ID differs from the name', () => {
    const e = only(plan([volume(id('a'), { header: okHeader(id('b')) })]));
    expect(decision(e)).toEqual(KEEP_WARN_1);
    expect(e.reason).toBe(
      `header volume ID ${id('b')} does not match the name's ID ${id('a')}; never deleted automatically`,
    );
  });

  it('keeps a volume of another owner', () => {
    const e = only(
      plan([volume(id('a'), { header: okHeader(id('a'), NOW - 9 * HOUR, OTHER_OWNER) })]),
    );
    expect(decision(e)).toEqual(KEEP_WARN_1);
    expect(e.reason).toBe(
      `owned by another installation: header owner ${OTHER_OWNER}, this GC's owner ${OWNER}`,
    );
  });

  it('keeps a volume whose owner tag differs from the owner only in case (lvm tags are exact strings)', () => {
    const e = only(
      plan([volume(id('a'), { tags: ['lvstamp', `lvstamp.owner=${OWNER.toUpperCase()}`] })]),
    );
    expect(decision(e)).toEqual(KEEP_WARN_1);
    expect(e.reason).toContain(`lacks the tags lvstamp and ${ownerTagFor(OWNER)}`);
  });

  it('keeps an LV held open by something else than its data device', () => {
    const e = only(plan([volume(id('a'), { openCount: 1 })]));
    expect(decision(e)).toEqual(KEEP_WARN_1);
    expect(e.reason).toBe(
      'LV device open (1 holder(s) besides its data device), but not in the live set',
    );
    expect(e.target === 'volume' && e.evidence).toBe('header');
  });

  it('keeps an LV whose open count is unknown', () => {
    const e = only(plan([volume(id('a'), { openCount: null })]));
    expect(decision(e)).toEqual(KEEP_WARN_1);
    expect(e.reason).toMatch(/^open count unknown/);
  });

  it('keeps a mounted volume and its data device although not live', () => {
    const { lv, map: dm } = attached(id('a'), {}, { openCount: 1 });
    const p = plan([lv], [dm]);
    expect(decision(entryFor(p, lv.device))).toEqual(KEEP_WARN_1);
    expect(entryFor(p, lv.device)?.reason).toBe(
      `data device lvstamp-${id('a')} open (1): mounted or in use, but not in the live set`,
    );
    expect(decision(entryFor(p, dm.name))).toEqual(KEEP_WARN_1);
    expect(entryFor(p, dm.name)?.reason).toBe(
      'open (1): mounted or in use, but not in the live set',
    );
  });

  it('reports an open live volume under rule 2 (info), not as a warning', () => {
    const { lv, map: dm } = attached(id('a'), {}, { openCount: 1 });
    const p = plan([lv], [dm], [id('a')]);
    expect(p.entries.map((e) => [e.device, e.action, e.rule, e.severity, e.reason])).toEqual([
      [`lvstamp-${id('a')}`, 'keep', 2, 'info', 'in the live set; open (1): mounted or in use'],
      [
        `vg0/lvstamp_${id('a')}`,
        'keep',
        2,
        'info',
        `in the live set; data device lvstamp-${id('a')} open (1): mounted or in use`,
      ],
    ]);
  });

  it('rule 1 wins over the live set for a bad header', () => {
    const e = only(
      plan([volume(id('a'), { header: { status: 'corrupt', reason: 'bad' } })], [], [id('a')]),
    );
    expect(decision(e)).toEqual(KEEP_WARN_1);
  });
});

describe('planGc: an interrupted create (lvstamp_new_<id>)', () => {
  const headerless = { status: 'not-stamped', reason: 'magic absent' } as const;

  it('is removed without header when tagged with this owner and older than the grace period (rule 5)', () => {
    const e = only(
      plan([
        volume(id('a'), { creating: true, header: headerless, lvCreatedAtMs: NOW - 2 * HOUR }),
      ]),
    );
    expect(e).toMatchObject({
      target: 'volume',
      device: `vg0/lvstamp_new_${id('a')}`,
      action: 'remove-volume',
      rule: 5,
      severity: 'info',
      evidence: 'owner-tag',
      reason: `interrupted create (no header yet, owner tag lvstamp.owner=${OWNER}), not in the live set, age 2h ≥ grace period 1h`,
    });
  });

  it('is kept without header and without the owner tag', () => {
    const e = only(
      plan([volume(id('a'), { creating: true, header: headerless, tags: ['lvstamp'] })]),
    );
    expect(decision(e)).toEqual(KEEP_WARN_1);
    expect(e.reason).toBe(
      `interrupted create without header and without the owner tag lvstamp.owner=${OWNER}: only one ownership signal`,
    );
  });

  it('is kept without header when it carries the owner tag but not the lvstamp tag (both tags, DESIGN.md §2.3)', () => {
    const e = only(
      plan([volume(id('a'), { creating: true, header: headerless, tags: [ownerTagFor(OWNER)] })]),
    );
    expect(decision(e)).toEqual(KEEP_WARN_1);
    expect(e.reason).toBe(
      'interrupted create without header and without the tag lvstamp: only one ownership signal',
    );
    expect(e.target === 'volume' && e.evidence).toBeNull();
  });

  it('keeps the data device over a headerless LV that carries the owner tag only (rule 1, not rule 4)', () => {
    const lv = volume(id('a'), {
      creating: true,
      header: headerless,
      tags: [ownerTagFor(OWNER)],
      dataMaps: [dmNameFor(id('a'))],
    });
    const p = plan([lv], [map(id('a'), lv)]);
    expect(decision(entryFor(p, dmNameFor(id('a'))))).toEqual(KEEP_WARN_1);
    expect(entryFor(p, dmNameFor(id('a')))?.reason).toBe(
      `its LV vg0/lvstamp_new_${id('a')} is not provably lvstamp's: interrupted create without header and without the tag lvstamp: only one ownership signal`,
    );
    expect(p.summary).toMatchObject({ removeMap: 0, removeVolume: 0 });
  });

  it('is kept without header when tagged for another owner', () => {
    const e = only(
      plan([
        volume(id('a'), {
          creating: true,
          header: headerless,
          tags: ['lvstamp', ownerTagFor(OTHER_OWNER)],
        }),
      ]),
    );
    expect(decision(e)).toEqual(KEEP_WARN_1);
    expect(e.reason).toBe(
      `interrupted create without header, tagged for another owner (lvstamp.owner=${OTHER_OWNER})`,
    );
  });

  it('is kept when its header is corrupt, even with the owner tag', () => {
    const e = only(
      plan([volume(id('a'), { creating: true, header: { status: 'corrupt', reason: 'bad' } })]),
    );
    expect(decision(e)).toEqual(KEEP_WARN_1);
  });

  it('is aged by the LV creation time when headerless (rule 3)', () => {
    const e = only(
      plan([
        volume(id('a'), { creating: true, header: headerless, lvCreatedAtMs: NOW - 59 * MINUTE }),
      ]),
    );
    expect(e).toMatchObject({ action: 'keep', rule: 3, severity: 'info' });
    expect(e.reason).toBe(
      'younger than the grace period: LV creation time 2025-06-01T11:01:00.000Z, age 59m < 1h',
    );
  });

  it('is kept with a warning when lvm reports no creation time', () => {
    const e = only(
      plan([volume(id('a'), { creating: true, header: headerless, lvCreatedAtMs: null })]),
    );
    expect(e).toMatchObject({
      action: 'keep',
      rule: 3,
      severity: 'warn',
      reason: 'age unknown: no LV creation time',
    });
  });

  it('is removed under rule 5 when the header was written but the rename did not happen', () => {
    const e = only(plan([volume(id('a'), { creating: true })]));
    expect(e).toMatchObject({ action: 'remove-volume', rule: 5, evidence: 'header' });
    expect(e.reason).toBe(
      'interrupted create (header written, rename pending), not in the live set, age 2h ≥ grace period 1h',
    );
  });

  it('is kept when live', () => {
    const e = only(plan([volume(id('a'), { creating: true, header: headerless })], [], [id('a')]));
    expect(e).toMatchObject({
      action: 'keep',
      rule: 2,
      severity: 'info',
      reason: 'in the live set',
    });
  });
});

describe('planGc: a valid header of this owner on an LV without the tags', () => {
  it.each([
    ['no tags', []],
    ['the lvstamp tag only', ['lvstamp']],
    ["another owner's tag", ['lvstamp', ownerTagFor('1'.repeat(32))]],
  ])(
    'is kept with a warning (rule 1), finished or interrupted, as the remover would refuse it: %s',
    (_, tags) => {
      for (const creating of [false, true]) {
        const e = only(plan([volume(id('a'), { creating, tags })]));
        expect(e).toMatchObject({ action: 'keep', rule: 1, severity: 'warn' });
        expect(e.reason).toBe(
          `valid header of this owner, but the LV lacks the tags lvstamp and ${ownerTagFor(OWNER)}; never deleted automatically`,
        );
      }
    },
  );
});

describe('planGc rules 2, 3 and 6 for finished volumes', () => {
  it('keeps a live volume however old (rule 2)', () => {
    const e = only(
      plan([volume(id('a'), { header: okHeader(id('a'), NOW - 1000 * HOUR) })], [], [id('a')]),
    );
    expect(e).toMatchObject({
      action: 'keep',
      rule: 2,
      severity: 'info',
      reason: 'in the live set',
      evidence: 'header',
    });
  });

  it('keeps a volume younger than the grace period (rule 3), aged by the header', () => {
    const e = only(
      plan([
        volume(id('a'), {
          header: okHeader(id('a'), NOW - 30 * MINUTE),
          lvCreatedAtMs: NOW - 10 * HOUR,
        }),
      ]),
    );
    expect(e).toMatchObject({
      action: 'keep',
      rule: 3,
      severity: 'info',
      reason:
        'younger than the grace period: header createdAt 2025-06-01T11:30:00.000Z, age 30m < 1h',
    });
  });

  it('keeps a volume created in the future with a warning (rule 3)', () => {
    const e = only(plan([volume(id('a'), { header: okHeader(id('a'), NOW + 5 * MINUTE) })]));
    expect(e).toMatchObject({
      action: 'keep',
      rule: 3,
      severity: 'warn',
      reason:
        'header createdAt 2025-06-01T12:05:00.000Z is in the future (now 2025-06-01T12:00:00.000Z)',
    });
  });

  it('removes an orphan exactly as old as the grace period (rule 6)', () => {
    const e = only(plan([volume(id('a'), { header: okHeader(id('a'), NOW - HOUR) })]));
    expect(e).toMatchObject({
      action: 'remove-volume',
      rule: 6,
      severity: 'info',
      evidence: 'header',
      reason: 'orphan: valid header of this owner, not in the live set, age 1h ≥ grace period 1h',
    });
  });

  it('keeps an orphan one millisecond younger than the grace period', () => {
    const e = only(plan([volume(id('a'), { header: okHeader(id('a'), NOW - HOUR + 1) })]));
    expect(e).toMatchObject({ action: 'keep', rule: 3 });
  });

  it('decides a volume and its rename leftover independently', () => {
    const finished = volume(id('a'));
    const leftover = volume(id('a'), {
      creating: true,
      header: { status: 'corrupt', reason: 'torn write' },
    });
    const p = plan([leftover, finished]);
    expect(p.entries.map((e) => [e.device, e.action, e.rule])).toEqual([
      [`vg0/lvstamp_${id('a')}`, 'remove-volume', 6],
      [`vg0/lvstamp_new_${id('a')}`, 'keep', 1],
    ]);
  });
});

describe('planGc rule 4: data device maps', () => {
  it('removes a map whose LV is gone, leaving data untouched', () => {
    const e = only(plan([], [map(id('a'), null)]));
    expect(e).toEqual({
      target: 'map',
      volumeId: id('a'),
      device: `lvstamp-${id('a')}`,
      action: 'remove-map',
      rule: 4,
      severity: 'info',
      reason:
        'stale: its table targets 253:99, which is no lvstamp LV; removing the map leaves the data untouched',
    });
  });

  it('keeps, with a warning, a map whose target is a device outside the volume groups scanned', () => {
    // a GC limited to one volume group must not judge the data device of a volume in another
    const e = only(plan([], [map(id('a'), null, { targetElsewhere: true })]));
    expect(e).toMatchObject({
      action: 'keep',
      rule: 1,
      severity: 'warn',
      reason:
        "its table targets 253:99, a device outside the volume groups scanned; judged only by a run over that device's volume group",
    });
  });

  it('keeps a map whose LV is gone while the volume is live (rule 2)', () => {
    const e = only(plan([], [map(id('a'), null)], [id('a')]));
    expect(e).toMatchObject({ action: 'keep', rule: 2 });
  });

  it('keeps an open map whose LV is gone, with a warning', () => {
    const e = only(plan([], [map(id('a'), null, { openCount: 2 })]));
    expect(decision(e)).toEqual(KEEP_WARN_1);
  });

  it('removes the map and the volume of an old orphan', () => {
    const { lv, map: dm } = attached(id('a'));
    const p = plan([lv], [dm]);
    expect(p.entries.map((e) => [e.device, e.action, e.rule, e.reason])).toEqual([
      [
        `lvstamp-${id('a')}`,
        'remove-map',
        4,
        `data device of vg0/lvstamp_${id('a')}, whose volume is not in the live set; removing the map leaves the data untouched`,
      ],
      [
        `vg0/lvstamp_${id('a')}`,
        'remove-volume',
        6,
        'orphan: valid header of this owner, not in the live set, age 2h ≥ grace period 1h',
      ],
    ]);
  });

  it('keeps the map of a young volume (rule 3, aged by its LV)', () => {
    const { lv, map: dm } = attached(id('a'), { header: okHeader(id('a'), NOW - MINUTE) });
    const p = plan([lv], [dm]);
    expect(decision(entryFor(p, dm.name))).toEqual({ action: 'keep', rule: 3, severity: 'info' });
  });

  it('keeps the map of a live volume (rule 2)', () => {
    const { lv, map: dm } = attached(id('a'));
    const p = plan([lv], [dm], [id('a')]);
    expect(decision(entryFor(p, dm.name))).toEqual({ action: 'keep', rule: 2, severity: 'info' });
  });

  it('keeps the map over an LV whose ownership is not proved', () => {
    const { lv, map: dm } = attached(id('a'), { header: { status: 'corrupt', reason: 'bad' } });
    const e = entryFor(plan([lv], [dm]), dm.name);
    expect(decision(e)).toEqual(KEEP_WARN_1);
    expect(e?.reason).toBe(
      `its LV vg0/lvstamp_${id('a')} is not provably lvstamp's: header corrupt: bad; never deleted automatically`,
    );
  });

  it('keeps a map that targets the LV of another volume', () => {
    const lvB = volume(id('b'));
    const e = entryFor(plan([lvB], [map(id('a'), lvB)]), `lvstamp-${id('a')}`);
    expect(decision(e)).toEqual(KEEP_WARN_1);
    expect(e?.reason).toBe(`targets vg0/lvstamp_${id('b')}, which belongs to volume ${id('b')}`);
  });

  it('keeps a map whose name does not match its UUID', () => {
    const e = only(plan([], [map(id('a'), null, { name: 'something-else' })]));
    expect(decision(e)).toEqual(KEEP_WARN_1);
    expect(e.reason).toBe(
      `map name does not match its UUID LVSTAMP-${id('a')} (expected lvstamp-${id('a')})`,
    );
  });

  it('keeps a map without a linear table', () => {
    const e = only(plan([], [map(id('a'), null, { target: null })]));
    expect(decision(e)).toEqual(KEEP_WARN_1);
  });

  it('keeps a map whose UUID carries no volume ID', () => {
    const e = only(
      plan([], [map(id('a'), null, { uuid: 'LVSTAMP-xyz', name: 'lvstamp-xyz', volumeId: null })]),
    );
    expect(e).toMatchObject({ ...KEEP_WARN_1, volumeId: null, device: 'lvstamp-xyz' });
    expect(e.reason).toBe('UUID LVSTAMP-xyz carries no volume ID; not an lvstamp data device');
  });
});

describe('planGc deletion cap', () => {
  const orphans = () => ['c', 'a', 'b'].map((l) => volume(id(l)));

  it('removes at most maxDeletions volumes, in device order, and records the cap', () => {
    const p = plan(orphans(), [], [], { maxDeletions: 1 });
    expect(p.capped).toBe(true);
    expect(p.deletionCap).toBe(1);
    expect(
      p.entries.map((e) => [
        e.target === 'snapshot' ? e.snapshotId : e.target === 'quarantined' ? e.id : e.volumeId,
        e.action,
        e.severity,
      ]),
    ).toEqual([
      [id('a'), 'remove-volume', 'info'],
      [id('b'), 'keep', 'warn'],
      [id('c'), 'keep', 'warn'],
    ]);
    expect(p.entries[1]?.reason).toBe(
      'deletion cap of 1 reached (at most 1 per run); would otherwise remove: orphan: valid header of this owner, not in the live set, age 2h ≥ grace period 1h',
    );
    expect(p.entries[1]?.rule).toBe(6);
  });

  it('a cap of 0 removes no volume but still removes stale maps (data untouched, not counted)', () => {
    const p = plan(orphans(), [map(id('d'), null)], [], { maxDeletions: 0 });
    expect(p.summary).toEqual({
      volumes: 3,
      maps: 1,
      keep: 3,
      removeMap: 1,
      removeVolume: 0,
      warnings: 3,
    });
    expect(p.capped).toBe(true);
  });

  it('applies the percentage of own stamped volumes, rounded down', () => {
    // 3 orphans + 7 live = 10 own stamped volumes; 25 % of 10 = 2.5 → 2.
    const live = ['0', '1', '2', '3', '4', '5', '6'];
    const foreign = volume(id('9'), { header: okHeader(id('9'), NOW - 9 * HOUR, OTHER_OWNER) });
    const p = plan([...orphans(), ...live.map((l) => volume(id(l))), foreign], [], live.map(id), {
      maxDeletionPercent: 25,
    });
    expect(p.deletionCap).toBe(2);
    expect(p.summary.removeVolume).toBe(2);
    expect(p.capped).toBe(true);
    expect(entryFor(p, `vg0/lvstamp_${id('c')}`)?.reason).toMatch(
      /^deletion cap of 2 reached \(at most 25% of 10 own stamped volume\(s\)\); would otherwise remove: orphan/,
    );
  });

  describe('with a quarantine window (DESIGN.md §6 "Cap")', () => {
    const DAY = 24 * HOUR;
    const WINDOW = { quarantineMs: 7 * DAY, maxDeletionPercent: 50 };
    const quarantined = (volumeId: string, sinceMs: number): InventoryQuarantined => {
      const lvName = quarantinedLvNameFor('volume', volumeId);
      return {
        kind: 'volume',
        id: volumeId,
        vgName: 'vg0',
        lvName,
        lvUuid: `uuid-${lvName}`,
        device: `vg0/${lvName}`,
        sizeBytes: 1 << 30,
        tags: ['lvstamp', ownerTagFor(OWNER), `lvstamp.quarantined=${sinceMs / 1000}`],
        kernel: { major: 253, minor: 40 },
        header: okHeader(volumeId),
        openCount: 0,
      };
    };
    const withQuarantined = (
      volumes: InventoryVolume[],
      lvs: InventoryQuarantined[],
      policy: Partial<GcPolicy>,
      nowMs = NOW,
    ): GcPlan =>
      planGc(
        { ...inventory(volumes), quarantined: lvs },
        new Set(),
        { ...POLICY, ...policy },
        nowMs,
      );

    it('a node with one own volume: quarantined in one run (the share is at least 1), expired after the window', () => {
      // 50 % of 1 own volume is 0.5 → 0; a quarantine is reversible, so the share is at least 1.
      const first = withQuarantined([volume(id('a'))], [], WINDOW);
      expect(first.entries.map((e) => e.action)).toEqual(['quarantine-volume']);
      expect(first.capped).toBe(false);
      // The next run after the window: no own volume outside quarantine, the expiry is not held
      // to a percentage of nothing.
      const later = NOW + 7 * DAY + HOUR;
      const second = withQuarantined([], [quarantined(id('a'), NOW)], WINDOW, later);
      expect(second.entries.map((e) => e.action)).toEqual(['remove-quarantined']);
      expect(second.capped).toBe(false);
    });

    it('without a window the same node removes nothing: floor(50 % × 1) = 0', () => {
      const p = plan([volume(id('a'))], [], [], { maxDeletionPercent: 50 });
      expect(p.entries[0]?.reason).toMatch(
        /^deletion cap of 0 reached \(at most 50% of 1 own stamped volume\(s\)\); would otherwise remove: orphan/,
      );
      expect(p.deletionCap).toBe(0);
    });

    it('quarantines are held to the share (at least 1), expiries only to maxDeletions', () => {
      const orphans = ['a', 'b', 'c'].map((l) => volume(id(l)));
      const expired = ['d', 'e', 'f'].map((l) => quarantined(id(l), NOW - 8 * DAY));
      const p = withQuarantined(orphans, expired, { ...WINDOW, maxDeletions: 3 });
      // 50 % of 3 own volumes → 1 quarantine; expiries fill the per-run cap of 3.
      expect(p.entries.map((e) => [e.device.slice(4, 14), e.action])).toEqual([
        ['lvstamp_aa', 'quarantine-volume'],
        ['lvstamp_bb', 'keep'],
        ['lvstamp_cc', 'keep'],
        ['lvstamp_q_', 'remove-quarantined'],
        ['lvstamp_q_', 'remove-quarantined'],
        ['lvstamp_q_', 'keep'],
      ]);
      expect(p.entries[1]?.reason).toMatch(
        /^deletion cap of 1 reached \(at most 50% of 3 own stamped volume\(s\)\); would otherwise remove: orphan/,
      );
      expect(p.entries[5]?.reason).toMatch(/^deletion cap of 3 reached \(at most 3 per run\)/);
      expect(p.deletionCap).toBe(3);
    });

    it('a percentage of 0 still lets one quarantine through, and maxDeletions 0 none', () => {
      const one = withQuarantined([volume(id('a'))], [], { ...WINDOW, maxDeletionPercent: 0 });
      expect(one.entries[0]?.action).toBe('quarantine-volume');
      const none = withQuarantined([volume(id('a'))], [], { ...WINDOW, maxDeletions: 0 });
      expect(none.entries[0]?.reason).toMatch(/^deletion cap of 0 reached \(at most 0 per run\)/);
    });
  });

  it('is not capped when the removals fit', () => {
    const p = plan(orphans(), [], [], { maxDeletions: 3, maxDeletionPercent: 100 });
    expect(p.capped).toBe(false);
    expect(p.deletionCap).toBe(3);
    expect(p.summary.removeVolume).toBe(3);
  });
});

describe('planGc plan shape', () => {
  it('sorts entries by device whatever the inventory order, and counts them', () => {
    const a = attached(id('a'));
    const b = volume(id('b'), {
      vgName: 'vg1',
      lvName: `lvstamp_${id('b')}`,
      header: { status: 'corrupt', reason: 'x' },
    });
    const c = volume(id('c'), { vgName: 'vg1', lvName: `lvstamp_${id('c')}` });
    const p1 = plan([c, b, a.lv], [a.map], [id('c')]);
    const p2 = plan([a.lv, b, c], [a.map], [id('c')]);
    expect(p1).toEqual(p2);
    expect(p1.entries.map((e) => e.device)).toEqual([
      `lvstamp-${id('a')}`,
      `vg0/lvstamp_${id('a')}`,
      `vg1/lvstamp_${id('b')}`,
      `vg1/lvstamp_${id('c')}`,
    ]);
    expect(p1.summary).toEqual({
      volumes: 3,
      maps: 1,
      keep: 2,
      removeMap: 1,
      removeVolume: 1,
      warnings: 1,
    });
    expect(p1).toMatchObject({
      plannedAtMs: NOW,
      inventoryTakenAtMs: NOW - 1000,
      ownerId: OWNER,
      dryRun: true,
      naming: DEFAULT_NAMING,
    });
  });

  it('does not change its input', () => {
    const a = attached(id('a'));
    const inv = inventory([a.lv, volume(id('b'))], [a.map]);
    const copy = structuredClone(inv);
    planGc(Object.freeze(inv), new Set(), { ...POLICY, maxDeletions: 1 }, NOW);
    expect(inv).toEqual(copy);
  });

  it('plans nothing for an empty node', () => {
    const p = plan([]);
    expect(p.entries).toEqual([]);
    expect(p.capped).toBe(false);
  });
});

describe('planGc input checks', () => {
  const bad: [string, Partial<GcPolicy>][] = [
    ['owner ID not hex', { ownerId: 'not-an-owner' }],
    ['owner ID upper case', { ownerId: OWNER.toUpperCase() }],
    ['negative minimum age', { minAgeMs: -1 }],
    ['minimum age NaN', { minAgeMs: Number.NaN }],
    ['fractional maximum deletions', { maxDeletions: 1.5 }],
    ['negative maximum deletions', { maxDeletions: -1 }],
    ['percentage above 100', { maxDeletionPercent: 101 }],
    ['negative percentage', { maxDeletionPercent: -5 }],
    ['percentage NaN', { maxDeletionPercent: Number.NaN }],
    ['unknown wipe', { wipe: 'shred' as unknown as WipePolicy }],
  ];
  it.each(bad)('rejects a policy with %s', (_label, change) => {
    expect(() => plan([volume(id('a'))], [], [], change)).toThrow(InvalidArgumentError);
  });

  it('names the wipe policies when it refuses one', () => {
    expect(() => plan([], [], [], { wipe: 'shred' as unknown as WipePolicy })).toThrow(
      new InvalidArgumentError('policy wipe must be one of none, discard, zero, got "shred"'),
    );
  });

  it("carries the policy's wipe into the plan, discard when it names none", () => {
    expect(plan([]).wipe).toBe('discard');
    expect(plan([], [], [], { wipe: 'zero' }).wipe).toBe('zero');
    expect(plan([], [], [], { wipe: 'none' }).wipe).toBe('none');
  });

  it('rejects a non-boolean dryRun', () => {
    const policy = { ...POLICY, dryRun: 'yes' } as unknown as GcPolicy;
    expect(() => planGc(inventory([]), new Set(), policy, NOW)).toThrow(InvalidArgumentError);
  });

  it('rejects a live set entry that is a name rather than an ID', () => {
    expect(() => plan([], [], ['pvc-1234'])).toThrow(
      new InvalidArgumentError(
        'live set entry "pvc-1234" is not a volume ID (32 lowercase hex digits)',
      ),
    );
  });

  it('rejects a time that is not finite', () => {
    expect(() => planGc(inventory([]), new Set(), POLICY, Number.NaN)).toThrow(
      InvalidArgumentError,
    );
  });
});

describe('planGc rule 1: a volume group lvm refuses to change → keep everything in it, warn', () => {
  it('keeps the volumes and data devices of that group only, naming the group and the devices', () => {
    const broken = attached(id('a'));
    const whole = volume(id('b'), { vgName: 'vg1' });
    const p = planGc(
      {
        ...inventory([broken.lv, whole], [broken.map]),
        unusableGroups: [
          {
            vgName: 'vg0',
            problem: 'duplicate-pv',
            detail: 'WARNING: Not using device /dev/loop3 for PV yxj23W.',
          },
        ],
      },
      new Set(),
      POLICY,
      NOW,
    );
    const held =
      'volume group vg0 cannot be changed (duplicate-pv): WARNING: Not using device /dev/loop3 for PV yxj23W.; nothing in it is changed until lvm can change it again; would otherwise ';
    expect(p.entries.map((e) => [e.device, e.action, e.rule, e.severity])).toEqual([
      [dmNameFor(id('a')), 'keep', 1, 'warn'],
      [broken.lv.device, 'keep', 1, 'warn'],
      [whole.device, 'remove-volume', 6, 'info'],
    ]);
    expect(entryFor(p, broken.lv.device)?.reason.startsWith(`${held}remove-volume: orphan`)).toBe(
      true,
    );
    expect(entryFor(p, dmNameFor(id('a')))?.reason.startsWith(`${held}remove-map: `)).toBe(true);
    // a kept entry counts against no cap and no summary removal
    expect(p.summary).toMatchObject({ removeVolume: 1, removeMap: 0 });
  });
});
