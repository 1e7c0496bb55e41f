import { describe, expect, it, vi } from 'vitest';
import type { DecodeResult } from '../header/types.js';
import type { LogicalVolume, UnusableGroup } from '../lvm/types.js';
import type { Volume } from '../volumes/types.js';
import {
  DEFAULT_NAMING,
  lvNameFor,
  ownerTagFor,
  parseLvName,
  parseQuarantinedLvName,
  parseSnapshotLvName,
  quarantinedLvNameFor,
  snapshotLvNameFor,
  snapshotTagsFor,
} from '../naming.js';
import type { GcExecutorPorts } from './ports.js';
import { GcService } from './service.js';
import { planGc } from './planner.js';
import { quarantinedToActivate } from './quarantine.js';
import type { GcOutcome, GcPlan, GcPolicy, Inventory, InventoryQuarantined } from './types.js';

// The quarantine steps against a stateful fake node that can "die" before
// any change (DESIGN.md §6 "Quarantine", §2.2): for each kill point, the
// next run converges on the state an uninterrupted run reaches, and nothing
// foreign changes.

const OWNER = '0123456789abcdef0123456789abcdef';
const OTHER = 'fedcba9876543210fedcba9876543210';
const NOW = Date.parse('2026-01-10T00:00:00Z');
const DAY = 86_400_000;
const A = 'a'.repeat(32);
const B = 'b'.repeat(32);
const F = 'f'.repeat(32);
const S = 'c'.repeat(32);

class Killed extends Error {}

interface FakeLv {
  vgName: string;
  lvName: string;
  lvUuid: string;
  tags: string[];
  active: boolean;
  minor: number;
  /** Sector 0, unchanged by any step here but a wipe, which zeroes it last. */
  header: DecodeResult;
}

/** A node whose every change is one step; `killAt` makes step N (1-based) and all after it fail. */
class FakeNode {
  readonly lvs: FakeLv[] = [];
  maps: { volumeId: string; minor: number; target: number }[] = [];
  steps: string[] = [];
  killAt: number | null = null;
  /** Groups lvm refuses to change, as the look-up reports them (VolumeGroups.unusableIn). */
  unusable: UnusableGroup[] = [];
  #dead = false;
  #minor = 100;

  add(lvName: string, tags: string[], header: DecodeResult, active = true): void {
    this.lvs.push({
      vgName: 'vg0',
      lvName,
      lvUuid: `uuid-${lvName}`,
      tags,
      active,
      minor: this.#minor++,
      header,
    });
  }

  #step(what: string): void {
    if (this.#dead || (this.killAt !== null && this.steps.length + 1 >= this.killAt)) {
      this.#dead = true;
      throw new Killed(`killed before ${what}`);
    }
    this.steps.push(what);
  }

  revive(): void {
    this.#dead = false;
    this.killAt = null;
  }

  #lvOf(lv: FakeLv): LogicalVolume {
    return {
      vgName: lv.vgName,
      lvName: lv.lvName,
      lvUuid: lv.lvUuid,
      sizeBytes: 16 << 20,
      attr: lv.active ? '-wi-a-----' : '-wi-------',
      active: lv.active,
      open: false,
      kernelMajor: lv.active ? 253 : null,
      kernelMinor: lv.active ? lv.minor : null,
      dmPath: `/dev/mapper/${lv.vgName}-${lv.lvName}`,
      createdAtMs: NOW - 10 * DAY,
      tags: [...lv.tags],
    };
  }

  snapshot(): string {
    return JSON.stringify({
      lvs: [...this.lvs]
        .map((l) => ({ ...l, tags: [...l.tags].sort() }))
        .sort((a, b) => a.lvName.localeCompare(b.lvName)),
      maps: this.maps,
    });
  }

  ports(): GcExecutorPorts {
    const byUuid = (uuid: string) => this.lvs.find((l) => l.lvUuid === uuid);
    const named = (names?: readonly string[]) =>
      this.lvs.filter((l) => names === undefined || names.includes(l.lvName));
    return {
      volumes: {
        listLogicalVolumes: async (_scope, names) => {
          const volumes: Volume[] = [];
          const snapshots: LogicalVolume[] = [];
          const quarantined: LogicalVolume[] = [];
          for (const l of named(names)) {
            const parsed = parseLvName(l.lvName);
            if (parsed !== null) volumes.push({ ...this.#lvOf(l), ...parsed, capacityBytes: null });
            else if (parseSnapshotLvName(l.lvName) !== null) snapshots.push(this.#lvOf(l));
            else if (parseQuarantinedLvName(l.lvName) !== null) quarantined.push(this.#lvOf(l));
          }
          return Promise.resolve({
            volumes,
            snapshots,
            quarantined,
            unusableGroups: [...this.unusable],
          });
        },
        removeLogicalVolume: async (ref) => {
          const lv = byUuid(ref.lvUuid);
          if (lv === undefined) return;
          this.#step(`lvremove ${lv.lvName}`);
          this.lvs.splice(this.lvs.indexOf(lv), 1);
          return Promise.resolve();
        },
        wipeLogicalVolume: async (policy, target) => {
          const lv = this.lvs.find((l) => this.#lvOf(l).dmPath === target.dmPath);
          if (lv === undefined) throw new Error(`no LV at ${target.dmPath}`);
          this.#step(`wipe ${policy} ${lv.lvName}`);
          lv.header = { status: 'not-stamped', reason: 'magic absent' };
          return Promise.resolve();
        },
        activateOwnedVolumes: async () => {
          const out: string[] = [];
          for (const l of this.lvs) {
            if (l.active || parseLvName(l.lvName) === null) continue;
            if (!l.tags.includes(ownerTagFor(OWNER))) continue;
            this.#step(`lvchange -ay ${l.lvName}`);
            l.active = true;
            out.push(`vg0/${l.lvName}`);
          }
          return Promise.resolve(out);
        },
        activateOwnedSnapshots: async () => Promise.resolve([]),
        deactivateSnapshots: async () => Promise.resolve(),
        discoverVolumeGroups: async () => Promise.resolve(['vg0']),
      },
      quarantine: {
        listQuarantined: async (_scope, names) =>
          Promise.resolve({
            lvs: named(names)
              .filter((l) => parseQuarantinedLvName(l.lvName) !== null)
              .map((l) => this.#lvOf(l)),
            unusableGroups: [...this.unusable],
          }),
        markQuarantined: async (ref, atSeconds) => {
          const lv = byUuid(ref.lvUuid);
          if (lv?.lvName !== ref.lvName) throw new Error('re-check failed');
          this.#step(`lvchange --addtag --activate n ${lv.lvName}`);
          lv.tags = [
            ...lv.tags.filter((t) => !t.startsWith('lvstamp.quarantined=')),
            `lvstamp.quarantined=${atSeconds}`,
          ];
          lv.active = false;
          return Promise.resolve();
        },
        renameQuarantined: async (ref) => {
          const lv = byUuid(ref.lvUuid);
          if (lv?.lvName !== ref.lvName || lv.active) throw new Error('re-check failed');
          this.#step(`lvrename ${lv.lvName}`);
          lv.lvName = quarantinedLvNameFor(ref.kind, ref.id);
          return Promise.resolve();
        },
        activateQuarantined: async (_scope, names) => {
          const out: string[] = [];
          for (const l of named(names)) {
            if (l.active || !l.tags.includes(ownerTagFor(OWNER))) continue;
            this.#step(`lvchange -ay ${l.lvName}`);
            l.active = true;
            out.push(`vg0/${l.lvName}`);
          }
          return Promise.resolve(out);
        },
        deactivateQuarantined: async (devices) => {
          for (const device of devices) {
            const lv = this.lvs.find((l) => `vg0/${l.lvName}` === device);
            if (lv === undefined) continue;
            try {
              this.#step(`lvchange -an ${lv.lvName}`);
              lv.active = false;
            } catch {
              // best effort, as the real one
            }
          }
          return Promise.resolve();
        },
      },
      headers: {
        readHeader: async (path) => {
          const lv = this.lvs.find((l) => `/dev/mapper/${l.vgName}-${l.lvName}` === path);
          if (lv === undefined) throw new Error(`no device ${path}`);
          return Promise.resolve(lv.header);
        },
      },
      devices: {
        listAll: async () =>
          Promise.resolve([
            ...this.lvs
              .filter((l) => l.active)
              .map((l) => ({
                name: `vg0-${l.lvName}`,
                uuid: `LVM-${l.lvUuid}`,
                major: 253,
                minor: l.minor,
                openCount: this.maps.some((m) => m.target === l.minor) ? 1 : 0,
              })),
            ...this.maps.map((m) => ({
              name: `lvstamp-${m.volumeId}`,
              uuid: `LVSTAMP-${m.volumeId}`,
              major: 253,
              minor: m.minor,
              openCount: 0,
            })),
          ]),
        table: async (id) => {
          const m = this.maps.find((x) => x.volumeId === id);
          return Promise.resolve(m === undefined ? null : { major: 253, minor: m.target });
        },
        tables: async (ids) =>
          Promise.resolve(
            new Map(
              ids.map((id) => {
                const m = this.maps.find((x) => x.volumeId === id);
                return [id, m === undefined ? null : { major: 253, minor: m.target }] as const;
              }),
            ),
          ),
        remove: async (id) => {
          this.#step(`dmsetup remove lvstamp-${id}`);
          this.maps = this.maps.filter((m) => m.volumeId !== id);
          return Promise.resolve();
        },
      },
      hostLock: { withLock: async (_reason, fn) => fn() },
    };
  }
}

const header = (volumeId: string, ownerId = OWNER): DecodeResult => ({
  status: 'ok',
  version: 2,
  header: {
    volumeId,
    ownerId,
    createdAtMs: NOW - 10 * DAY,
    dataOffsetBytes: 1 << 20,
    requestedBytes: 8 << 20,
    name: `pvc-${volumeId.slice(0, 4)}`,
  },
});
const ownTags = [DEFAULT_NAMING.tag, ownerTagFor(OWNER)];

/** Orphan A with a data device, an orphan snapshot, a foreign LV, and B in quarantine for 8 days. */
function node(): FakeNode {
  const n = new FakeNode();
  n.add(lvNameFor(A), [...ownTags], header(A));
  n.maps.push({ volumeId: A, minor: 900, target: 100 });
  n.add(lvNameFor(F), [DEFAULT_NAMING.tag, ownerTagFor(OTHER)], header(F, OTHER));
  n.add(
    snapshotLvNameFor(S),
    [
      ...ownTags,
      ...snapshotTagsFor({ sourceVolumeId: A, sizeBytes: 8 << 20, createdMs: NOW - 9 * DAY }),
    ],
    header(A),
    false,
  );
  n.add(
    quarantinedLvNameFor('volume', B),
    [...ownTags, `lvstamp.quarantined=${(NOW - 8 * DAY) / 1000}`],
    header(B),
    false,
  );
  return n;
}

const policy: GcPolicy = {
  ownerId: OWNER,
  minAgeMs: 3_600_000,
  maxDeletions: 10,
  quarantineMs: 7 * DAY,
  dryRun: false,
};

async function run(n: FakeNode, nowMs: number): Promise<readonly GcOutcome[]> {
  const gc = new GcService({ ports: n.ports(), clock: () => nowMs });
  // The snapshot rests inactive; the fake activates nothing for it, so it is judged active here.
  for (const l of n.lvs) if (parseSnapshotLvName(l.lvName) !== null) l.active = true;
  return gc.apply(await planAt(gc, nowMs));
}

/** The plan of one run at `nowMs`: F is live (volume and snapshot), the test policy. */
async function planAt(gc: GcService, nowMs: number): Promise<GcPlan> {
  const { plan } = await gc.plan({
    liveSet: new Set([F]),
    allowEmptyLiveSet: false,
    snapshotLiveSet: new Set([F]),
    policy,
    nowMs,
  });
  return plan;
}

describe('GC quarantine: executor kill points (DESIGN.md §6 "Quarantine")', () => {
  it('an uninterrupted run quarantines A and the snapshot, removes expired B, leaves the foreign LV alone', async () => {
    const n = node();
    await run(n, NOW);
    // The expired one is activated while planning (its header must be read), then acted on.
    expect(n.steps).toEqual([
      `lvchange -ay ${quarantinedLvNameFor('volume', B)}`,
      `dmsetup remove lvstamp-${A}`,
      `lvchange --addtag --activate n ${lvNameFor(A)}`,
      `lvrename ${lvNameFor(A)}`,
      `lvchange --addtag --activate n ${snapshotLvNameFor(S)}`,
      `lvrename ${snapshotLvNameFor(S)}`,
      `wipe discard ${quarantinedLvNameFor('volume', B)}`,
      `lvremove ${quarantinedLvNameFor('volume', B)}`,
    ]);
    expect(n.lvs.map((l) => [l.lvName, l.active]).sort()).toEqual(
      [
        [lvNameFor(F), true],
        [quarantinedLvNameFor('volume', A), false],
        [quarantinedLvNameFor('snapshot', S), false],
      ].sort(),
    );
    const a = n.lvs.find((l) => l.lvName === quarantinedLvNameFor('volume', A));
    expect(a?.tags).toContain(`lvstamp.quarantined=${NOW / 1000}`);
    expect(a?.header).toEqual(header(A));
  });

  it('the outcome of a quarantine names the tag and the new LV name', async () => {
    const outcomes = await run(node(), NOW);
    const quarantined = outcomes
      .filter((o) => o.outcome === 'quarantined')
      .map((o) => [o.entry.device, o.detail]);
    expect(quarantined).toEqual([
      [
        `vg0/${lvNameFor(A)}`,
        `tagged lvstamp.quarantined=${NOW / 1000}, deactivated and renamed vg0/${lvNameFor(A)} to vg0/${quarantinedLvNameFor('volume', A)}`,
      ],
      [
        `vg0/${snapshotLvNameFor(S)}`,
        `snapshot: tagged lvstamp.quarantined=${NOW / 1000}, deactivated and renamed vg0/${snapshotLvNameFor(S)} to vg0/${quarantinedLvNameFor('snapshot', S)}`,
      ],
    ]);
  });

  // Step 8 is the lvremove after the wipe: its own test below.
  for (let killAt = 1; killAt <= 7; killAt++) {
    it(`killed before step ${killAt}: the next run converges on the same end state, nothing foreign touched`, async () => {
      const reference = node();
      await run(reference, NOW);
      const n = node();
      const foreign = JSON.stringify(n.lvs.find((l) => l.lvName === lvNameFor(F)));
      n.killAt = killAt;
      await run(n, NOW).catch((error: unknown) => {
        if (!(error instanceof Killed)) throw error;
      });
      n.revive();
      await run(n, NOW + 60_000);
      const settled = n.snapshot();
      await run(n, NOW + 120_000);
      expect(n.snapshot(), 'a third run changes nothing').toBe(settled);
      const shape = (f: FakeNode) =>
        f.lvs
          .map((l) => ({
            name: l.lvName,
            active: l.active,
            qTags: l.tags.filter((t) => t.startsWith('lvstamp.quarantined=')).length,
            header: l.header,
          }))
          .sort((x, y) => x.name.localeCompare(y.name));
      expect(shape(n)).toEqual(shape(reference));
      expect(n.maps).toEqual([]);
      expect(JSON.stringify(n.lvs.find((l) => l.lvName === lvNameFor(F)))).toBe(foreign);
    });
  }

  it('killed after the wipe, before lvremove: the wiped LV keeps both tags but no header, and no later run removes it', async () => {
    // The one window the header-last order cannot close (DESIGN.md §5 "Wipe"): sector 0 is zero
    // once the wipe finished, so no run can prove the LV is this owner's any more.
    const n = node();
    n.killAt = 8;
    await run(n, NOW).catch((error: unknown) => {
      if (!(error instanceof Killed)) throw error;
    });
    expect(n.steps.at(-1)).toBe(`wipe discard ${quarantinedLvNameFor('volume', B)}`);
    n.revive();
    const outcomes = await run(n, NOW + 60_000);
    const qB = n.lvs.find((l) => l.lvName === quarantinedLvNameFor('volume', B));
    expect(qB?.header.status).toBe('not-stamped');
    expect(outcomes.map((o) => o.entry.device)).not.toContain(`vg0/${qB?.lvName ?? ''}`);
    expect(n.steps.filter((s) => s.startsWith('lvremove'))).toEqual([]);
  });
});

describe('planPurge of named quarantined LVs (DESIGN.md §6 "Quarantine")', () => {
  const purge = async (n: FakeNode, lvs: readonly string[]) =>
    new GcService({ ports: n.ports(), clock: () => NOW }).planPurge({
      ownerId: OWNER,
      olderThanMs: 0,
      nowMs: NOW + 60_000,
      dryRun: false,
      vgNames: ['vg0'],
      lvs,
    });

  it('plans only the LVs named, as vg/lv or lv, and activates no other', async () => {
    const n = node();
    await run(n, NOW);
    const qA = quarantinedLvNameFor('volume', A);
    for (const ref of [`vg0/${qA}`, qA]) {
      const { plan, activated } = await purge(n, [ref]);
      expect(plan.entries.map((e) => [e.device, e.action])).toEqual([
        [`vg0/${qA}`, 'remove-quarantined'],
      ]);
      expect(activated).toEqual([`vg0/${qA}`]);
      await n.ports().quarantine?.deactivateQuarantined(activated);
    }
  });

  it("purge wipes a quarantined thick volume with the request's policy before lvremove, and never a snapshot", async () => {
    const n = node();
    await run(n, NOW);
    const steps = n.steps.length;
    const gc = new GcService({ ports: n.ports(), clock: () => NOW });
    const { plan } = await gc.planPurge({
      ownerId: OWNER,
      olderThanMs: 0,
      nowMs: NOW + 60_000,
      dryRun: false,
      wipe: 'zero',
      vgNames: ['vg0'],
    });
    expect(plan.wipe).toBe('zero');
    const outcomes = await gc.apply(plan);
    const qA = quarantinedLvNameFor('volume', A);
    const qS = quarantinedLvNameFor('snapshot', S);
    expect(n.steps.slice(steps).filter((x) => !x.startsWith('lvchange'))).toEqual([
      `wipe zero ${qA}`,
      `lvremove ${qA}`,
      `lvremove ${qS}`,
    ]);
    expect(outcomes.map((o) => o.detail)).toEqual([
      `wiped /dev/mapper/vg0-${qA} (zero), removed quarantined LV vg0/${qA}`,
      `removed quarantined LV vg0/${qS}`,
    ]);
  });

  it('a name that is no quarantined LV in the scope is NotFoundError, before anything is activated', async () => {
    const n = node();
    await run(n, NOW);
    const steps = n.steps.length;
    await expect(purge(n, [`vg0/${lvNameFor(F)}`])).rejects.toThrow(
      `no quarantined LV vg0/${lvNameFor(F)} in vg0`,
    );
    expect(n.steps.slice(steps)).toEqual([]);
  });
});

describe('planGc rule 7: quarantined LVs (DESIGN.md §6 "Quarantine")', () => {
  const quarantined = (over: Partial<InventoryQuarantined> = {}): InventoryQuarantined => ({
    kind: 'volume',
    id: B,
    vgName: 'vg0',
    lvName: quarantinedLvNameFor('volume', B),
    lvUuid: 'uuid-q',
    device: `vg0/${quarantinedLvNameFor('volume', B)}`,
    sizeBytes: 16 << 20,
    tags: [...ownTags, `lvstamp.quarantined=${(NOW - 8 * DAY) / 1000}`],
    kernel: { major: 253, minor: 5 },
    header: header(B),
    openCount: 0,
    ...over,
  });
  const planOf = (q: InventoryQuarantined, p: Partial<GcPolicy> = {}, live: string[] = []) => {
    const inventory: Inventory = {
      takenAtMs: NOW,
      naming: DEFAULT_NAMING,
      volumes: [],
      maps: [],
      quarantined: [q],
    };
    return planGc(inventory, new Set(live), { ...policy, ...p }, NOW).entries[0];
  };

  it('removes one whose window passed, with both signals, not open', () => {
    expect(planOf(quarantined())).toMatchObject({
      action: 'remove-quarantined',
      rule: 7,
      expiresAtMs: NOW - DAY,
    });
  });

  it.each([
    [
      'inside its window',
      { tags: [...ownTags, `lvstamp.quarantined=${(NOW - DAY) / 1000}`] },
      7,
      'info',
    ],
    [
      'without the owner tag',
      { tags: ['lvstamp', `lvstamp.quarantined=${(NOW - 8 * DAY) / 1000}`] },
      1,
      'warn',
    ],
    [
      'with two quarantine tags',
      { tags: [...ownTags, 'lvstamp.quarantined=1', 'lvstamp.quarantined=2'] },
      1,
      'warn',
    ],
    ['without a quarantine tag (interrupted restore)', { tags: [...ownTags] }, 1, 'warn'],
    ['with another volume ID in its header', { header: header(A) }, 1, 'warn'],
    ["with another owner's header", { header: header(B, OTHER) }, 1, 'warn'],
    [
      'with an unreadable header',
      { header: { status: 'unreadable', reason: 'LV is inactive' } },
      1,
      'warn',
    ],
    ['open', { openCount: 1 }, 1, 'warn'],
    ['of unknown open count', { openCount: null }, 1, 'warn'],
    [
      'quarantined in the future',
      { tags: [...ownTags, `lvstamp.quarantined=${(NOW + DAY) / 1000}`] },
      7,
      'warn',
    ],
  ] as const)('keeps one %s', (_what, over, rule, severity) => {
    expect(planOf(quarantined(over as Partial<InventoryQuarantined>))).toMatchObject({
      action: 'keep',
      rule,
      severity,
    });
  });

  it.each([
    ['zeroed (not stamped)', { status: 'not-stamped', reason: 'no magic' }],
    ['corrupt', { status: 'corrupt', reason: 'checksum' }],
    ["another owner's", header(B, OTHER)],
  ] as const)(
    'warns at once, inside its window, about one whose header is %s: it can never expire',
    (_what, read) => {
      const e = planOf(
        quarantined({
          tags: [...ownTags, `lvstamp.quarantined=${(NOW - DAY) / 1000}`],
          header: read,
        }),
      );
      expect(e).toMatchObject({ action: 'keep', rule: 1, severity: 'warn' });
      expect(e?.reason).toContain('it can never expire');
      expect(e?.reason).toContain('removes it by hand');
    },
  );

  it('inside its window, an inactive one (header not read) stays info with the time left', () => {
    const e = planOf(
      quarantined({
        tags: [...ownTags, `lvstamp.quarantined=${(NOW - DAY) / 1000}`],
        kernel: null,
        header: { status: 'unreadable', reason: 'LV is inactive' },
      }),
    );
    expect(e).toMatchObject({ action: 'keep', rule: 7, severity: 'info' });
    expect(e?.reason).toContain('left of the');
  });

  it('a run activates every inactive owned quarantined LV with a quarantine time, in its window or not', () => {
    const inWindow = quarantined({
      kernel: null,
      tags: [...ownTags, `lvstamp.quarantined=${(NOW - DAY) / 1000}`],
    });
    const expired = quarantined({ kernel: null, device: 'vg0/expired', lvName: 'expired' });
    const foreign = quarantined({
      kernel: null,
      device: 'vg0/foreign',
      tags: ['lvstamp', `lvstamp.quarantined=${(NOW - DAY) / 1000}`],
    });
    const untagged = quarantined({ kernel: null, device: 'vg0/untagged', tags: [...ownTags] });
    const active = quarantined({ device: 'vg0/active' });
    const all = [inWindow, expired, foreign, untagged, active];
    const judgement = { ownerId: OWNER, naming: DEFAULT_NAMING, windowMs: 7 * DAY };
    expect(quarantinedToActivate(all, judgement)).toEqual([inWindow.device, 'vg0/expired']);
    expect(quarantinedToActivate(all, { ...judgement, windowMs: null })).toEqual([]);
  });

  it('keeps one whose ID is live again, and says to restore it', () => {
    const e = planOf(quarantined(), {}, [B]);
    expect(e).toMatchObject({ action: 'keep', rule: 2, severity: 'warn' });
    expect(e?.reason).toContain(`lvstamp quarantine restore ${B}`);
  });

  it('keeps every one when quarantine is off in the run (0), for purge to remove', () => {
    const e = planOf(quarantined(), { quarantineMs: 0 });
    expect(e).toMatchObject({ action: 'keep', rule: 7, severity: 'info', expiresAtMs: null });
    expect(e?.reason).toContain('lvstamp quarantine purge');
  });

  it('counts expiries against the deletion cap', () => {
    expect(planOf(quarantined(), { maxDeletions: 0 })).toMatchObject({
      action: 'keep',
      severity: 'warn',
    });
  });

  it('quarantines an orphan instead of removing it, and removes it at once with 0', () => {
    const inventory: Inventory = {
      takenAtMs: NOW,
      naming: DEFAULT_NAMING,
      volumes: [
        {
          volumeId: A,
          creating: false,
          vgName: 'vg0',
          lvName: lvNameFor(A),
          lvUuid: 'u',
          device: `vg0/${lvNameFor(A)}`,
          sizeBytes: 16 << 20,
          lvCreatedAtMs: NOW - DAY,
          tags: ownTags,
          kernel: { major: 253, minor: 1 },
          header: header(A),
          openCount: 0,
          dataMaps: [],
        },
      ],
      maps: [],
    };
    expect(planGc(inventory, new Set(), policy, NOW).entries[0]).toMatchObject({
      action: 'quarantine-volume',
      rule: 6,
    });
    expect(
      planGc(inventory, new Set(), { ...policy, quarantineMs: 0 }, NOW).entries[0],
    ).toMatchObject({
      action: 'remove-volume',
      rule: 6,
    });
  });
});

describe('a volume group lvm refuses to change (DESIGN.md §6 rule 1)', () => {
  const missing: UnusableGroup = {
    vgName: 'vg0',
    problem: 'missing-pv',
    detail: 'WARNING: VG vg0 is missing PV FDfXm4 (last written to /dev/loop3).',
  };
  const why =
    'volume group vg0 cannot be changed (missing-pv): WARNING: VG vg0 is missing PV FDfXm4 (last written to /dev/loop3).; nothing in it is changed until lvm can change it again';

  it('keeps every entry of the group with the reason, changes nothing; once repaired, the next run quarantines', async () => {
    const n = node();
    n.unusable = [missing];
    const gc = new GcService({ ports: n.ports(), clock: () => NOW });
    const plan = await planAt(gc, NOW);
    expect(plan.entries.map((e) => [e.device, e.action, e.rule, e.severity])).toEqual([
      [`lvstamp-${A}`, 'keep', 1, 'warn'],
      [`vg0/${lvNameFor(A)}`, 'keep', 1, 'warn'],
      [`vg0/${lvNameFor(F)}`, 'keep', 1, 'warn'],
      [`vg0/${quarantinedLvNameFor('volume', B)}`, 'keep', 1, 'warn'],
      [`vg0/${snapshotLvNameFor(S)}`, 'keep', 1, 'warn'],
    ]);
    const a = plan.entries.find((e) => e.device === `vg0/${lvNameFor(A)}`);
    expect(a?.reason.startsWith(`${why}; would otherwise quarantine-volume: `)).toBe(true);
    const before = n.snapshot();
    const stepsBefore = n.steps.length;
    expect(await gc.apply(plan)).toEqual([]);
    // the expired B was activated to read sector 0 and rests inactive again: no metadata change
    expect(n.steps.slice(stepsBefore)).toEqual([]);
    expect(n.snapshot()).toBe(before);

    n.unusable = [];
    await run(n, NOW + DAY);
    expect(n.lvs.find((l) => l.lvName === quarantinedLvNameFor('volume', A))?.tags).toContain(
      `lvstamp.quarantined=${(NOW + DAY) / 1000}`,
    );
  });

  it('the executor re-checks the group before the first step of a quarantine, removal and expiry', async () => {
    const n = node();
    for (const l of n.lvs) if (parseSnapshotLvName(l.lvName) !== null) l.active = true;
    const gc = new GcService({ ports: n.ports(), clock: () => NOW });
    const plan = await planAt(gc, NOW);
    n.unusable = [missing];
    const stepsBefore = n.steps.length;
    const outcomes = await gc.apply(plan);
    expect(outcomes.map((o) => [o.entry.device, o.outcome, o.detail])).toEqual([
      [`lvstamp-${A}`, 'removed', expect.any(String)],
      [`vg0/${lvNameFor(A)}`, 'skipped', why],
      [`vg0/${snapshotLvNameFor(S)}`, 'skipped', why],
      [`vg0/${quarantinedLvNameFor('volume', B)}`, 'skipped', why],
    ]);
    // the map over A (rule 4, planned while the group was whole) and B's rest are the only acts
    expect(n.steps.slice(stepsBefore)).toEqual([
      `dmsetup remove lvstamp-${A}`,
      `lvchange -an ${quarantinedLvNameFor('volume', B)}`,
    ]);
  });

  it('an expiry re-checks the LV and its group with one look-up of the quarantined name', async () => {
    const n = node();
    const ports = n.ports();
    const volumesLook = vi.spyOn(ports.volumes, 'listLogicalVolumes');
    if (ports.quarantine === undefined) throw new Error('the fake node has a quarantine port');
    const quarantineLook = vi.spyOn(ports.quarantine, 'listQuarantined');
    const gc = new GcService({ ports, clock: () => NOW });
    const { plan } = await gc.planPurge({
      ownerId: OWNER,
      olderThanMs: 0,
      nowMs: NOW,
      dryRun: false,
      vgNames: ['vg0'],
    });
    volumesLook.mockClear();
    quarantineLook.mockClear();
    n.unusable = [missing];
    const qB = quarantinedLvNameFor('volume', B);
    expect((await gc.apply(plan)).map((o) => [o.entry.device, o.outcome, o.detail])).toEqual([
      [`vg0/${qB}`, 'skipped', why],
    ]);
    expect(volumesLook).not.toHaveBeenCalled();
    expect(quarantineLook.mock.calls).toEqual([[{ vgNames: ['vg0'] }, [qB]]]);
  });

  it("purge keeps the group's quarantined LVs with the reason, activating none of them", async () => {
    const n = node();
    n.unusable = [missing];
    const { plan } = await new GcService({ ports: n.ports(), clock: () => NOW }).planPurge({
      ownerId: OWNER,
      olderThanMs: 0,
      nowMs: NOW,
      dryRun: false,
      vgNames: ['vg0'],
    });
    expect(plan.entries.map((e) => [e.device, e.action, e.reason.startsWith(why)])).toEqual([
      [`vg0/${quarantinedLvNameFor('volume', B)}`, 'keep', true],
    ]);
    // lvm refuses an activation there (duplicate PVs): trying would end the purge for every group
    expect(n.steps).toEqual([]);
    expect(n.lvs.find((l) => l.lvName === quarantinedLvNameFor('volume', B))?.active).toBe(false);
  });
});

describe('purge dry run (DESIGN.md §6 "Quarantine", purge)', () => {
  it('activates to read sector 0 as apply does, plans the same, and rests them again', async () => {
    const n = node();
    const qB = quarantinedLvNameFor('volume', B);
    const request = { ownerId: OWNER, olderThanMs: 0, nowMs: NOW, vgNames: ['vg0'] };
    const gc = new GcService({ ports: n.ports(), clock: () => NOW });
    const dry = await gc.planPurge({ ...request, dryRun: true });
    expect(n.steps).toEqual([`lvchange -ay ${qB}`, `lvchange -an ${qB}`]);
    expect(n.lvs.find((l) => l.lvName === qB)?.active).toBe(false);
    expect((await gc.apply(dry.plan)).map((o) => [o.outcome, o.detail])).toEqual([
      ['skipped', 'dry run'],
    ]);
    expect(n.steps).toHaveLength(2);
    const applied = await gc.planPurge({ ...request, dryRun: false });
    expect(dry.plan.entries).toEqual(applied.plan.entries);
    expect(dry.plan.entries.map((e) => [e.device, e.action])).toEqual([
      [`vg0/${qB}`, 'remove-quarantined'],
    ]);
    expect((await gc.apply(applied.plan)).map((o) => o.outcome)).toEqual(['removed']);
  });
});
