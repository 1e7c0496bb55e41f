/**
 * The look-ups every volume operation shares: both LVs a volume ID can have
 * in the scope (one `lvm fullreport`), the one-copy rule, activation after
 * the tag check, a volume's capacity from its header, and the argument
 * checks. Nothing here removes or changes data.
 */
import type { DataDeviceRef } from '../device/types.js';
import { deviceUsersText } from '../os/holders.js';
import {
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  VolumeGroupUnusableError,
} from '../errors.js';
import type { FilesystemManager } from '../fs/filesystem.js';
import type { MountInfoEntry } from '../fs/types.js';
import type { DataDeviceManager } from '../device/data-device.js';
import type { HeaderFields } from '../header/types.js';
import type { LogicalVolume, PvDevice, UnusableGroup, VolumeGroup } from '../lvm/types.js';
import { blockDeviceReadOnly } from '../device/sysfs.js';
import { validateVgName, type GroupsReport } from '../lvm/volume-groups.js';
import { isHexId, lvNameFor, newLvNameFor, parseLvName, type Naming } from '../naming.js';
import { readHeaderSafely } from './header-reading.js';
import {
  isActive,
  ownedHeaderOf,
  requireCapacity,
  requireOwnerHeader,
  requireOwnerTags,
} from './ownership.js';
import type { CoreParts } from './parts.js';
import type { VgScope, Volume } from './types.js';

/** What a look-up of one volume ID found: `lvstamp_<id>`, `lvstamp_new_<id>`, and the groups' report. */
export interface VolumeLookup {
  readonly finished: Volume[];
  readonly pending: Volume[];
  readonly groups: GroupsReport;
}

/**
 * Both LVs a volume ID can have in `vgNames` and those groups' state, from
 * one `lvm fullreport` (LogicalVolumes.inGroups).
 * @throws as LogicalVolumes.inGroups.
 */
export async function lookupVolume(
  p: CoreParts,
  volumeId: string,
  vgNames: readonly string[],
): Promise<VolumeLookup> {
  const finalName = lvNameFor(volumeId, p.naming);
  const newName = newLvNameFor(volumeId, p.naming);
  const groups = await p.lvm.logicalVolumes.inGroups(vgNames, { names: [finalName, newName] });
  const volumes = groups.lvs.map((lv) => volumeOrThrow(lv, p.naming));
  return {
    finished: volumes.filter((v) => v.lvName === finalName),
    pending: volumes.filter((v) => v.lvName === newName),
    groups,
  };
}

/**
 * The one LV of a name, or null: one volume or snapshot is one LV, so copies
 * in several groups are refused, never guessed between.
 * @throws FailedPreconditionError naming `what` and the groups.
 */
export function single<T extends LogicalVolume>(lvs: readonly T[], what?: string): T | null {
  if (lvs.length > 1) {
    const name = what ?? lvs[0]?.lvName ?? '';
    throw new FailedPreconditionError(
      `${name} exists in several volume groups: ${lvs.map((lv) => lv.vgName).join(', ')}`,
    );
  }
  return lvs[0] ?? null;
}

/**
 * The finished volume `lvstamp_<volumeId>` in the scope with its capacity
 * (withCapacity), or null.
 * @throws InvalidArgumentError for a malformed ID; FailedPreconditionError
 *   when several groups hold it; as lookupVolume.
 */
export async function findVolume(
  p: CoreParts,
  volumeId: string,
  scope: VgScope,
): Promise<Volume | null> {
  validateVolumeId(volumeId);
  const { finished } = await lookupVolume(p, volumeId, scope.vgNames);
  const volume = single(finished, `volume ${volumeId}`);
  return volume === null ? null : withCapacity(p, volume);
}

/**
 * As findVolume, but a missing volume is an error.
 * @throws NotFoundError when no group of the scope holds `lvstamp_<volumeId>`.
 */
export async function getVolume(p: CoreParts, volumeId: string, scope: VgScope): Promise<Volume> {
  const volume = await findVolume(p, volumeId, scope);
  if (volume === null) throw new NotFoundError(`volume ${volumeId} does not exist`);
  return volume;
}

/**
 * Each group holding one of `lvs`, checked usable in the look-up's report
 * (VolumeGroups.usable) and with no read-only PV (requireWritablePvs),
 * before anything in it is activated, wiped or changed.
 * @throws VolumeGroupUnusableError (naming lvm's warning, e.g. the devices
 *   of a duplicate PV, or the read-only PV), FailedPreconditionError,
 *   NotFoundError.
 */
export async function requireUsableGroups(
  p: CoreParts,
  lvs: readonly LogicalVolume[],
  groups: GroupsReport,
): Promise<void> {
  for (const vgName of new Set(lvs.map((lv) => lv.vgName))) await usableGroup(p, vgName, groups);
}

/**
 * The group `vgName` of a look-up's report, once lvm's report shows it
 * usable (VolumeGroups.usable) and none of its PVs is read-only
 * (requireWritablePvs): the check of a group before anything in it is
 * activated, wiped or changed (DESIGN.md §5).
 * @throws as requireUsableGroups.
 */
export async function usableGroup(
  p: CoreParts,
  vgName: string,
  groups: GroupsReport,
): Promise<VolumeGroup> {
  const vg = await p.lvm.volumeGroups.usable(vgName, groups);
  await requireWritablePvs(p, vg, groups);
  return vg;
}

/**
 * Refuses a group with a PV the kernel holds read-only (sysfs `ro`, read for
 * each PV the look-up's report lists with a device): lvm reports nothing of
 * it, and its metadata write fails only after an `lvremove` has
 * deactivated the LV, or after a delete has wiped it (docs/FACTS.md "Broken
 * groups"; DESIGN.md §5 "Delete").
 * @throws VolumeGroupUnusableError `read-only` naming the PVs;
 *   FailedPreconditionError when sysfs cannot be read.
 */
export async function requireWritablePvs(
  p: CoreParts,
  vg: VolumeGroup,
  report: GroupsReport,
): Promise<void> {
  const readOnly = await readOnlyPvs(p, vg, report);
  if (readOnly.length > 0) {
    throw new VolumeGroupUnusableError(vg.name, 'read-only', readOnlyText(readOnly));
  }
}

/**
 * The groups of a look-up's report that lvm refuses to change
 * (VolumeGroups.unusableIn), and those with a read-only PV
 * (requireWritablePvs), by name.
 * @throws as VolumeGroups.unusableIn; FailedPreconditionError when sysfs
 *   cannot be read.
 */
export async function unusableGroupsIn(
  p: CoreParts,
  report: GroupsReport,
): Promise<UnusableGroup[]> {
  const unusable = await p.lvm.volumeGroups.unusableIn(report);
  for (const vg of report.groups) {
    if (unusable.some((u) => u.vgName === vg.name)) continue;
    const readOnly = await readOnlyPvs(p, vg, report);
    if (readOnly.length > 0) {
      unusable.push({ vgName: vg.name, problem: 'read-only', detail: readOnlyText(readOnly) });
    }
  }
  return unusable;
}

/** The PVs of `vg` whose device sysfs marks read-only; a missing PV (`[unknown]`, 0:0) has none. */
async function readOnlyPvs(
  p: CoreParts,
  vg: VolumeGroup,
  report: GroupsReport,
): Promise<PvDevice[]> {
  const pvs = report.pvs.get(vg.uuid) ?? [];
  const flags = await Promise.all(
    pvs.map((pv) =>
      pv.major === null || pv.minor === null || pv.major === 0
        ? Promise.resolve(false)
        : blockDeviceReadOnly(p.hostRoot, { major: pv.major, minor: pv.minor }),
    ),
  );
  return pvs.filter((_, i) => flags[i]);
}

function readOnlyText(pvs: readonly PvDevice[]): string {
  const named = pvs.map((pv) => `${pv.name} (${pv.major}:${pv.minor})`).join(', ');
  return `the kernel holds ${pvs.length === 1 ? 'PV' : 'PVs'} ${named} read-only (sysfs ro), so lvm cannot write the group's metadata`;
}

/**
 * The volume LV, active: an inactive one is activated (`lvchange --activate
 * y`, this LV only) once its tags prove it `ownerId`'s (or when `force`),
 * then read back. The caller holds the host lock.
 * @throws NotOwnedError; CommandFailedError.
 */
export async function activateOwned(
  p: CoreParts,
  volume: LogicalVolume,
  ownerId: string,
  force = false,
): Promise<Volume> {
  if (isActive(volume)) return volumeOrThrow(volume, p.naming);
  if (!force) requireOwnerTags(volume, ownerId, p.naming, 'activate');
  const lvs = p.lvm.logicalVolumes;
  await lvs.activate(volume.vgName, volume.lvName);
  return volumeOrThrow(await lvs.get(volume.vgName, volume.lvName), p.naming);
}

/** The volume of an LV name, its capacity not read yet (null); null for other names. */
export function toVolume(lv: LogicalVolume, naming: Naming): Volume | null {
  if (isVolume(lv)) return lv;
  const parsed = parseLvName(lv.lvName, naming);
  if (parsed === null) return null;
  return { ...lv, volumeId: parsed.volumeId, creating: parsed.creating, capacityBytes: null };
}

function isVolume(lv: LogicalVolume): lv is Volume {
  return 'volumeId' in lv && 'creating' in lv;
}

/**
 * toVolume of a name lvm was asked for.
 * @throws FailedPreconditionError when it is not a volume name.
 */
export function volumeOrThrow(lv: LogicalVolume, naming: Naming): Volume {
  const volume = toVolume(lv, naming);
  if (volume === null)
    throw new FailedPreconditionError(`${lv.vgName}/${lv.lvName} is not an lvstamp volume name`);
  return volume;
}

/**
 * The volume with its capacity from its header (capacityOf); capacity null
 * when the LV is inactive, still being created, or its header is
 * unreadable, not `ok`, of another volume or does not fit. Never throws.
 */
export async function withCapacity(p: CoreParts, volume: Volume): Promise<Volume> {
  if (volume.creating) return volume;
  const reading = await readHeaderSafely(volume, p.headers);
  if (reading.status !== 'ok' || reading.header.volumeId !== volume.volumeId) return volume;
  return { ...volume, capacityBytes: ownedHeaderOf(reading, volume.sizeBytes).capacityBytes };
}

/**
 * The header of a finished volume with its ownership proved (DESIGN.md
 * §2.3) and the capacity it gives; the tags are the caller's to check.
 * @throws FailedPreconditionError while still being created or when the
 *   header does not fit the LV; NotOwnedError as requireOwnerHeader.
 */
export async function ownedCapacity(
  p: CoreParts,
  volume: Volume,
  ownerId: string,
  act: string,
): Promise<{ header: HeaderFields; capacityBytes: number; version: 1 | 2 }> {
  if (volume.creating) {
    throw new FailedPreconditionError(`${volume.vgName}/${volume.lvName} is still being created`);
  }
  const expected = { volumeId: volume.volumeId, ownerId };
  const owned = await requireOwnerHeader(volume, expected, p.headers, act);
  return {
    header: owned.header,
    capacityBytes: requireCapacity(owned, volume),
    version: owned.version,
  };
}

/**
 * Refuses an open LV: lvm reports its device open (`lv_attr` char 6 `o`,
 * lvs(8): a holder, a mount or a process has it open). The one check of an
 * open LV for delete, the GC's remover and restore.
 * @throws FailedPreconditionError, one line: `<vg>/<lv> is open (<its
 *   holders and mounts>); <then>`.
 */
export async function refuseOpenLv(
  lv: LogicalVolume,
  hostRoot: string | undefined,
  then: string,
): Promise<void> {
  if (lv.open) throw new FailedPreconditionError(`${await openText(lv, hostRoot)}; ${then}`);
}

/** `<vg>/<lv> is open (<its holders and mounts>)`, for the refusals of an open LV. */
export async function openText(lv: LogicalVolume, hostRoot: string | undefined): Promise<string> {
  const users =
    lv.kernelMajor === null || lv.kernelMinor === null
      ? 'no device number reported'
      : await deviceUsersText({ major: lv.kernelMajor, minor: lv.kernelMinor }, { hostRoot });
  return `${lv.vgName}/${lv.lvName} is open (${users})`;
}

/** The mounts of a data device (by major:minor, from mountinfo). */
export async function mountsOf(
  filesystems: Pick<FilesystemManager, 'mounts'>,
  map: Pick<DataDeviceRef, 'major' | 'minor'>,
): Promise<MountInfoEntry[]> {
  return (await filesystems.mounts()).filter((m) => m.major === map.major && m.minor === map.minor);
}

/** A mount point of the volume's data device, or null when it has none (not attached or not mounted). */
export async function mountPointOf(
  p: {
    readonly dataDevices: Pick<DataDeviceManager, 'find'>;
    readonly filesystems: Pick<FilesystemManager, 'mounts'>;
  },
  volumeId: string,
): Promise<string | null> {
  const map = await p.dataDevices.find(volumeId);
  if (map === null) return null;
  return (await mountsOf(p.filesystems, map))[0]?.mountPoint ?? null;
}

/**
 * Refuses a mounted data device.
 * @throws FailedPreconditionError naming the mount points.
 */
export async function refuseIfMounted(
  filesystems: Pick<FilesystemManager, 'mounts'>,
  map: DataDeviceRef,
): Promise<void> {
  const mounts = await mountsOf(filesystems, map);
  if (mounts.length > 0) {
    throw new FailedPreconditionError(
      `${map.name} is mounted on ${mounts.map((m) => m.mountPoint).join(', ')}; unmount it first`,
    );
  }
}

/** @throws InvalidArgumentError unless 32 lowercase hex digits. */
export function validateVolumeId(volumeId: string): void {
  if (!isHexId(volumeId))
    throw new InvalidArgumentError(`volume ID must be 32 lowercase hex digits, got "${volumeId}"`);
}

/** @throws InvalidArgumentError for a name lvm would refuse (validateVgName). */
export function validateVgNames(vgNames: readonly string[]): void {
  for (const name of vgNames) validateVgName(name);
}

/** @throws InvalidArgumentError unless a positive safe integer. */
export function validateBytes(field: string, bytes: number): void {
  if (!Number.isSafeInteger(bytes) || bytes <= 0) {
    throw new InvalidArgumentError(
      `${field} must be a positive whole number of bytes, got ${bytes}`,
    );
  }
}
