import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../errors.js';
import {
  DEFAULT_NAMING,
  fromTagFor,
  newLvNameFor,
  ownerTagFor,
  snapshotLvNameFor,
  snapshotTagsFor,
} from '../naming.js';
import { planGc } from './planner.js';
import type {
  GcPlan,
  GcPlanEntry,
  GcPolicy,
  Inventory,
  InventoryHeader,
  InventorySnapshot,
  InventoryVolume,
} from './types.js';

// Snapshot LVs and interrupted restores/clones (DESIGN.md §6 "Snapshots"). By default a
// snapshot is healthy, old, of this owner, its sector 0 the source's header.

const OWNER = '0123456789abcdef0123456789abcdef';
const OTHER_OWNER = 'fedcba9876543210fedcba9876543210';
const NOW = Date.parse('2025-06-01T12:00:00.000Z');
const HOUR = 3_600_000;
const POLICY: GcPolicy = { ownerId: OWNER, minAgeMs: HOUR, maxDeletions: 10, dryRun: false };
const SOURCE = 'a'.repeat(32);
const SNAP = '5'.repeat(32);

function okHeader(volumeId: string, ownerId = OWNER): InventoryHeader {
  return {
    status: 'ok',
    version: 2,
    header: {
      volumeId,
      ownerId,
      createdAtMs: NOW - 48 * HOUR,
      dataOffsetBytes: 1048576,
      requestedBytes: 67108864,
      name: 'pvc-source',
    },
  };
}

function snapshot(
  snapshotId = SNAP,
  changes: Partial<InventorySnapshot> = {},
  createdMs = NOW - 2 * HOUR,
): InventorySnapshot {
  const lvName = snapshotLvNameFor(snapshotId);
  return {
    snapshotId,
    vgName: 'vg0',
    lvName,
    lvUuid: `uuid-${lvName}`,
    device: `vg0/${lvName}`,
    sizeBytes: 71303168,
    lvCreatedAtMs: createdMs,
    tags: [
      'lvstamp',
      ownerTagFor(OWNER),
      ...snapshotTagsFor({ sourceVolumeId: SOURCE, sizeBytes: 67108864, createdMs }),
    ],
    kernel: { major: 253, minor: 40 },
    header: okHeader(SOURCE),
    openCount: 0,
    ...changes,
  };
}

function inventory(snapshots: InventorySnapshot[], volumes: InventoryVolume[] = []): Inventory {
  return { takenAtMs: NOW - 1000, naming: DEFAULT_NAMING, volumes, maps: [], snapshots };
}

function plan(
  snapshots: InventorySnapshot[],
  snapshotLive: string[] | undefined,
  volumes: InventoryVolume[] = [],
  volumeLive: string[] = [],
): GcPlan {
  return planGc(
    inventory(snapshots, volumes),
    new Set(volumeLive),
    POLICY,
    NOW,
    snapshotLive === undefined ? {} : { snapshotLiveSet: new Set(snapshotLive) },
  );
}

function only(p: GcPlan): GcPlanEntry {
  expect(p.entries).toHaveLength(1);
  const [entry] = p.entries;
  if (entry === undefined) throw new Error('no entry');
  return entry;
}

describe('planGc snapshots', () => {
  it('removes an orphan snapshot older than the grace period (rule 6)', () => {
    const entry = only(plan([snapshot()], []));
    expect(entry).toMatchObject({
      target: 'snapshot',
      snapshotId: SNAP,
      sourceVolumeId: SOURCE,
      action: 'remove-snapshot',
      rule: 6,
      severity: 'info',
      lvUuid: `uuid-${snapshotLvNameFor(SNAP)}`,
    });
    expect(entry.reason).toContain('orphan snapshot of volume');
  });

  it('keeps a snapshot in the snapshot live set, also when its source volume is gone (rule 2)', () => {
    const entry = only(plan([snapshot()], [SNAP]));
    expect(entry).toMatchObject({ action: 'keep', rule: 2, severity: 'info' });
    expect(entry.reason).toContain(`its source volume ${SOURCE} is gone`);
  });

  it('does not take a volume ID for a snapshot ID: the two live sets are separate', () => {
    const entry = only(plan([snapshot()], [], [], [SNAP]));
    expect(entry.action).toBe('remove-snapshot');
  });

  it('keeps a snapshot younger than the grace period by its lvstamp.created tag (rule 3)', () => {
    const entry = only(plan([snapshot(SNAP, {}, NOW - HOUR + 1)], []));
    expect(entry).toMatchObject({ action: 'keep', rule: 3, severity: 'info' });
  });

  it('keeps every snapshot with a warning when no snapshot live set was given', () => {
    const entry = only(plan([snapshot()], undefined));
    expect(entry).toMatchObject({ action: 'keep', rule: 1, severity: 'warn' });
    expect(entry.reason).toContain('no snapshot live set');
  });

  const refusals: [string, Partial<InventorySnapshot>, string][] = [
    [
      'sector 0 of another owner',
      { header: okHeader(SOURCE, OTHER_OWNER) },
      "another installation's header",
    ],
    [
      'sector 0 of another volume than lvstamp.source',
      { header: okHeader('b'.repeat(32)) },
      'but the lvstamp.source tag says',
    ],
    [
      'sector 0 unreadable (inactive)',
      { header: { status: 'unreadable', reason: 'LV is inactive' }, kernel: null },
      'sector 0 unreadable',
    ],
    [
      'sector 0 not stamped',
      { header: { status: 'not-stamped', reason: 'zeros' } },
      'sector 0 is not-stamped',
    ],
    [
      'no owner tag',
      { tags: ['lvstamp', `lvstamp.source=${SOURCE}`, 'lvstamp.size=1', 'lvstamp.created=1'] },
      'only one ownership signal',
    ],
    [
      "another owner's tag",
      { tags: ['lvstamp', ownerTagFor(OTHER_OWNER)] },
      'tagged for another owner',
    ],
    [
      'no lvstamp.source tag',
      { tags: ['lvstamp', ownerTagFor(OWNER), 'lvstamp.size=1', 'lvstamp.created=1'] },
      'without well-formed lvstamp.source',
    ],
    ['its device open', { openCount: 1 }, 'LV device open (1), but not in the snapshot live set'],
    ['its open count unknown', { openCount: null }, 'open count unknown'],
  ];
  for (const [what, changes, reason] of refusals) {
    it(`keeps and warns (rule 1) for ${what}`, () => {
      const entry = only(plan([snapshot(SNAP, changes)], []));
      expect(entry).toMatchObject({ action: 'keep', rule: 1, severity: 'warn' });
      expect(entry.reason).toContain(reason);
    });
  }

  it('counts snapshot removals against the deletion cap and in the summary', () => {
    const snaps = ['1', '2', '3'].map((c) => snapshot(c.repeat(32)));
    const p = planGc(inventory(snaps), new Set(), { ...POLICY, maxDeletions: 2 }, NOW, {
      snapshotLiveSet: new Set(),
    });
    expect(p.entries.map((e) => e.action)).toEqual(['remove-snapshot', 'remove-snapshot', 'keep']);
    expect(p.capped).toBe(true);
    expect(p.summary).toMatchObject({ snapshots: 3, removeSnapshot: 2, warnings: 1 });
  });

  it('refuses a malformed snapshot live set entry', () => {
    expect(() => plan([], ['nope'])).toThrow(InvalidArgumentError);
  });
});

describe('planGc interrupted restores and clones (lvstamp_new_<id> with the source header)', () => {
  const NEW = 'c'.repeat(32);
  function pending(
    changes: Partial<InventoryVolume> = {},
    from = fromTagFor({ kind: 'snapshot', id: SNAP }),
  ) {
    return {
      volumeId: NEW,
      creating: true,
      vgName: 'vg0',
      lvName: newLvNameFor(NEW),
      lvUuid: 'uuid-new',
      device: `vg0/${newLvNameFor(NEW)}`,
      sizeBytes: 71303168,
      lvCreatedAtMs: NOW - 2 * HOUR,
      tags: ['lvstamp', ownerTagFor(OWNER), ...(from === '' ? [] : [from])],
      kernel: { major: 253, minor: 41 },
      header: okHeader(SOURCE),
      openCount: 0,
      dataMaps: [],
      ...changes,
    } satisfies InventoryVolume;
  }

  it('removes it after the grace period (rule 5), aged by the LV creation time', () => {
    const entry = only(plan([], [], [pending()]));
    expect(entry).toMatchObject({
      action: 'remove-volume',
      rule: 5,
      evidence: 'source-header',
      headerVolumeId: SOURCE,
    });
    expect(entry.reason).toContain(`sector 0 still holds source ${SOURCE}'s header`);
  });

  it('keeps it within the grace period (the header createdAt is the source’s, not the copy’s)', () => {
    const entry = only(plan([], [], [pending({ lvCreatedAtMs: NOW - 60_000 })]));
    expect(entry).toMatchObject({ action: 'keep', rule: 3 });
  });

  it('keeps it with a warning without a lvstamp.from tag (another ID in the header)', () => {
    const entry = only(plan([], [], [pending({}, '')]));
    expect(entry).toMatchObject({ action: 'keep', rule: 1, severity: 'warn', evidence: null });
    expect(entry.reason).toContain('no lvstamp.from tag');
  });

  it("keeps it with a warning when the source header is another owner's", () => {
    const entry = only(plan([], [], [pending({ header: okHeader(SOURCE, OTHER_OWNER) })]));
    expect(entry).toMatchObject({ action: 'keep', rule: 1, severity: 'warn' });
  });

  it('keeps it with a warning without the owner tag', () => {
    const from = fromTagFor({ kind: 'snapshot', id: SNAP });
    const entry = only(plan([], [], [pending({ tags: ['lvstamp', from] })]));
    expect(entry).toMatchObject({ action: 'keep', rule: 1, severity: 'warn' });
  });

  it('keeps a clone whose header is not the volume its lvstamp.from tag names', () => {
    const from = fromTagFor({ kind: 'volume', id: 'd'.repeat(32) });
    const entry = only(plan([], [], [pending({}, from)]));
    expect(entry).toMatchObject({ action: 'keep', rule: 1, severity: 'warn' });
    const clone = only(plan([], [], [pending({}, fromTagFor({ kind: 'volume', id: SOURCE }))]));
    expect(clone.action).toBe('remove-volume');
  });

  it('still never removes a finished lvstamp_<id> whose header carries another ID, lvstamp.from or not', () => {
    const finished = pending({
      creating: false,
      lvName: `lvstamp_${NEW}`,
      device: `vg0/lvstamp_${NEW}`,
    });
    const entry = only(plan([], [], [finished]));
    expect(entry).toMatchObject({ action: 'keep', rule: 1, severity: 'warn' });
  });
});
