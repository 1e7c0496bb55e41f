/**
 * Expand (DESIGN.md §4 "Capacity", §5 "Expand"): online and crash-safe,
 * every step skipped when done, after both ownership signals under the
 * host lock (DESIGN.md §2.3). Volumes never shrink.
 */
import {
  FailedPreconditionError,
  NotFoundError,
  OutOfRangeError,
  OutOfSpaceError,
} from '../errors.js';
import { FS_TYPES, type FsType } from '../fs/types.js';
import { isThinLv } from '../lvm/thin-snapshots.js';
import { parseOwnerId } from '../naming.js';
import type { ThinProvisioning } from '../provisioning.js';
import { statusAfterChange } from './list.js';
import {
  activateOwned,
  lookupVolume,
  mountsOf,
  ownedCapacity,
  single,
  usableGroup,
  validateBytes,
  validateVolumeId,
} from './lookup.js';
import { requireCapacity, requireOwnerHeader, requireOwnerTags } from './ownership.js';
import type { CoreParts, VolumeParts } from './parts.js';
import { CAPACITY_BLOCK_BYTES, volumeSize } from './size.js';
import { measureThinPool, requireThinAdmits, thinPoolCapacity } from './thin-capacity.js';
import type { ThinClassPool, Volume, VolumeScope, VolumeStatus } from './types.js';

/** Options of expand. */
export interface ExpandOptions {
  readonly limitBytes?: number;
  /** The thin classes' pools: a thin volume grows only within its pool's budget. */
  readonly thinPools?: readonly ThinClassPool[];
}

/**
 * Grows a volume to the capacity volumeSize gives `requiredBytes`: under
 * the host lock, the tags, then its header (an inactive LV activated for
 * that); a v1 header rewritten as v2 with today's capacity; `lvextend` when
 * the LV is smaller than the new size; the header rewritten with the new
 * capacity. Then the data device's table reloaded and a filesystem mounted
 * from it grown. A volume already large enough is unchanged.
 * @returns the new status and the mount point whose filesystem was grown.
 * @throws InvalidArgumentError for a malformed ID or size; OutOfRangeError
 *   when no capacity fits the range, or the capacity is above `limitBytes`.
 * @throws NotFoundError, NotOwnedError, VolumeGroupUnusableError,
 *   FailedPreconditionError (header does not fit; a mount of another
 *   filesystem), OutOfSpaceError, CommandFailedError, LockTimeoutError.
 */
export async function expand(
  p: VolumeParts,
  volumeId: string,
  requiredBytes: number,
  scope: VolumeScope,
  options: ExpandOptions = {},
): Promise<{ status: VolumeStatus; filesystemGrown: string | null }> {
  validateVolumeId(volumeId);
  const ownerId = parseOwnerId(scope.ownerId);
  validateBytes('requiredBytes', requiredBytes);
  const { limitBytes } = options;
  if (limitBytes !== undefined) validateBytes('limitBytes', limitBytes);
  // The range alone (any extent size): refused before any lvm command.
  volumeSize({ requiredBytes, limitBytes, extentSizeBytes: CAPACITY_BLOCK_BYTES });
  const grown = await p.hostLock.withLock(`expand ${volumeId}`, () =>
    expandLv(p, volumeId, { requiredBytes, limitBytes }, scope, options.thinPools ?? []),
  );
  const map = await p.dataDevices.find(volumeId);
  let filesystemGrown: string | null = null;
  if (map !== null) {
    const { header, capacityBytes } = await ownedCapacity(p, grown, ownerId, 'resize');
    await p.dataDevices.reload(volumeId, grown, header.dataOffsetBytes, capacityBytes);
    const [mount] = await mountsOf(p.filesystems, map);
    if (mount !== undefined) {
      if (!isFsType(mount.fsType)) {
        throw new FailedPreconditionError(
          `the data device is mounted on ${mount.mountPoint} with ${mount.fsType}; lvstamp grows only ${FS_TYPES.join(' and ')}`,
        );
      }
      await p.filesystems.grow(mount.mountPoint, mount.fsType);
      filesystemGrown = mount.mountPoint;
    }
  }
  return { status: await statusAfterChange(p, grown), filesystemGrown };
}

/** The LV and header steps of expand; the caller holds the host lock. */
async function expandLv(
  p: CoreParts,
  volumeId: string,
  range: { readonly requiredBytes: number; readonly limitBytes: number | undefined },
  scope: VolumeScope,
  thinPools: readonly ThinClassPool[],
): Promise<Volume> {
  const ownerId = parseOwnerId(scope.ownerId);
  const { finished, groups } = await lookupVolume(p, volumeId, scope.vgNames);
  const found = single(finished, `volume ${volumeId}`);
  if (found === null) throw new NotFoundError(`volume ${volumeId} does not exist`);
  // The group's state before any act (activation included), as create checks it.
  const vg = await usableGroup(p, found.vgName, groups);
  // The tags first, active or not (DESIGN.md §2.3): an active LV is never grown on its header alone.
  requireOwnerTags(found, ownerId, p.naming, 'resize');
  const volume = await activateOwned(p, found, ownerId);
  const owned = await requireOwnerHeader(volume, { volumeId, ownerId }, p.headers, 'resize');
  const dmPath = volume.dmPath ?? '';
  const current = requireCapacity(owned, volume);
  const { requiredBytes, limitBytes } = range;
  if (limitBytes !== undefined && current > limitBytes) {
    throw new OutOfRangeError(
      `volume ${volumeId} has ${current} bytes, above limitBytes ${limitBytes}; volumes never shrink`,
    );
  }
  if (current >= requiredBytes) return { ...volume, capacityBytes: current };
  const { capacityBytes, lvSizeBytes } = volumeSize({
    requiredBytes,
    limitBytes,
    extentSizeBytes: vg.extentSizeBytes,
  });
  const header = owned.header;
  let grown: Volume = volume;
  if (volume.sizeBytes < lvSizeBytes) {
    const growBytes = lvSizeBytes - volume.sizeBytes;
    const thin = isThinLv(volume)
      ? await thinClassOf(p, volume, thinPools, growBytes, lvSizeBytes)
      : null;
    if (thin === null && growBytes > vg.freeBytes) {
      throw new OutOfSpaceError(
        `volume group ${vg.name} has ${vg.freeBytes} bytes free, growing volume ${volumeId} needs ${growBytes}`,
      );
    }
    // v1 means "the whole LV": pin today's capacity first, so the grown LV does not grow it.
    if (owned.version === 1) {
      await p.headers.writeHeader(dmPath, { ...header, requestedBytes: current });
    }
    if (thin !== null) {
      await p.lvm.thinPools.extendThinLv(vg.name, thin.thinPool, volume.lvName, lvSizeBytes);
    } else {
      await p.lvm.logicalVolumes.extend(vg.name, volume.lvName, lvSizeBytes);
    }
    // -L of whole extents is exact; the device path and number do not change.
    grown = { ...volume, sizeBytes: lvSizeBytes };
  }
  await p.headers.writeHeader(dmPath, { ...header, requestedBytes: capacityBytes });
  return { ...grown, capacityBytes };
}

/**
 * The thin class of a thin volume about to grow by `growBytes` to
 * `lvSizeBytes`, after the admission step (requireThinAdmits).
 * @throws FailedPreconditionError when no configured thin class names its
 *   pool (the budget is unknown); OutOfSpaceError when the pool refuses.
 */
async function thinClassOf(
  p: CoreParts,
  volume: Volume,
  thinPools: readonly ThinClassPool[],
  growBytes: number,
  lvSizeBytes: number,
): Promise<ThinProvisioning> {
  for (const { thin } of thinPools.filter((pool) => pool.vgName === volume.vgName)) {
    const report = await measureThinPool(p.lvm, volume.vgName, thin);
    if (!report.thinLvs.some((lv) => lv.lvName === volume.lvName)) continue;
    const what = `grow volume ${volume.volumeId} by ${growBytes} bytes`;
    const capacity = thinPoolCapacity(thin, report);
    requireThinAdmits(volume.vgName, thin, capacity, { growBytes, lvSizeBytes }, what, false);
    return thin;
  }
  throw new FailedPreconditionError(
    `${volume.vgName}/${volume.lvName} is a thin volume in a pool that no thin device class names; its budget is unknown, so it is not grown`,
  );
}

function isFsType(value: string): value is FsType {
  return (FS_TYPES as readonly string[]).includes(value);
}
