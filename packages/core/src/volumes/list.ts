/**
 * The read-only side of the volume module: listing LVs and volumes, a
 * volume's status, and turning what a person typed into a volume ID.
 * Nothing here activates or changes an LV.
 */
import type { DataDeviceMap } from '../device/types.js';
import type { MountInfoEntry } from '../fs/types.js';
import type { LogicalVolume, UnusableGroup } from '../lvm/types.js';
import { commonLvPrefix, parseQuarantinedLvName, parseSnapshotLvName } from '../naming.js';
import { readHeaderSafely } from './header-reading.js';
import { getVolume, toVolume, unusableGroupsIn, withCapacity } from './lookup.js';
import type { CoreParts, VolumeParts } from './parts.js';
import type { VgScope, Volume, VolumeStatus } from './types.js';

/**
 * The lvstamp LVs of the scope's groups (DESIGN.md §2.3) from one look-up
 * (LogicalVolumes.inGroups), no header read: `volumes` (`lvstamp_<id>` and
 * `lvstamp_new_<id>`, capacity null), `snapshots` (`lvstamp_snap_<id>`) and
 * `quarantined` (`lvstamp_q_<id>`, `lvstamp_qs_<id>`), active or not,
 * whatever their tags: the GC judges them, DESIGN.md §6. Other names with
 * the prefix are left out. With `lvNames`, only those.
 * `unusableGroups`: the groups of the report lvm refuses to change
 * (VolumeGroups.unusableIn, from the same report: no further lvm process).
 * @throws InvalidArgumentError for a bad group or LV name; as
 *   LogicalVolumes.inGroups.
 */
export async function listLogicalVolumes(
  p: CoreParts,
  scope: VgScope,
  lvNames?: readonly string[],
): Promise<{
  volumes: Volume[];
  snapshots: LogicalVolume[];
  quarantined: LogicalVolume[];
  unusableGroups: UnusableGroup[];
}> {
  if (lvNames !== undefined && lvNames.length === 0) {
    return { volumes: [], snapshots: [], quarantined: [], unusableGroups: [] };
  }
  const report = await p.lvm.logicalVolumes.inGroups(
    scope.vgNames,
    lvNames === undefined ? { prefix: commonLvPrefix(p.naming) } : { names: lvNames },
  );
  const { lvs } = report;
  const volumes: Volume[] = [];
  const snapshots: LogicalVolume[] = [];
  const quarantined: LogicalVolume[] = [];
  for (const lv of lvs) {
    const volume = toVolume(lv, p.naming);
    if (volume !== null) volumes.push(volume);
    else if (parseSnapshotLvName(lv.lvName, p.naming) !== null) snapshots.push(lv);
    else if (parseQuarantinedLvName(lv.lvName, p.naming) !== null) quarantined.push(lv);
  }
  return {
    volumes,
    snapshots,
    quarantined,
    unusableGroups: await unusableGroupsIn(p, report),
  };
}

/**
 * The volumes with their capacities from their headers (withCapacity: one
 * in-process sector-0 read per active finished volume; DESIGN.md §4
 * "Capacity"), in the same order. Never throws.
 */
export async function withCapacities(p: CoreParts, volumes: readonly Volume[]): Promise<Volume[]> {
  return Promise.all(volumes.map((v) => withCapacity(p, v)));
}

/**
 * Every lvstamp volume in the scope with its header, data device and mount
 * points: one `lvm fullreport`, one `dmsetup info`, one mountinfo read, one
 * sector-0 read per active volume.
 * @throws as listLogicalVolumes; CommandFailedError of dmsetup.
 */
export async function listStatuses(p: VolumeParts, scope: VgScope): Promise<VolumeStatus[]> {
  const { volumes } = await listLogicalVolumes(p, scope);
  const withCaps = await withCapacities(p, volumes);
  const [maps, mounts] = await Promise.all([p.dataDevices.list(), p.filesystems.mounts()]);
  return Promise.all(withCaps.map((v) => statusOf(p, v, maps, mounts)));
}

/**
 * One volume's status.
 * @throws NotFoundError when no finished volume in the scope has this ID; as listStatuses.
 */
export async function volumeStatus(
  p: VolumeParts,
  volumeId: string,
  scope: VgScope,
): Promise<VolumeStatus> {
  return statusAfterChange(p, await getVolume(p, volumeId, scope));
}

/** The status of a volume just read or changed: one `dmsetup info`, one mountinfo read. */
export async function statusAfterChange(p: VolumeParts, volume: Volume): Promise<VolumeStatus> {
  const [maps, mounts] = await Promise.all([p.dataDevices.list(), p.filesystems.mounts()]);
  return statusOf(p, volume, maps, mounts);
}

async function statusOf(
  p: VolumeParts,
  volume: Volume,
  maps: readonly DataDeviceMap[],
  mounts: readonly MountInfoEntry[],
): Promise<VolumeStatus> {
  const header = await readHeaderSafely(volume, p.headers);
  const map = maps.find((m) => m.volumeId === volume.volumeId);
  const ownHeader = header.status === 'ok' && header.header.volumeId === volume.volumeId;
  return {
    volume,
    header,
    name: ownHeader ? header.header.name : null,
    dataDevice:
      map === undefined
        ? null
        : {
            path: p.dataDevices.pathFor(volume.volumeId),
            major: map.major,
            minor: map.minor,
            openCount: map.openCount,
          },
    mountPoints:
      map === undefined
        ? []
        : mounts
            .filter((m) => m.major === map.major && m.minor === map.minor)
            .map((m) => m.mountPoint),
  };
}
