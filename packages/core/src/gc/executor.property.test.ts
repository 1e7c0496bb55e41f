import fc from 'fast-check';
import { describe, it } from 'vitest';
import type { DmMap } from '../device/types.js';
import type { DecodeResult } from '../header/types.js';
import type { LogicalVolume, Volume } from '../lvm/types.js';
import { dmNameFor, dmUuidFor, lvDmName, ownerTagFor, parseFromTag } from '../naming.js';
import { IDS, OWNERS, PROPERTY_SEED, gcInputArb } from '../testing/gc-inventories.js';
import { failedHeaderCheck, failedTagCheck } from '../volumes/ownership.js';
import { applyGcPlan } from './executor.js';
import { planGc } from './planner.js';
import type { GcExecutorPorts, GcLinearTarget } from './ports.js';
import type { GcPlan, GcPlanEntry, Inventory } from './types.js';

// The executor's re-checks (DESIGN.md §6 "The executor") over random plans and
// random changes between plan and apply: it acts only on a device that is
// still what the plan relied on, and acts on every planned device nothing changed.

const RUNS = Number(process.env.LVSTAMP_PROPERTY_RUNS ?? '') || 10_000;

/** A node behind the executor's ports, built from the inventory the plan was made from. */
class Node {
  volumes: Volume[] = [];
  snapshots: LogicalVolume[] = [];
  dmMaps: DmMap[] = [];
  tables = new Map<string, GcLinearTarget>();
  headers = new Map<string, DecodeResult>();
  /** Broken rules, recorded at the moment of an act. */
  readonly violations: string[] = [];
  readonly acted = new Set<string>();

  constructor(inventory: Inventory) {
    for (const v of inventory.volumes) {
      const lv = this.lvOf(v);
      this.volumes.push({ ...lv, volumeId: v.volumeId, creating: v.creating, capacityBytes: null });
      if (v.kernel !== null) {
        const holders = (v.openCount ?? 0) + v.dataMaps.length;
        this.dmMaps.push(this.lvDm(lv, holders));
        if (v.header.status !== 'unreadable') this.headers.set(lv.dmPath ?? '', v.header);
      }
    }
    for (const s of inventory.snapshots ?? []) {
      const lv = this.lvOf(s);
      this.snapshots.push(lv);
      if (s.kernel !== null) {
        this.dmMaps.push(this.lvDm(lv, s.openCount ?? 0));
        if (s.header.status !== 'unreadable') this.headers.set(lv.dmPath ?? '', s.header);
      }
    }
    for (const m of inventory.maps) {
      this.dmMaps.push({ name: m.name, uuid: m.uuid, ...m.kernel, openCount: m.openCount });
      if (m.volumeId !== null && m.target !== null) this.tables.set(m.volumeId, m.target);
    }
  }

  private lvOf(
    v: Inventory['volumes'][number] | NonNullable<Inventory['snapshots']>[number],
  ): LogicalVolume {
    return {
      vgName: v.vgName,
      lvName: v.lvName,
      lvUuid: v.lvUuid,
      sizeBytes: v.sizeBytes,
      attr: v.kernel === null ? '-wi-------' : '-wi-a-----',
      active: v.kernel !== null,
      open: false,
      kernelMajor: v.kernel?.major ?? null,
      kernelMinor: v.kernel?.minor ?? null,
      dmPath: v.kernel === null ? null : `/dev/mapper/${lvDmName(v.vgName, v.lvName)}`,
      createdAtMs: v.lvCreatedAtMs,
      tags: [...v.tags],
    };
  }

  private lvDm(lv: LogicalVolume, openCount: number): DmMap {
    return {
      name: lvDmName(lv.vgName, lv.lvName),
      uuid: `LVM-${lv.lvUuid}`,
      major: lv.kernelMajor ?? 0,
      minor: lv.kernelMinor ?? 0,
      openCount,
    };
  }

  /** The LV device's holders besides its own data device `lvstamp-<volumeId>`. */
  private holders(lv: LogicalVolume, volumeId: string | null): number {
    const dm = this.dmMaps.find((m) => m.major === lv.kernelMajor && m.minor === lv.kernelMinor);
    if (dm === undefined) return Infinity;
    const own = volumeId === null ? undefined : this.ownMap(lv, volumeId);
    return dm.openCount - (own === undefined ? 0 : 1);
  }

  private ownMap(lv: LogicalVolume, volumeId: string): DmMap | undefined {
    const map = this.dmMaps.find(
      (m) => m.name === dmNameFor(volumeId) && m.uuid === dmUuidFor(volumeId),
    );
    const table = this.tables.get(volumeId);
    return map !== undefined && table?.major === lv.kernelMajor && table.minor === lv.kernelMinor
      ? map
      : undefined;
  }

  /** Records a broken rule when the LV `ref` names is not, right now, what `entry` relied on. */
  private checkLvRemoval(plan: GcPlan, entry: GcPlanEntry | undefined, lv: LogicalVolume): void {
    const at = `lvremove ${lv.vgName}/${lv.lvName}`;
    const fail = (why: string): void => {
      this.violations.push(`${at}: ${why}`);
    };
    if (entry === undefined || entry.target === 'map') {
      fail('no such entry in the plan');
      return;
    }
    if (entry.lvUuid !== lv.lvUuid || entry.lvName !== lv.lvName) fail('another LV than planned');
    if (failedTagCheck(lv, plan.ownerId, plan.naming) !== null) fail('without both tags');
    const header = this.headers.get(lv.dmPath ?? '') ?? null;
    if (header === null) {
      fail('its header cannot be read');
      return;
    }
    if (entry.target === 'snapshot') {
      if (failedHeaderCheck(header, entry.sourceVolumeId ?? '', plan.ownerId) !== null)
        fail('sector 0 is not the planned source header of this owner');
      if (this.holders(lv, null) !== 0) fail('open');
      return;
    }
    const ok =
      entry.evidence === 'header'
        ? failedHeaderCheck(header, entry.volumeId, plan.ownerId) === null
        : entry.evidence === 'source-header'
          ? failedHeaderCheck(header, entry.headerVolumeId ?? '', plan.ownerId) === null &&
            parseFromTag(lv.tags, plan.naming) !== null
          : header.status === 'not-stamped';
    if (!ok) fail(`its header no longer is the planned ${String(entry.evidence)} evidence`);
    if (this.holders(lv, entry.volumeId) !== 0) fail('open');
    const own = this.ownMap(lv, entry.volumeId);
    if (own !== undefined) fail('its data device is still there');
  }

  ports(plan: GcPlan): GcExecutorPorts {
    const entryOf = (device: string) => plan.entries.find((e) => e.device === device);
    return {
      lvm: {
        listLogicalVolumes: (scope, lvNames) => {
          const wanted = (lv: LogicalVolume) =>
            scope.vgNames.includes(lv.vgName) && (lvNames?.includes(lv.lvName) ?? true);
          return Promise.resolve({
            volumes: this.volumes.filter(wanted),
            snapshots: this.snapshots.filter(wanted),
          });
        },
        removeLogicalVolume: (ref) => {
          // No re-check of its own here (lvm's `--select` is the lvm module's to test): the
          // executor alone must have refused whatever changed.
          const lv = [...this.volumes, ...this.snapshots].find((v) => v.lvUuid === ref.lvUuid);
          if (lv === undefined) return Promise.resolve();
          this.checkLvRemoval(plan, entryOf(`${lv.vgName}/${lv.lvName}`), lv);
          this.acted.add(`${lv.vgName}/${lv.lvName}`);
          this.volumes = this.volumes.filter((v) => v.lvUuid !== ref.lvUuid);
          this.snapshots = this.snapshots.filter((v) => v.lvUuid !== ref.lvUuid);
          this.dmMaps = this.dmMaps.filter((m) => m.uuid !== `LVM-${ref.lvUuid}`);
          return Promise.resolve();
        },
        activateOwnedVolumes: () => Promise.resolve([]),
        activateOwnedSnapshots: () => Promise.resolve([]),
        deactivateSnapshots: () => Promise.resolve(),
        discoverVolumeGroups: () => Promise.resolve([]),
      },
      headers: {
        readHeader: (path) => {
          const header = this.headers.get(path);
          return header === undefined
            ? Promise.reject(new Error(`no device ${path}`))
            : Promise.resolve(header);
        },
      },
      devices: {
        listAll: () => Promise.resolve([...this.dmMaps]),
        table: (volumeId) => Promise.resolve(this.tables.get(volumeId) ?? null),
        tables: () => Promise.reject(new Error('the executor reads one table at a time')),
        remove: (volumeId) => {
          const name = dmNameFor(volumeId);
          const map = this.dmMaps.find((m) => m.name === name);
          if (map === undefined) return Promise.reject(new Error(`no map ${name}`));
          const planned = entryOf(name);
          // As the map of a map entry, or as the data device of a volume entry over that LV.
          const overPlannedLv = plan.entries.some(
            (e) => e.action === 'remove-volume' && e.volumeId === volumeId,
          );
          if (planned?.action !== 'remove-map' && !overPlannedLv)
            this.violations.push(`dmsetup remove ${name}: not planned`);
          if (map.uuid !== dmUuidFor(volumeId))
            this.violations.push(`dmsetup remove ${name}: UUID ${map.uuid}`);
          if (map.openCount > 0) this.violations.push(`dmsetup remove ${name}: open`);
          this.acted.add(name);
          const target = this.tables.get(volumeId);
          this.dmMaps = this.dmMaps
            .filter((m) => m !== map)
            .map((m) =>
              m.major === target?.major && m.minor === target.minor
                ? { ...m, openCount: m.openCount - 1 }
                : m,
            );
          this.tables.delete(volumeId);
          return Promise.resolve();
        },
      },
      hostLock: { withLock: (_reason, fn) => fn() },
    };
  }
}

/** One change between plan and apply, aimed at the `index`-th removal entry. */
type Change =
  | { kind: 'drop-tag'; index: number; tag: 'lvstamp' | 'owner' }
  | {
      kind: 'header';
      index: number;
      to: 'other-id' | 'other-owner' | 'not-stamped' | 'corrupt' | 'own';
    }
  | {
      kind: 'rename' | 'recreate' | 'open' | 'deactivate' | 'open-map' | 'drop-from';
      index: number;
    };

const changeArb: fc.Arbitrary<Change> = fc.oneof(
  fc.record({
    kind: fc.constant('drop-tag' as const),
    index: fc.nat(9),
    tag: fc.constantFrom('lvstamp' as const, 'owner' as const),
  }),
  fc.record({
    kind: fc.constant('header' as const),
    index: fc.nat(9),
    to: fc.constantFrom(
      'other-id' as const,
      'other-owner' as const,
      'not-stamped' as const,
      'corrupt' as const,
      'own' as const,
    ),
  }),
  fc.record({
    kind: fc.constantFrom(
      'rename' as const,
      'recreate' as const,
      'open' as const,
      'deactivate' as const,
      'open-map' as const,
      'drop-from' as const,
    ),
    index: fc.nat(9),
  }),
);

/** Applies `change` to the node; returns the device names whose state it may have changed. */
function applyChange(node: Node, plan: GcPlan, change: Change): string[] {
  const removals = plan.entries.filter((e) => e.action !== 'keep');
  const entry = removals[change.index % Math.max(removals.length, 1)];
  if (entry === undefined) return [];
  if (entry.target === 'map') {
    if (change.kind !== 'open-map' && change.kind !== 'recreate') return [];
    node.dmMaps = node.dmMaps.map((m) =>
      m.name !== entry.device
        ? m
        : change.kind === 'open-map'
          ? { ...m, openCount: m.openCount + 1 }
          : { ...m, uuid: `${m.uuid}-new` },
    );
    return [entry.device];
  }
  const isVolume = entry.target === 'volume';
  const list = isVolume ? node.volumes : node.snapshots;
  const lv = list.find((v) => v.lvUuid === entry.lvUuid);
  if (lv === undefined) return [];
  const changed = (next: LogicalVolume) => {
    if (isVolume) node.volumes = node.volumes.map((v) => (v === lv ? { ...v, ...next } : v));
    else node.snapshots = node.snapshots.map((v) => (v === lv ? next : v));
  };
  const touched = [entry.device, ...(isVolume ? [dmNameFor(entry.volumeId)] : [])];
  const path = lv.dmPath ?? '';
  const header = node.headers.get(path);
  switch (change.kind) {
    case 'drop-tag': {
      const tag = change.tag === 'lvstamp' ? plan.naming.tag : ownerTagFor(plan.ownerId);
      changed({ ...lv, tags: lv.tags.filter((t) => t !== tag) });
      return touched;
    }
    case 'drop-from':
      changed({
        ...lv,
        tags: lv.tags.filter(
          (t) => !t.startsWith(`${plan.naming.tag}.`) || t.startsWith(`${plan.naming.tag}.owner=`),
        ),
      });
      return touched;
    case 'header': {
      const base = header?.status === 'ok' ? header.header : null;
      const fields = base ?? {
        volumeId: IDS[0] ?? '',
        ownerId: plan.ownerId,
        createdAtMs: 0,
        dataOffsetBytes: 1048576,
        requestedBytes: 1 << 30,
        name: 'pvc-x',
      };
      const next: DecodeResult =
        change.to === 'not-stamped'
          ? { status: 'not-stamped', reason: 'zeros' }
          : change.to === 'corrupt'
            ? { status: 'corrupt', reason: 'checksum mismatch' }
            : {
                status: 'ok',
                version: 2,
                header: {
                  ...fields,
                  ...(change.to === 'other-id' ? { volumeId: `${fields.volumeId.slice(1)}9` } : {}),
                  ...(change.to === 'other-owner'
                    ? { ownerId: OWNERS.find((o) => o !== plan.ownerId) ?? '' }
                    : {}),
                  ...(change.to === 'own' && isVolume
                    ? { volumeId: entry.volumeId, ownerId: plan.ownerId }
                    : {}),
                },
              };
      node.headers.set(path, next);
      return touched;
    }
    case 'rename':
      changed({ ...lv, lvName: `${lv.lvName}x` });
      return touched;
    case 'recreate':
      changed({ ...lv, lvUuid: `${lv.lvUuid}-new` });
      return touched;
    case 'open':
    case 'open-map': {
      const name =
        change.kind === 'open-map' && isVolume
          ? dmNameFor(entry.volumeId)
          : lvDmName(lv.vgName, lv.lvName);
      node.dmMaps = node.dmMaps.map((m) =>
        m.name === name ? { ...m, openCount: m.openCount + 1 } : m,
      );
      return touched;
    }
    case 'deactivate':
      changed({ ...lv, active: false, kernelMajor: null, kernelMinor: null, dmPath: null });
      return touched;
  }
}

describe(`applyGcPlan re-checks (seed ${String(PROPERTY_SEED)}, ${String(RUNS)} plans; replay with LVSTAMP_PROPERTY_SEED)`, () => {
  it('acts only on devices still as planned, and on every planned device nothing changed', async () => {
    await fc.assert(
      fc.asyncProperty(
        gcInputArb,
        fc.array(changeArb, { maxLength: 3 }),
        async (input, changes) => {
          const policy = { ...input.policy, dryRun: false };
          const plan = planGc(
            input.inventory,
            input.liveSet,
            policy,
            input.nowMs,
            input.snapshotLiveSet === undefined ? {} : { snapshotLiveSet: input.snapshotLiveSet },
          );
          const node = new Node(input.inventory);
          const touched = new Set(changes.flatMap((c) => applyChange(node, plan, c)));
          const outcomes = await applyGcPlan(plan, node.ports(plan));
          if (node.violations.length > 0)
            throw new Error(`acted on a changed device: ${node.violations.join('; ')}`);
          // Liveness: an entry nothing touched is removed. Left out: an LV under a map that is
          // not its own data device (another ID, or its name with a foreign UUID) is held open
          // by it, which the executor rightly counts (the inventory subtracts every lvstamp map).
          for (const o of outcomes) {
            const e = o.entry;
            const foreignMap =
              e.target === 'volume' &&
              input.inventory.volumes.some(
                (v) =>
                  v.device === e.device &&
                  v.dataMaps.some(
                    (n) =>
                      n !== dmNameFor(e.volumeId) ||
                      input.inventory.maps.some(
                        (m) => m.name === n && m.uuid !== dmUuidFor(e.volumeId),
                      ),
                  ),
              );
            const overTouchedLv =
              e.target === 'map' &&
              input.inventory.maps.some(
                (m) => m.name === e.device && m.lv !== null && touched.has(m.lv),
              );
            const underTouchedMap =
              e.target === 'volume' &&
              input.inventory.volumes.some(
                (v) => v.device === e.device && v.dataMaps.some((n) => touched.has(n)),
              );
            const unchanged = !touched.has(e.device) && !overTouchedLv && !underTouchedMap;
            if (unchanged && !foreignMap && o.outcome !== 'removed') {
              throw new Error(
                `${e.device} was planned, nothing changed it, yet ${o.outcome}: ${o.detail}`,
              );
            }
          }
        },
      ),
      { numRuns: RUNS, seed: PROPERTY_SEED },
    );
  });
});
