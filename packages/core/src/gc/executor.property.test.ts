import fc from 'fast-check';
import { describe, it } from 'vitest';
import type { DmMap } from '../device/types.js';
import type { DecodeResult } from '../header/types.js';
import type { LogicalVolume } from '../lvm/types.js';
import type { Volume } from '../volumes/types.js';
import { dmNameFor, dmUuidFor, lvDmName } from '../naming.js';
import {
  CASE_VARIANTS,
  IDS,
  OWNERS,
  PROPERTY_RUNS,
  PROPERTY_SEED,
  PROPERTY_TIMEOUT_MS,
  gcInputArb,
  propertySeedLine,
} from '../testing/gc-inventories.js';
import { fromTagOf, hasBothTags, headerIs, tagValues } from '../testing/gc-oracle.js';
import { applyGcPlan } from './executor.js';
import { planGc } from './planner.js';
import type { GcExecutorPorts, GcLinearTarget } from './ports.js';
import type { GcPlan, GcPlanEntry, Inventory } from './types.js';

// The executor's re-checks (DESIGN.md §6 "The executor") over random plans and
// random changes between plan and apply: it acts only on a device that is
// still what the plan relied on, and acts on every planned device nothing
// changed. The fake node judges each act at the moment it happens, with
// testing/gc-oracle.ts (not the executor's own checks): an LV's data device
// may go only once the LV itself passed every re-check.
//
// Broken executors this property is known to catch on every seed tried
// (each with one deliberate fault):
//   a volume's tags not re-checked            a snapshot's tags not re-checked
//   a volume's header not re-checked          a snapshot's sector 0 not re-checked
//   lv_uuid not re-checked (volume, snapshot) LV open count not re-checked (volume, snapshot)
//   a map's open count or UUID not re-checked its own data device's open count not re-checked
//   a headerless create accepting any header that is not ok
//   a snapshot's lvstamp.source not compared with the plan
//   an interrupted restore's lvstamp.from tag not re-checked
//   the data device removed before the LV's tags and header are re-checked
//   LV holders counted as if its data device always existed
//   a wipe before the re-checks, or before the data device is removed
//   a removal of a thick volume without its wipe

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
  /** `vg/lv` of each LV the executor wiped. */
  readonly wiped = new Set<string>();

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

  /**
   * Why the LV is not, right now, what `entry` relied on (DESIGN.md §6 "The
   * executor"); empty when it still is. `dataDeviceGone` adds that its own
   * data device must be gone (true at lvremove, not at its `dmsetup remove`).
   */
  lvProblems(
    plan: GcPlan,
    entry: GcPlanEntry | undefined,
    lv: LogicalVolume,
    dataDeviceGone: boolean,
  ): string[] {
    if (entry === undefined || entry.target === 'map' || entry.target === 'quarantined')
      return ['no such entry in the plan'];
    const problems: string[] = [];
    if (entry.lvUuid !== lv.lvUuid || entry.lvName !== lv.lvName)
      problems.push('another LV than planned');
    if (!hasBothTags(lv.tags, plan.ownerId)) problems.push('without both tags');
    const header = this.headers.get(lv.dmPath ?? '') ?? null;
    if (!lv.active || header === null) return [...problems, 'inactive, its header unread'];
    if (entry.target === 'snapshot') {
      const source = entry.sourceVolumeId ?? '';
      const sources = tagValues(lv.tags, 'source');
      if (sources.length !== 1 || sources[0] !== source)
        problems.push(`lvstamp.source is ${sources.join(',') || 'missing'}, planned ${source}`);
      if (!headerIs(header, source, plan.ownerId))
        problems.push('sector 0 is not the planned source header of this owner');
      if (this.holders(lv, null) !== 0) problems.push('open');
      return problems;
    }
    const evidence =
      entry.evidence === 'header'
        ? headerIs(header, entry.volumeId, plan.ownerId)
        : entry.evidence === 'source-header'
          ? headerIs(header, entry.headerVolumeId ?? '', plan.ownerId) &&
            fromTagOf(lv.tags) !== null
          : entry.evidence === 'owner-tag' && header.status === 'not-stamped';
    if (!evidence) problems.push(`no longer the planned ${String(entry.evidence)} evidence`);
    if (this.holders(lv, entry.volumeId) !== 0) problems.push('open');
    if (dataDeviceGone && this.ownMap(lv, entry.volumeId) !== undefined)
      problems.push('its data device is still there');
    return problems;
  }

  /** Sets up `lvstamp-<volumeId>` over the LV (unless a map of that name exists), open or not. */
  dataDeviceOver(lv: LogicalVolume, volumeId: string, open: boolean): void {
    if (lv.kernelMajor === null || lv.kernelMinor === null) return;
    const existing = this.ownMap(lv, volumeId);
    if (existing !== undefined) {
      if (open) {
        this.dmMaps = this.dmMaps.map((m) =>
          m === existing ? { ...m, openCount: m.openCount + 1 } : m,
        );
      }
      return;
    }
    if (this.dmMaps.some((m) => m.name === dmNameFor(volumeId))) return;
    const lvDevice = lvDmName(lv.vgName, lv.lvName);
    this.dmMaps = [
      ...this.dmMaps.map((m) => (m.name === lvDevice ? { ...m, openCount: m.openCount + 1 } : m)),
      {
        name: dmNameFor(volumeId),
        uuid: dmUuidFor(volumeId),
        major: 253,
        minor: 1000 + this.dmMaps.length,
        openCount: open ? 1 : 0,
      },
    ];
    this.tables.set(volumeId, { major: lv.kernelMajor, minor: lv.kernelMinor });
  }

  ports(plan: GcPlan): GcExecutorPorts {
    const entryOf = (device: string) => plan.entries.find((e) => e.device === device);
    return {
      volumes: {
        listLogicalVolumes: (scope, lvNames) => {
          const wanted = (lv: LogicalVolume) =>
            scope.vgNames.includes(lv.vgName) && (lvNames?.includes(lv.lvName) ?? true);
          return Promise.resolve({
            volumes: this.volumes.filter(wanted),
            snapshots: this.snapshots.filter(wanted),
            quarantined: [],
          });
        },
        removeLogicalVolume: (ref) => {
          // No re-check of its own here (lvm's `--select` is the lvm module's to test): the
          // executor alone must have refused whatever changed.
          const lv = [...this.volumes, ...this.snapshots].find((v) => v.lvUuid === ref.lvUuid);
          if (lv === undefined) return Promise.resolve();
          for (const problem of this.lvProblems(
            plan,
            entryOf(`${lv.vgName}/${lv.lvName}`),
            lv,
            true,
          ))
            this.violations.push(`lvremove ${lv.vgName}/${lv.lvName}: ${problem}`);
          // A thick volume that held data goes only wiped (DESIGN.md §5 "Wipe").
          const volume = this.volumes.find((v) => v.lvUuid === ref.lvUuid);
          const wipeDue = volume !== undefined && !volume.creating && plan.wipe !== 'none';
          if (wipeDue && !this.wiped.has(`${lv.vgName}/${lv.lvName}`))
            this.violations.push(`lvremove ${lv.vgName}/${lv.lvName}: not wiped`);
          this.acted.add(`${lv.vgName}/${lv.lvName}`);
          this.volumes = this.volumes.filter((v) => v.lvUuid !== ref.lvUuid);
          this.snapshots = this.snapshots.filter((v) => v.lvUuid !== ref.lvUuid);
          this.dmMaps = this.dmMaps.filter((m) => m.uuid !== `LVM-${ref.lvUuid}`);
          return Promise.resolve();
        },
        wipeLogicalVolume: (policy, target) => {
          // A wipe destroys data as lvremove does: only on an LV that passed every re-check,
          // after its data device is gone, never on a leftover or a snapshot.
          const lv = this.volumes.find((v) => v.dmPath === target.dmPath);
          if (lv === undefined) {
            this.violations.push(`wipe ${target.dmPath}: no volume LV has that path`);
            return Promise.resolve();
          }
          const name = `${lv.vgName}/${lv.lvName}`;
          for (const problem of this.lvProblems(plan, entryOf(name), lv, true))
            this.violations.push(`wipe ${name}: ${problem}`);
          if (lv.creating) this.violations.push(`wipe ${name}: a leftover that never held data`);
          if (policy !== plan.wipe)
            this.violations.push(`wipe ${name}: ${policy}, planned ${plan.wipe}`);
          if (target.sizeBytes !== lv.sizeBytes)
            this.violations.push(`wipe ${name}: ${target.sizeBytes} bytes of ${lv.sizeBytes}`);
          this.wiped.add(name);
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
          const target = this.tables.get(volumeId);
          if (planned?.action !== 'remove-map') {
            // An LV's data device: only after that LV passed every re-check (DESIGN.md §6).
            const lv = this.volumes.find(
              (v) => v.kernelMajor === target?.major && v.kernelMinor === target.minor,
            );
            const entry = plan.entries.find(
              (e) => e.action === 'remove-volume' && e.lvUuid === lv?.lvUuid,
            );
            const problems =
              lv === undefined ? ['over no listed LV'] : this.lvProblems(plan, entry, lv, false);
            for (const problem of problems)
              this.violations.push(`dmsetup remove ${name} before its LV's re-check: ${problem}`);
          }
          this.acted.add(name);
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

/**
 * One change between plan and apply: `pick` chooses among the changes that
 * can happen to the `index`-th removal entry's device (changesFor), so that
 * every change meets every kind of entry often.
 */
interface Change {
  readonly index: number;
  readonly pick: number;
  /** For a volume: its data device was also set up (closed) after the plan, before the change. */
  readonly dataDevice: boolean;
}

/**
 * Changes to the first ten removal entries (more than a plan holds: the cap
 * is ≤ 6, maps ≤ 4), each changed or not, about even: every kind of entry
 * meets its changes in many runs, and unchanged entries remain for the
 * liveness side.
 */
const changesArb: fc.Arbitrary<Change[]> = fc
  .array(
    fc.option(fc.record({ pick: fc.nat(99), dataDevice: fc.boolean() }), { nil: null, freq: 2 }),
    {
      minLength: 10,
      maxLength: 10,
    },
  )
  .map((picks) => picks.flatMap((p, index) => (p === null ? [] : [{ index, ...p }])));

type ChangeKind =
  | 'open-map'
  | 'recreate-map'
  | 'drop-lvstamp-tag'
  | 'drop-owner-tag'
  | 'owner-tag-case'
  | 'header-other-id'
  | 'header-other-owner'
  | 'header-not-stamped'
  | 'header-corrupt'
  | 'header-unsupported'
  | 'header-own'
  | 'rename'
  | 'recreate'
  | 'open'
  | 'deactivate'
  | 'open-data-device'
  | 'drop-from'
  | 'second-from'
  | 'malformed-from'
  | 'retag-source'
  | 'resource';

const LV_CHANGES: readonly ChangeKind[] = [
  'drop-lvstamp-tag',
  'drop-owner-tag',
  'owner-tag-case',
  'header-other-owner',
  'header-not-stamped',
  'header-corrupt',
  'rename',
  'recreate',
  'open',
  'deactivate',
];

/**
 * The changes that can befall an entry's device. Those aimed at the
 * entry's own evidence are listed again and again: each re-check of DESIGN.md §6
 * "The executor" meets its change in many runs of every seed.
 */
function changesFor(entry: GcPlanEntry): readonly ChangeKind[] {
  if (entry.target === 'map') return ['open-map', 'recreate-map'];
  if (entry.target === 'quarantined') return LV_CHANGES;
  if (entry.target === 'snapshot') {
    // 'resource' is the one change only the comparison with the planned source can see.
    const own: ChangeKind[] = ['retag-source', 'header-other-id', 'resource', 'resource'];
    return [...LV_CHANGES, ...own, 'resource', 'resource'];
  }
  const volume: ChangeKind[] = [
    ...LV_CHANGES,
    'header-other-id',
    'header-own',
    'header-unsupported',
    'open-data-device',
    'open-data-device',
  ];
  switch (entry.evidence) {
    case 'source-header': {
      const own: ChangeKind[] = ['drop-from', 'second-from', 'malformed-from'];
      return [...volume, ...own, ...own, ...own];
    }
    case 'owner-tag': {
      const own: ChangeKind[] = ['header-corrupt', 'header-unsupported', 'header-own'];
      return [...volume, ...own, ...own, ...own];
    }
    default:
      return volume;
  }
}

/** Applies `change` to the node; returns the device names whose state it may have changed. */
function applyChange(node: Node, plan: GcPlan, change: Change): string[] {
  const removals = plan.entries.filter((e) => e.action !== 'keep');
  const entry = removals[change.index];
  if (entry === undefined) return [];
  const kinds = changesFor(entry);
  const kind = kinds[change.pick % kinds.length];
  if (entry.target === 'map') {
    node.dmMaps = node.dmMaps.map((m) =>
      m.name !== entry.device
        ? m
        : kind === 'open-map'
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
  const retag = (keep: (tag: string) => boolean, ...added: string[]) => {
    changed({ ...lv, tags: [...lv.tags.filter(keep), ...added] });
  };
  const touched = [entry.device, ...(isVolume ? [dmNameFor(entry.volumeId)] : [])];
  // A data device that appeared after the plan: removed with its LV, only once the LV passed.
  if (isVolume && change.dataDevice) node.dataDeviceOver(lv, entry.volumeId, false);
  const path = lv.dmPath;
  const other = (id: string) => IDS.find((i) => i !== id) ?? '';
  const ownerTag = `lvstamp.owner=${plan.ownerId}`;
  const header = path === null ? undefined : node.headers.get(path);
  const fields =
    header?.status === 'ok'
      ? header.header
      : {
          volumeId: IDS[0] ?? '',
          ownerId: plan.ownerId,
          createdAtMs: 0,
          dataOffsetBytes: 1048576,
          requestedBytes: 1 << 30,
          name: 'pvc-x',
        };
  const setHeader = (next: DecodeResult) => {
    if (path !== null) node.headers.set(path, next);
  };
  const okHeader = (volumeId: string, ownerId: string): DecodeResult => ({
    status: 'ok',
    version: 2,
    header: { ...fields, volumeId, ownerId },
  });
  switch (kind) {
    case 'drop-lvstamp-tag':
      retag((t) => t !== 'lvstamp');
      break;
    case 'drop-owner-tag':
      retag((t) => t !== ownerTag);
      break;
    case 'owner-tag-case': {
      const variant = CASE_VARIANTS[OWNERS.indexOf(plan.ownerId as (typeof OWNERS)[number])];
      retag((t) => t !== ownerTag, `lvstamp.owner=${variant ?? plan.ownerId.toUpperCase()}`);
      break;
    }
    case 'drop-from':
      retag((t) => !t.startsWith('lvstamp.from='));
      break;
    case 'second-from': {
      const from = lv.tags.find((t) => t.startsWith('lvstamp.from=')) ?? '';
      const second = [
        `lvstamp.from=snapshot.${IDS[3] ?? ''}`,
        `lvstamp.from=volume.${IDS[4] ?? ''}`,
      ];
      retag(() => true, second[0] === from ? (second[1] ?? '') : (second[0] ?? ''));
      break;
    }
    case 'malformed-from':
      retag((t) => !t.startsWith('lvstamp.from='), `lvstamp.from=snapshot.${'A'.repeat(32)}`);
      break;
    case 'retag-source':
    case 'resource': {
      // Another source ID; 'resource' also makes sector 0 that source's header, of this owner.
      const source = other(entry.target === 'snapshot' ? (entry.sourceVolumeId ?? '') : '');
      retag((t) => !t.startsWith('lvstamp.source='), `lvstamp.source=${source}`);
      if (kind === 'resource') setHeader(okHeader(source, plan.ownerId));
      break;
    }
    case 'header-other-id':
      setHeader(okHeader(other(fields.volumeId), fields.ownerId));
      break;
    case 'header-other-owner':
      setHeader(okHeader(fields.volumeId, OWNERS.find((o) => o !== plan.ownerId) ?? ''));
      break;
    case 'header-own':
      setHeader(okHeader(isVolume ? entry.volumeId : fields.volumeId, plan.ownerId));
      break;
    case 'header-not-stamped':
      setHeader({ status: 'not-stamped', reason: 'zeros' });
      break;
    case 'header-corrupt':
      setHeader({ status: 'corrupt', reason: 'checksum mismatch' });
      break;
    case 'header-unsupported':
      setHeader({ status: 'unsupported', reason: 'version 7 > 2', version: 7 });
      break;
    case 'rename':
      changed({ ...lv, lvName: `${lv.lvName}x` });
      break;
    case 'recreate':
      changed({ ...lv, lvUuid: `${lv.lvUuid}-new` });
      break;
    case 'open': {
      const name = lvDmName(lv.vgName, lv.lvName);
      node.dmMaps = node.dmMaps.map((m) =>
        m.name === name ? { ...m, openCount: m.openCount + 1 } : m,
      );
      break;
    }
    case 'open-data-device':
      if (isVolume) node.dataDeviceOver(lv, entry.volumeId, true);
      break;
    case 'deactivate':
      changed({ ...lv, active: false, kernelMajor: null, kernelMinor: null, dmPath: null });
      break;
    default:
      break;
  }
  return touched;
}

describe(`applyGcPlan re-checks (seed ${String(PROPERTY_SEED)}, ${String(PROPERTY_RUNS)} plans; replay with LVSTAMP_PROPERTY_SEED)`, () => {
  it(
    'acts only on devices still as planned, and on every planned device nothing changed',
    async () => {
      console.log(propertySeedLine('applyGcPlan'));
      await fc.assert(
        fc.asyncProperty(gcInputArb, changesArb, async (input, changes) => {
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
        }),
        { numRuns: PROPERTY_RUNS, seed: PROPERTY_SEED },
      );
    },
    PROPERTY_TIMEOUT_MS,
  );
});
