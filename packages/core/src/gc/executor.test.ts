import { describe, expect, it } from 'vitest';
import type { DmMap } from '../device/types.js';
import { CommandFailedError, LockTimeoutError } from '../errors.js';
import type { DecodeResult } from '../header/types.js';
import type { LogicalVolume } from '../lvm/types.js';
import type { Volume } from '../volumes/types.js';
import {
  DEFAULT_NAMING,
  dmNameFor,
  dmUuidFor,
  lvNameFor,
  fromTagFor,
  newLvNameFor,
  ownerTagFor,
  snapshotLvNameFor,
  snapshotTagsFor,
} from '../naming.js';
import { applyGcPlan } from './executor.js';
import { takeInventory } from './inventory.js';
import { planGc } from './planner.js';
import type { GcExecutorPorts, GcLinearTarget } from './ports.js';
import type { GcOutcome, GcPlan } from './types.js';

const OWNER = '0123456789abcdef0123456789abcdef';
const NOW = Date.parse('2025-06-01T12:00:00.000Z');
const SCOPE = { vgNames: ['vg0'] };
const HOUR = 3_600_000;
const ORPHAN = 'a'.repeat(32); // old, stamped, attached, not live
const NEW = 'b'.repeat(32); // interrupted create: no header, owner tag
const STALE = 'c'.repeat(32); // data device over a loop device, no LV
const LIVE = 'd'.repeat(32);

/** A mutable node behind fake ports that record every call, lock included. */
class FakeNode {
  readonly calls: string[] = [];
  volumes: Volume[] = [];
  snapshots: LogicalVolume[] = [];
  dmMaps: DmMap[] = [];
  tables = new Map<string, GcLinearTarget>();
  headers = new Map<string, DecodeResult>();
  failures = new Map<string, Error>();
  private nextMinor = 1;

  addVolume(
    volumeId: string,
    creating: boolean,
    header: DecodeResult | null,
    attached = false,
  ): Volume {
    const lvName = creating ? newLvNameFor(volumeId) : lvNameFor(volumeId);
    const minor = this.nextMinor++;
    const lv: Volume = {
      vgName: 'vg0',
      lvName,
      lvUuid: `uuid-${lvName}-1`,
      sizeBytes: 1074790400,
      attr: '-wi-a-----',
      active: true,
      open: attached,
      kernelMajor: 253,
      kernelMinor: minor,
      dmPath: `/dev/mapper/vg0-${lvName}`,
      createdAtMs: NOW - 3 * HOUR,
      tags: ['lvstamp', ownerTagFor(OWNER)],
      volumeId,
      creating,
      capacityBytes: 1073741824,
    };
    this.volumes.push(lv);
    this.dmMaps.push({
      name: `vg0-${lvName}`,
      uuid: `LVM-${lv.lvUuid}`,
      major: 253,
      minor,
      openCount: attached ? 1 : 0,
    });
    this.headers.set(lv.dmPath ?? '', header ?? { status: 'not-stamped', reason: 'magic absent' });
    if (attached) this.addMap(volumeId, { major: 253, minor });
    return lv;
  }

  addMap(volumeId: string, target: GcLinearTarget): void {
    this.dmMaps.push({
      name: dmNameFor(volumeId),
      uuid: dmUuidFor(volumeId),
      major: 253,
      minor: 100 + this.nextMinor++,
      openCount: 0,
    });
    this.tables.set(volumeId, target);
  }

  setOpen(name: string, openCount: number): void {
    this.dmMaps = this.dmMaps.map((m) => (m.name === name ? { ...m, openCount } : m));
  }

  private step<T>(call: string, answer: () => T): Promise<T> {
    this.calls.push(call);
    const failure = this.failures.get(call);
    return failure ? Promise.reject(failure) : Promise.resolve(answer());
  }

  readonly ports: GcExecutorPorts = {
    volumes: {
      listLogicalVolumes: (scope, lvNames) =>
        this.step(
          `listLogicalVolumes ${scope.vgNames.join(',')}${lvNames ? ` ${lvNames.join(',')}` : ''}`,
          () => {
            const wanted = (lv: { vgName: string; lvName: string }): boolean =>
              scope.vgNames.includes(lv.vgName) && (!lvNames || lvNames.includes(lv.lvName));
            return {
              volumes: this.volumes.filter(wanted),
              snapshots: this.snapshots.filter(wanted),
              quarantined: [],
            };
          },
        ),
      activateOwnedVolumes: () => this.step('activateOwnedVolumes', () => []),
      activateOwnedSnapshots: () => this.step('activateOwnedSnapshots', () => []),
      deactivateSnapshots: (lvs) =>
        this.step(`deactivateSnapshots ${lvs.join(',')}`, () => undefined),
      discoverVolumeGroups: () => this.step('discoverVolumeGroups', () => ['vg0']),
      wipeLogicalVolume: (policy, target) =>
        this.step(`wipe ${policy} ${target.dmPath} ${target.sizeBytes}`, () => undefined),
      removeLogicalVolume: (ref) =>
        this.step(
          `removeLogicalVolume ${ref.vgName}/${ref.lvName} ${ref.lvUuid} ${ref.ownerId}`,
          () => {
            this.volumes = this.volumes.filter((v) => v.lvUuid !== ref.lvUuid);
            this.snapshots = this.snapshots.filter((v) => v.lvUuid !== ref.lvUuid);
            this.dmMaps = this.dmMaps.filter((m) => m.uuid !== `LVM-${ref.lvUuid}`);
          },
        ),
    },
    headers: {
      readHeader: (path) =>
        this.step(`readHeader ${path}`, () => {
          const header = this.headers.get(path);
          if (header === undefined) throw new Error(`no device ${path}`);
          return header;
        }),
    },
    devices: {
      listAll: () => this.step('listAll', () => [...this.dmMaps]),
      table: (volumeId) => this.step(`table ${volumeId}`, () => this.tables.get(volumeId) ?? null),
      tables: (volumeIds) =>
        this.step(
          `tables ${volumeIds.join(',')}`,
          () => new Map(volumeIds.map((id) => [id, this.tables.get(id) ?? null])),
        ),
      remove: (volumeId) =>
        this.step(`remove ${volumeId}`, () => {
          // Like the kernel: the map goes, and so does its hold on the target.
          const target = this.tables.get(volumeId);
          this.dmMaps = this.dmMaps
            .filter((m) => m.uuid !== dmUuidFor(volumeId))
            .map((m) =>
              m.major === target?.major && m.minor === target.minor
                ? { ...m, openCount: m.openCount - 1 }
                : m,
            );
          this.tables.delete(volumeId);
        }),
    },
    hostLock: {
      withLock: async (reason, fn) => {
        const failure = this.failures.get(`lock ${reason}`);
        if (failure) throw failure;
        this.calls.push(`lock ${reason}`);
        try {
          return await fn();
        } finally {
          this.calls.push('unlock');
        }
      },
    },
  };
}

function okHeader(volumeId: string, ownerId = OWNER): DecodeResult {
  return {
    status: 'ok',
    version: 1,
    header: {
      volumeId,
      ownerId,
      createdAtMs: NOW - 3 * HOUR,
      dataOffsetBytes: 1048576,
      requestedBytes: 1073741824,
      name: `pvc-${volumeId.slice(0, 4)}`,
    },
  };
}

/** A node with one of each removal, plus a live volume; the plan taken from it. */
async function planned(dryRun = false): Promise<{ node: FakeNode; plan: GcPlan }> {
  const node = new FakeNode();
  node.addVolume(ORPHAN, false, okHeader(ORPHAN), true);
  node.addVolume(NEW, true, null);
  node.addVolume(LIVE, false, okHeader(LIVE), true);
  node.addMap(STALE, { major: 7, minor: 3 });
  const inventory = await takeInventory(node.ports, SCOPE, DEFAULT_NAMING, () => NOW);
  const plan = planGc(
    inventory,
    new Set([LIVE]),
    { ownerId: OWNER, minAgeMs: HOUR, maxDeletions: 10, dryRun },
    NOW,
  );
  node.calls.length = 0;
  return { node, plan };
}

function summary(outcomes: readonly GcOutcome[]): string[] {
  return outcomes.map((o) => `${o.entry.device}: ${o.outcome}: ${o.detail}`);
}

const orphanLv = `vg0/lvstamp_${ORPHAN}`;
const newLv = `vg0/lvstamp_new_${NEW}`;

describe('applyGcPlan', () => {
  it('makes no call at all for a dry run and reports every removal as skipped', async () => {
    const { node, plan } = await planned(true);
    const outcomes = await applyGcPlan(plan, node.ports);
    expect(node.calls).toEqual([]);
    expect(summary(outcomes)).toEqual([
      `lvstamp-${ORPHAN}: skipped: dry run`,
      `lvstamp-${STALE}: skipped: dry run`,
      `${orphanLv}: skipped: dry run`,
      `${newLv}: skipped: dry run`,
    ]);
  });

  it('removes maps first, then volumes, each re-checked and acted on under the host lock', async () => {
    const { node, plan } = await planned();
    const seen: string[] = [];
    const outcomes = await applyGcPlan(plan, node.ports, {
      onOutcome: (o) => seen.push(o.entry.device),
    });

    expect(node.calls).toEqual([
      `lock gc: remove data device lvstamp-${ORPHAN}`,
      'listAll',
      `remove ${ORPHAN}`,
      'unlock',
      `lock gc: remove data device lvstamp-${STALE}`,
      'listAll',
      `remove ${STALE}`,
      'unlock',
      `lock gc: remove volume ${orphanLv}`,
      `listLogicalVolumes vg0 lvstamp_${ORPHAN}`,
      `readHeader /dev/mapper/vg0-lvstamp_${ORPHAN}`,
      'listAll',
      `wipe discard /dev/mapper/vg0-lvstamp_${ORPHAN} 1074790400`,
      `removeLogicalVolume ${orphanLv} uuid-lvstamp_${ORPHAN}-1 ${OWNER}`,
      'unlock',
      `lock gc: remove volume ${newLv}`,
      `listLogicalVolumes vg0 lvstamp_new_${NEW}`,
      `readHeader /dev/mapper/vg0-lvstamp_new_${NEW}`,
      'listAll',
      `removeLogicalVolume ${newLv} uuid-lvstamp_new_${NEW}-1 ${OWNER}`,
      'unlock',
    ]);
    expect(summary(outcomes)).toEqual([
      `lvstamp-${ORPHAN}: removed: removed data device lvstamp-${ORPHAN}; data untouched`,
      `lvstamp-${STALE}: removed: removed data device lvstamp-${STALE}; data untouched`,
      `${orphanLv}: removed: wiped /dev/mapper/vg0-lvstamp_${ORPHAN} (discard), removed LV ${orphanLv}`,
      `${newLv}: removed: removed LV ${newLv}`,
    ]);
    expect(seen).toEqual(outcomes.map((o) => o.entry.device));
    expect(node.volumes.map((v) => v.volumeId)).toEqual([LIVE]);
    expect(node.dmMaps.map((m) => m.name)).toEqual([`vg0-lvstamp_${LIVE}`, `lvstamp-${LIVE}`]);
  });

  it('removes a data device that appeared after the plan before its LV, under the same lock', async () => {
    const { node, plan } = await planned();
    const volumeOnly: GcPlan = {
      ...plan,
      entries: plan.entries.filter((e) => e.device === orphanLv),
    };
    const outcomes = await applyGcPlan(volumeOnly, node.ports);
    expect(node.calls).toEqual([
      `lock gc: remove volume ${orphanLv}`,
      `listLogicalVolumes vg0 lvstamp_${ORPHAN}`,
      `readHeader /dev/mapper/vg0-lvstamp_${ORPHAN}`,
      'listAll',
      `table ${ORPHAN}`,
      `remove ${ORPHAN}`,
      `wipe discard /dev/mapper/vg0-lvstamp_${ORPHAN} 1074790400`,
      `removeLogicalVolume ${orphanLv} uuid-lvstamp_${ORPHAN}-1 ${OWNER}`,
      'unlock',
    ]);
    expect(summary(outcomes)).toEqual([
      `${orphanLv}: removed: removed data device lvstamp-${ORPHAN}, wiped /dev/mapper/vg0-lvstamp_${ORPHAN} (discard), removed LV ${orphanLv}`,
    ]);
  });

  it('skips a data device that became open (mounted) between plan and apply', async () => {
    const { node, plan } = await planned();
    node.setOpen(`lvstamp-${ORPHAN}`, 1);
    const outcomes = await applyGcPlan(plan, node.ports);
    expect(summary(outcomes)).toEqual([
      `lvstamp-${ORPHAN}: skipped: map lvstamp-${ORPHAN} is open now (1)`,
      `lvstamp-${STALE}: removed: removed data device lvstamp-${STALE}; data untouched`,
      `${orphanLv}: skipped: data device lvstamp-${ORPHAN} is open now (1)`,
      `${newLv}: removed: removed LV ${newLv}`,
    ]);
    expect(node.calls.filter((c) => c.startsWith('removeLogicalVolume'))).toEqual([
      `removeLogicalVolume ${newLv} uuid-lvstamp_new_${NEW}-1 ${OWNER}`,
    ]);
  });

  it('skips an LV that became open by another holder', async () => {
    const { node, plan } = await planned();
    node.setOpen(`vg0-lvstamp_new_${NEW}`, 1);
    const outcomes = await applyGcPlan(plan, node.ports);
    expect(summary(outcomes)[3]).toBe(`${newLv}: skipped: LV ${newLv} is open now (open count 1)`);
    expect(node.calls).not.toContain(
      `removeLogicalVolume ${newLv} uuid-lvstamp_new_${NEW}-1 ${OWNER}`,
    );
  });

  it('skips an LV that was recreated with another lv_uuid', async () => {
    const { node, plan } = await planned();
    node.volumes = node.volumes.map((v) =>
      v.volumeId === ORPHAN ? { ...v, lvUuid: 'uuid-recreated' } : v,
    );
    const outcomes = await applyGcPlan(plan, node.ports);
    expect(summary(outcomes)[2]).toBe(
      `${orphanLv}: skipped: LV ${orphanLv} was recreated: lv_uuid uuid-recreated, planned uuid-lvstamp_${ORPHAN}-1`,
    );
    expect(node.calls.some((c) => c.startsWith(`removeLogicalVolume ${orphanLv}`))).toBe(false);
  });

  it('skips an LV that lost its header', async () => {
    const { node, plan } = await planned();
    node.headers.set(`/dev/mapper/vg0-lvstamp_${ORPHAN}`, {
      status: 'corrupt',
      reason: 'checksum mismatch',
    });
    const outcomes = await applyGcPlan(plan, node.ports);
    expect(summary(outcomes)[2]).toBe(
      `${orphanLv}: skipped: header is corrupt now: checksum mismatch`,
    );
    expect(node.calls.some((c) => c.startsWith(`removeLogicalVolume ${orphanLv}`))).toBe(false);
    expect(node.calls.some((c) => c.startsWith('wipe'))).toBe(false);
  });

  it('skips an LV whose header now names another owner', async () => {
    const { node, plan } = await planned();
    const other = 'fedcba9876543210fedcba9876543210';
    node.headers.set(`/dev/mapper/vg0-lvstamp_${ORPHAN}`, okHeader(ORPHAN, other));
    const outcomes = await applyGcPlan(plan, node.ports);
    expect(summary(outcomes)[2]).toBe(
      `${orphanLv}: skipped: header changed: volume ID ${ORPHAN}, owner ${other}; planned ${ORPHAN}, owner ${OWNER}`,
    );
  });

  it('skips an LV whose header can no longer be read', async () => {
    const { node, plan } = await planned();
    node.headers.delete(`/dev/mapper/vg0-lvstamp_${ORPHAN}`);
    const outcomes = await applyGcPlan(plan, node.ports);
    expect(summary(outcomes)[2]).toBe(
      `${orphanLv}: skipped: header is unreadable now: reading /dev/mapper/vg0-lvstamp_${ORPHAN} failed: no device /dev/mapper/vg0-lvstamp_${ORPHAN}`,
    );
  });

  it('skips an interrupted create whose header got written meanwhile (the create is progressing)', async () => {
    const { node, plan } = await planned();
    node.headers.set(`/dev/mapper/vg0-lvstamp_new_${NEW}`, okHeader(NEW));
    const outcomes = await applyGcPlan(plan, node.ports);
    expect(summary(outcomes)[3]).toBe(
      `${newLv}: skipped: header is ok now (planned: not stamped); the create may be in progress`,
    );
  });

  it('skips an interrupted create that lost its owner tag', async () => {
    const { node, plan } = await planned();
    node.volumes = node.volumes.map((v) => (v.volumeId === NEW ? { ...v, tags: ['lvstamp'] } : v));
    const outcomes = await applyGcPlan(plan, node.ports);
    expect(summary(outcomes)[3]).toBe(
      `${newLv}: skipped: LV no longer carries its tags: it lacks the owner tag lvstamp.owner=${OWNER} (tags: lvstamp)`,
    );
  });

  it('skips an orphan that lost its lvstamp tag, whatever its header says (both tags, DESIGN.md §2.3)', async () => {
    const { node, plan } = await planned();
    node.volumes = node.volumes.map((v) =>
      v.volumeId === ORPHAN ? { ...v, tags: [ownerTagFor(OWNER)] } : v,
    );
    const outcomes = await applyGcPlan(plan, node.ports);
    expect(summary(outcomes)[2]).toBe(
      `${orphanLv}: skipped: LV no longer carries its tags: it lacks the tag lvstamp (tags: lvstamp.owner=${OWNER})`,
    );
    expect(node.calls.some((c) => c.startsWith(`removeLogicalVolume ${orphanLv}`))).toBe(false);
  });

  it('re-checks the tags and the header before it removes the data device: a changed LV keeps it', async () => {
    const changes: ((node: FakeNode, lv: Volume) => void)[] = [
      (node, lv) => {
        node.volumes = node.volumes.map((v) => (v === lv ? { ...lv, tags: ['lvstamp'] } : v));
      },
      (node, lv) => {
        node.headers.set(lv.dmPath ?? '', okHeader(ORPHAN, 'f'.repeat(32)));
      },
    ];
    for (const change of changes) {
      const { node, plan } = await planned();
      const volumeOnly: GcPlan = {
        ...plan,
        entries: plan.entries.filter((e) => e.device === orphanLv),
      };
      change(node, node.volumes.find((v) => v.volumeId === ORPHAN) as Volume);
      const outcomes = await applyGcPlan(volumeOnly, node.ports);
      expect(node.calls).toEqual([
        `lock gc: remove volume ${orphanLv}`,
        `listLogicalVolumes vg0 lvstamp_${ORPHAN}`,
        `readHeader /dev/mapper/vg0-lvstamp_${ORPHAN}`,
        'unlock',
      ]);
      expect(outcomes.map((o) => o.outcome)).toEqual(['skipped']);
      expect(node.dmMaps.map((m) => m.name)).toContain(`lvstamp-${ORPHAN}`);
    }
  });

  it('skips devices that are already gone', async () => {
    const { node, plan } = await planned();
    node.volumes = node.volumes.filter((v) => v.volumeId !== NEW);
    node.dmMaps = node.dmMaps.filter((m) => m.name !== `lvstamp-${STALE}`);
    const outcomes = await applyGcPlan(plan, node.ports);
    expect(summary(outcomes)[1]).toBe(
      `lvstamp-${STALE}: skipped: map lvstamp-${STALE} no longer exists`,
    );
    expect(summary(outcomes)[3]).toBe(`${newLv}: skipped: LV ${newLv} no longer exists`);
  });

  it('skips an LV that became inactive', async () => {
    const { node, plan } = await planned();
    node.volumes = node.volumes.map((v) =>
      v.volumeId === NEW ? { ...v, active: false, kernelMajor: null, kernelMinor: null } : v,
    );
    const outcomes = await applyGcPlan(plan, node.ports);
    expect(summary(outcomes)[3]).toBe(
      `${newLv}: skipped: header is unreadable now (planned: not stamped); the create may be in progress`,
    );
  });

  it('reports a failure and goes on with the others, never retrying', async () => {
    const { node, plan } = await planned();
    const failure = new CommandFailedError({
      argv: ['lvremove', '--yes', orphanLv],
      exitCode: 5,
      stdout: '',
      stderr: `Logical volume ${orphanLv} contains a filesystem in use.`,
    });
    node.failures.set(`removeLogicalVolume ${orphanLv} uuid-lvstamp_${ORPHAN}-1 ${OWNER}`, failure);
    const outcomes = await applyGcPlan(plan, node.ports);
    expect(summary(outcomes).slice(2)).toEqual([
      `${orphanLv}: failed: lvremove --yes ${orphanLv} exited 5: Logical volume ${orphanLv} contains a filesystem in use.`,
      `${newLv}: removed: removed LV ${newLv}`,
    ]);
    expect(node.calls.filter((c) => c.startsWith(`removeLogicalVolume ${orphanLv}`))).toHaveLength(
      1,
    );
    expect(node.calls.filter((c) => c === 'unlock')).toHaveLength(4);
  });

  it('does not remove the LV when removing its data device fails', async () => {
    const { node, plan } = await planned();
    node.failures.set(
      `remove ${ORPHAN}`,
      new CommandFailedError({
        argv: ['dmsetup', 'remove'],
        exitCode: 1,
        stdout: '',
        stderr: 'busy',
      }),
    );
    const volumeOnly: GcPlan = {
      ...plan,
      entries: plan.entries.filter((e) => e.device === orphanLv),
    };
    const outcomes = await applyGcPlan(volumeOnly, node.ports);
    expect(summary(outcomes)).toEqual([`${orphanLv}: failed: dmsetup remove exited 1: busy`]);
    expect(node.calls.some((c) => c.startsWith('removeLogicalVolume'))).toBe(false);
  });

  it('reports a lock timeout as a failure of that entry, without touching the device', async () => {
    const { node, plan } = await planned();
    node.failures.set(
      `lock gc: remove data device lvstamp-${STALE}`,
      new LockTimeoutError('host lock held by "lvstamp create pvc-x" for more than 30000 ms'),
    );
    const outcomes = await applyGcPlan(plan, node.ports);
    expect(summary(outcomes)[1]).toBe(
      `lvstamp-${STALE}: failed: host lock held by "lvstamp create pvc-x" for more than 30000 ms`,
    );
    expect(node.calls).not.toContain(`remove ${STALE}`);
    expect(outcomes.map((o) => o.outcome)).toEqual(['removed', 'failed', 'removed', 'removed']);
  });

  it('leaves a data device of the same ID alone when it belongs to the finished LV', async () => {
    const node = new FakeNode();
    node.addVolume(NEW, false, okHeader(NEW), true); // lvstamp_<id>, attached, live
    node.addVolume(NEW, true, null); // a leftover lvstamp_new_<id>
    const inventory = await takeInventory(node.ports, SCOPE, DEFAULT_NAMING, () => NOW);
    const plan = planGc(
      inventory,
      new Set(),
      { ownerId: OWNER, minAgeMs: HOUR, maxDeletions: 10, dryRun: false },
      NOW,
    );
    const onlyLeftover: GcPlan = {
      ...plan,
      entries: plan.entries.filter((e) => e.device === newLv),
    };
    expect(onlyLeftover.entries.map((e) => e.action)).toEqual(['remove-volume']);
    node.calls.length = 0;
    const outcomes = await applyGcPlan(onlyLeftover, node.ports);
    expect(summary(outcomes)).toEqual([`${newLv}: removed: removed LV ${newLv}`]);
    expect(node.calls).not.toContain(`remove ${NEW}`);
    expect(node.dmMaps.map((m) => m.name)).toContain(`lvstamp-${NEW}`);
  });

  it('returns no outcome for keep entries', async () => {
    const { node, plan } = await planned();
    const keepOnly: GcPlan = { ...plan, entries: plan.entries.filter((e) => e.action === 'keep') };
    expect(keepOnly.entries.length).toBeGreaterThan(0);
    expect(await applyGcPlan(keepOnly, node.ports)).toEqual([]);
    expect(node.calls).toEqual([]);
  });
});

describe('applyGcPlan snapshots and interrupted restores', () => {
  const SOURCE = 'e'.repeat(32);
  const SNAP = '5'.repeat(32);
  const RESTORE = '6'.repeat(32);
  const snapLv = `vg0/${snapshotLvNameFor(SNAP)}`;

  function addSnapshot(node: FakeNode, header: DecodeResult): LogicalVolume {
    const lvName = snapshotLvNameFor(SNAP);
    const lv: LogicalVolume = {
      vgName: 'vg0',
      lvName,
      lvUuid: `uuid-${lvName}`,
      sizeBytes: 1077936128,
      attr: 'Vri-a-tz-k',
      active: true,
      open: false,
      kernelMajor: 253,
      kernelMinor: 77,
      dmPath: `/dev/mapper/vg0-${lvName}`,
      createdAtMs: NOW - 3 * HOUR,
      tags: [
        'lvstamp',
        ownerTagFor(OWNER),
        ...snapshotTagsFor({
          sourceVolumeId: SOURCE,
          sizeBytes: 1 << 30,
          createdMs: NOW - 3 * HOUR,
        }),
      ],
    };
    node.snapshots.push(lv);
    node.dmMaps.push({
      name: `vg0-${lvName}`,
      uuid: `LVM-${lv.lvUuid}`,
      major: 253,
      minor: 77,
      openCount: 0,
    });
    node.headers.set(lv.dmPath ?? '', header);
    return lv;
  }

  async function plannedSnapshot(header = okHeader(SOURCE)) {
    const node = new FakeNode();
    addSnapshot(node, header);
    const restore = node.addVolume(RESTORE, true, okHeader(SOURCE));
    node.volumes = node.volumes.map((v) =>
      v === restore ? { ...v, tags: [...v.tags, fromTagFor({ kind: 'snapshot', id: SNAP })] } : v,
    );
    const inventory = await takeInventory(node.ports, SCOPE, DEFAULT_NAMING, () => NOW);
    const plan = planGc(
      inventory,
      new Set(),
      { ownerId: OWNER, minAgeMs: HOUR, maxDeletions: 10, dryRun: false },
      NOW,
      { snapshotLiveSet: new Set() },
    );
    node.calls.length = 0;
    return { node, plan };
  }

  it('re-checks an orphan snapshot (name, uuid, tags, sector 0, open) under the lock, then removes it by uuid', async () => {
    const { node, plan } = await plannedSnapshot();
    const outcomes = await applyGcPlan(plan, node.ports);
    expect(summary(outcomes)).toEqual([
      `vg0/lvstamp_new_${RESTORE}: removed: removed LV vg0/lvstamp_new_${RESTORE}`,
      `${snapLv}: removed: removed snapshot LV ${snapLv}`,
    ]);
    expect(node.calls.slice(node.calls.indexOf(`lock gc: remove snapshot ${snapLv}`))).toEqual([
      `lock gc: remove snapshot ${snapLv}`,
      `listLogicalVolumes vg0 ${snapshotLvNameFor(SNAP)}`,
      `readHeader /dev/mapper/vg0-${snapshotLvNameFor(SNAP)}`,
      'listAll',
      `removeLogicalVolume ${snapLv} uuid-${snapshotLvNameFor(SNAP)} ${OWNER}`,
      'unlock',
    ]);
    expect(node.snapshots).toEqual([]);
    expect(node.volumes).toEqual([]);
  });

  it("skips a snapshot whose sector 0 became another owner's before the removal", async () => {
    const { node, plan } = await plannedSnapshot();
    node.headers.set(
      `/dev/mapper/vg0-${snapshotLvNameFor(SNAP)}`,
      okHeader(SOURCE, 'f'.repeat(32)),
    );
    const outcomes = await applyGcPlan(plan, node.ports);
    expect(outcomes.find((o) => o.entry.device === snapLv)).toMatchObject({
      outcome: 'skipped',
      detail: expect.stringContaining('sector 0 changed') as unknown,
    });
    expect(node.calls.filter((c) => c.startsWith('removeLogicalVolume vg0/lvstamp_snap_'))).toEqual(
      [],
    );
  });

  it('skips a snapshot that was recreated (another lv_uuid) or lost its source tag', async () => {
    const { node, plan } = await plannedSnapshot();
    node.snapshots = node.snapshots.map((s) => ({ ...s, tags: ['lvstamp', ownerTagFor(OWNER)] }));
    const outcomes = await applyGcPlan(plan, node.ports);
    expect(outcomes.find((o) => o.entry.device === snapLv)?.detail).toBe(
      `lvstamp.source tag is missing now, planned ${SOURCE}`,
    );
    const again = await plannedSnapshot();
    again.node.snapshots = again.node.snapshots.map((s) => ({ ...s, lvUuid: 'uuid-other' }));
    const recreated = await applyGcPlan(again.plan, again.node.ports);
    expect(recreated.find((o) => o.entry.device === snapLv)?.outcome).toBe('skipped');
  });

  it('skips an interrupted restore that lost its lvstamp.from tag or now carries two (DESIGN.md §6 "Snapshots")', async () => {
    const restoreLv = `vg0/lvstamp_new_${RESTORE}`;
    for (const from of [
      [],
      [fromTagFor({ kind: 'snapshot', id: SNAP }), `lvstamp.from=volume.${SOURCE}`],
    ]) {
      const { node, plan } = await plannedSnapshot();
      expect(plan.entries.find((e) => e.device === restoreLv)?.action).toBe('remove-volume');
      node.volumes = node.volumes.map((v) =>
        v.volumeId === RESTORE ? { ...v, tags: ['lvstamp', ownerTagFor(OWNER), ...from] } : v,
      );
      const outcomes = await applyGcPlan(plan, node.ports);
      expect(outcomes.find((o) => o.entry.device === restoreLv)).toMatchObject({
        outcome: 'skipped',
        detail: 'LV no longer carries a lvstamp.from tag',
      });
      expect(node.calls.filter((c) => c.startsWith(`removeLogicalVolume ${restoreLv}`))).toEqual(
        [],
      );
      expect(node.volumes.map((v) => v.volumeId)).toEqual([RESTORE]);
    }
  });

  it('skips an interrupted restore whose header became its own (the restore went on)', async () => {
    const { node, plan } = await plannedSnapshot();
    node.headers.set(`/dev/mapper/vg0-lvstamp_new_${RESTORE}`, okHeader(RESTORE));
    const outcomes = await applyGcPlan(plan, node.ports);
    expect(outcomes.find((o) => o.entry.device === `vg0/lvstamp_new_${RESTORE}`)?.detail).toContain(
      `planned the source's ${SOURCE}`,
    );
  });
});

describe('applyGcPlan: the wipe before a removal (DESIGN.md §5 "Wipe")', () => {
  const orphanPath = `/dev/mapper/vg0-lvstamp_${ORPHAN}`;
  const orphanOnly = (plan: GcPlan, wipe: GcPlan['wipe']): GcPlan => ({
    ...plan,
    wipe,
    entries: plan.entries.filter((e) => e.device === orphanLv),
  });

  it("wipes a thick volume with the plan's policy after its data device is gone, then lvremove, under one lock", async () => {
    const { node, plan } = await planned();
    const outcomes = await applyGcPlan(orphanOnly(plan, 'zero'), node.ports);
    expect(node.calls).toEqual([
      `lock gc: remove volume ${orphanLv}`,
      `listLogicalVolumes vg0 lvstamp_${ORPHAN}`,
      `readHeader ${orphanPath}`,
      'listAll',
      `table ${ORPHAN}`,
      `remove ${ORPHAN}`,
      `wipe zero ${orphanPath} 1074790400`,
      `removeLogicalVolume ${orphanLv} uuid-lvstamp_${ORPHAN}-1 ${OWNER}`,
      'unlock',
    ]);
    expect(summary(outcomes)).toEqual([
      `${orphanLv}: removed: removed data device lvstamp-${ORPHAN}, wiped ${orphanPath} (zero), removed LV ${orphanLv}`,
    ]);
  });

  it('a failed wipe fails that entry only, names the wipe and leaves the LV; the other entries go on', async () => {
    const { node, plan } = await planned();
    node.failures.set(
      `wipe discard ${orphanPath} 1074790400`,
      new CommandFailedError({
        argv: ['blkdiscard', '--zeroout', '--offset', '4096', '--length', '1074786304', orphanPath],
        exitCode: 1,
        stdout: '',
        stderr: `blkdiscard: ${orphanPath}: BLKZEROOUT ioctl failed: Input/output error`,
      }),
    );
    const outcomes = await applyGcPlan(plan, node.ports);
    expect(summary(outcomes).slice(2)).toEqual([
      `${orphanLv}: failed: wipe (discard) of ${orphanPath} failed, LV ${orphanLv} left in place: ` +
        `blkdiscard --zeroout --offset 4096 --length 1074786304 ${orphanPath} exited 1: blkdiscard: ${orphanPath}: BLKZEROOUT ioctl failed: Input/output error`,
      `${newLv}: removed: removed LV ${newLv}`,
    ]);
    expect(node.calls.some((c) => c.startsWith(`removeLogicalVolume ${orphanLv}`))).toBe(false);
    expect(node.volumes.map((v) => v.volumeId)).toContain(ORPHAN);
  });

  it('never wipes an lvstamp_new_ leftover (it never held data), nor with the policy none', async () => {
    const { node, plan } = await planned();
    await applyGcPlan(plan, node.ports);
    expect(node.calls.filter((c) => c.startsWith('wipe'))).toEqual([
      `wipe discard ${orphanPath} 1074790400`,
    ]);
    const again = await planned();
    const outcomes = await applyGcPlan({ ...again.plan, wipe: 'none' }, again.node.ports);
    expect(again.node.calls.some((c) => c.startsWith('wipe'))).toBe(false);
    expect(summary(outcomes)[2]).toBe(`${orphanLv}: removed: removed LV ${orphanLv}`);
  });

  it('never wipes a thin volume: its pool zeroes chunks, and a wipe would discard chunks a snapshot shares', async () => {
    const { node, plan } = await planned();
    node.volumes = node.volumes.map((v) =>
      v.volumeId === ORPHAN ? { ...v, attr: 'Vwi-a-tz--' } : v,
    );
    const outcomes = await applyGcPlan(orphanOnly(plan, 'zero'), node.ports);
    expect(node.calls.some((c) => c.startsWith('wipe'))).toBe(false);
    expect(summary(outcomes)).toEqual([
      `${orphanLv}: removed: removed data device lvstamp-${ORPHAN}, removed LV ${orphanLv}`,
    ]);
  });
});
