import type { DeviceNumber, DmMap } from '../device/types.js';
import type { LogicalVolume } from '../lvm/types.js';
import type { VgScope, Volume } from '../volumes/types.js';
import { DEFAULT_NAMING, parseDmUuid, parseSnapshotLvName, type Naming } from '../naming.js';
import type { GcHeaderPort, GcInventoryPorts, GcLinearTarget } from './ports.js';
import { readHeaderSafely } from '../volumes/header-reading.js';
import { compareText, kernelNumber, lvDevice, numberKey } from './util.js';
import type {
  Inventory,
  InventoryMap,
  InventoryQuarantined,
  InventorySnapshot,
  InventoryVolume,
} from './types.js';
import { parseQuarantinedLvName } from '../naming.js';

/**
 * Takes the GC inventory of this node in the scope's volume groups (DESIGN.md
 * §6 "Inventory"): one look-up of the lvstamp LVs (volumes, snapshots and
 * quarantined LVs, the last kept only with a quarantine port), one `dmsetup
 * info`, one `dmsetup table`, then an in-process header read per active LV
 * (snapshots and quarantined LVs included); devices matched by major:minor.
 * The groups lvm refuses to change come from the same look-up.
 * An unreadable header is `{ status: 'unreadable', reason }`, never thrown.
 * @param clock the current Unix time in milliseconds (for `takenAtMs`).
 * @throws any other port failure unchanged: an inventory is complete or an error.
 */
export async function takeInventory(
  ports: GcInventoryPorts,
  scope: VgScope,
  naming: Naming = DEFAULT_NAMING,
  clock: () => number = Date.now,
): Promise<Inventory> {
  const takenAtMs = clock();
  const listed = await ports.volumes.listLogicalVolumes(scope);
  const { volumes: lvs, snapshots: snapshotLvs } = listed;
  const unusableGroups = [...(listed.unusableGroups ?? [])];
  const dmMaps = await ports.devices.listAll();

  const lvByNumber = new Map<string, Volume>();
  for (const lv of lvs) {
    const number = kernelNumber(lv);
    if (number) lvByNumber.set(numberKey(number), lv);
  }

  const ours = dmMaps.filter((dm) => dm.uuid.startsWith(naming.dmUuidPrefix));
  const ids = ours.flatMap((dm) => parseDmUuid(dm.uuid, naming) ?? []);
  const tables = await ports.devices.tables(ids);
  const dmByNumber = new Map<string, DmMap>();
  for (const dm of dmMaps) dmByNumber.set(numberKey(dm), dm);
  const maps = ours.map((dm) => describeMap(dm, naming, tables, lvByNumber, dmByNumber));

  const volumes = await Promise.all(
    lvs.map(async (lv) => describeVolume(lv, ports.headers, dmByNumber, maps)),
  );

  const snapshots = await Promise.all(
    snapshotLvs.flatMap((lv) => {
      const snapshotId = parseSnapshotLvName(lv.lvName, naming);
      return snapshotId === null
        ? []
        : [describeSnapshot(lv, snapshotId, ports.headers, dmByNumber)];
    }),
  );

  let quarantined: InventoryQuarantined[] | undefined;
  if (ports.quarantine !== undefined) {
    quarantined = await Promise.all(
      listed.quarantined.flatMap((lv) => {
        const parsed = parseQuarantinedLvName(lv.lvName, naming);
        return parsed === null ? [] : [describeQuarantined(lv, parsed, ports.headers, dmByNumber)];
      }),
    );
  }

  return {
    takenAtMs,
    naming,
    volumes: volumes.sort((a, b) => compareText(a.device, b.device)),
    maps: maps.sort((a, b) => compareText(a.name, b.name)),
    snapshots: snapshots.sort((a, b) => compareText(a.device, b.device)),
    ...(quarantined === undefined
      ? {}
      : { quarantined: quarantined.sort((a, b) => compareText(a.device, b.device)) }),
    ...(unusableGroups.length === 0
      ? {}
      : { unusableGroups: unusableGroups.sort((a, b) => compareText(a.vgName, b.vgName)) }),
  };
}

async function describeQuarantined(
  lv: LogicalVolume,
  parsed: { readonly kind: 'volume' | 'snapshot'; readonly id: string },
  headers: GcHeaderPort,
  dmByNumber: ReadonlyMap<string, DmMap>,
): Promise<InventoryQuarantined> {
  const kernel = kernelNumber(lv);
  return {
    kind: parsed.kind,
    id: parsed.id,
    vgName: lv.vgName,
    lvName: lv.lvName,
    lvUuid: lv.lvUuid,
    device: lvDevice(lv),
    sizeBytes: lv.sizeBytes,
    tags: lv.tags,
    kernel,
    header: await readHeaderSafely(lv, headers),
    openCount: effectiveOpenCount(kernel, dmByNumber, 0),
  };
}

async function describeSnapshot(
  lv: LogicalVolume,
  snapshotId: string,
  headers: GcHeaderPort,
  dmByNumber: ReadonlyMap<string, DmMap>,
): Promise<InventorySnapshot> {
  const kernel = kernelNumber(lv);
  return {
    snapshotId,
    vgName: lv.vgName,
    lvName: lv.lvName,
    lvUuid: lv.lvUuid,
    device: lvDevice(lv),
    sizeBytes: lv.sizeBytes,
    lvCreatedAtMs: lv.createdAtMs,
    tags: lv.tags,
    kernel,
    header: await readHeaderSafely(lv, headers),
    openCount: effectiveOpenCount(kernel, dmByNumber, 0),
  };
}

/** One lvstamp map; `tables` holds the answer of `devices.tables` for its volume ID. */
function describeMap(
  dm: DmMap,
  naming: Naming,
  tables: ReadonlyMap<string, GcLinearTarget | null>,
  lvByNumber: ReadonlyMap<string, Volume>,
  dmByNumber: ReadonlyMap<string, DmMap>,
): InventoryMap {
  const volumeId = parseDmUuid(dm.uuid, naming);
  const table = volumeId === null ? null : (tables.get(volumeId) ?? null);
  const target = table === null ? null : { major: table.major, minor: table.minor };
  const lv = target === null ? undefined : lvByNumber.get(numberKey(target));
  return {
    targetElsewhere: target !== null && lv === undefined && dmByNumber.has(numberKey(target)),
    name: dm.name,
    uuid: dm.uuid,
    volumeId,
    kernel: { major: dm.major, minor: dm.minor },
    openCount: dm.openCount,
    target,
    lv: lv === undefined ? null : lvDevice(lv),
  };
}

async function describeVolume(
  lv: Volume,
  headers: GcHeaderPort,
  dmByNumber: ReadonlyMap<string, DmMap>,
  maps: readonly InventoryMap[],
): Promise<InventoryVolume> {
  const kernel = kernelNumber(lv);
  const device = lvDevice(lv);
  const dataMaps = maps.filter((m) => m.lv === device).map((m) => m.name);
  return {
    volumeId: lv.volumeId,
    creating: lv.creating,
    vgName: lv.vgName,
    lvName: lv.lvName,
    lvUuid: lv.lvUuid,
    device,
    sizeBytes: lv.sizeBytes,
    lvCreatedAtMs: lv.createdAtMs,
    tags: lv.tags,
    kernel,
    header: await readHeaderSafely(lv, headers),
    openCount: effectiveOpenCount(kernel, dmByNumber, dataMaps.length),
    dataMaps,
  };
}

/**
 * Holders of an LV device besides lvstamp data devices (see
 * InventoryVolume.openCount): 0 when inactive, null when unknown.
 */
export function effectiveOpenCount(
  kernel: DeviceNumber | null,
  dmByNumber: ReadonlyMap<string, DmMap>,
  dataMapCount: number,
): number | null {
  if (kernel === null) return 0;
  const dm = dmByNumber.get(numberKey(kernel));
  if (dm === undefined) return null;
  const count = dm.openCount - dataMapCount;
  return count < 0 ? null : count;
}
