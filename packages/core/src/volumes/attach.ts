/**
 * Attach and detach (DESIGN.md §4 "Data device", §5): the data device is
 * the linear map over the data area behind the header, made only after both
 * ownership signals (DESIGN.md §2.3), so another installation's volume is
 * never exposed.
 */
import { formatDeviceNumber } from '../os/devnum.js';
import type { DataDevice, DataDeviceRef } from '../device/types.js';
import { FailedPreconditionError } from '../errors.js';
import { parseOwnerId } from '../naming.js';
import { activateVolume } from './activation.js';
import { findVolume, ownedCapacity, refuseIfMounted } from './lookup.js';
import { requireOwnerTags } from './ownership.js';
import type { VolumeParts } from './parts.js';
import type { VgScope, VolumeScope } from './types.js';

/**
 * Creates (or keeps) the data device of a volume whose tags and header are
 * this owner's; an inactive LV is activated first once its tags pass.
 * @returns the `/dev/mapper` node and its device number.
 * @throws NotFoundError; NotOwnedError (a failed tag or header check);
 *   FailedPreconditionError (still being created, header does not fit);
 *   CommandFailedError.
 */
export async function attach(
  p: VolumeParts,
  volumeId: string,
  scope: VolumeScope,
): Promise<DataDevice> {
  const ownerId = parseOwnerId(scope.ownerId);
  const volume = await activateVolume(p, volumeId, scope);
  requireOwnerTags(volume, ownerId, p.naming, 'attach');
  const { header, capacityBytes } = await ownedCapacity(p, volume, ownerId, 'attach');
  return p.dataDevices.create(volumeId, volume, header.dataOffsetBytes, capacityBytes);
}

/**
 * Removes the data device; the data stays on the LV. Not attached is
 * success (`removed: false`). With a `scope`, a map whose volume has no LV
 * there is removed only as a leftover (refuseTargetOutside).
 * @throws FailedPreconditionError when it is mounted or open, or its
 *   volume is outside the scope and its target still exists.
 */
export async function detach(
  p: VolumeParts,
  volumeId: string,
  scope?: VgScope,
): Promise<{ removed: boolean }> {
  const map = await p.dataDevices.find(volumeId);
  if (map === null) return { removed: false };
  await refuseIfMounted(p.filesystems, map);
  if (scope !== undefined && (await findVolume(p, volumeId, scope)) === null) {
    await refuseTargetOutside(p, map, scope);
  }
  await p.dataDevices.remove(volumeId);
  return { removed: true };
}

/**
 * Refuses a data device whose volume has no LV in the scope while the
 * device its table targets still exists (an LV of another group, or any
 * other device): nothing proves it a leftover (DESIGN.md §6 rule 4).
 * @throws FailedPreconditionError naming the map, its target and the scope.
 */
export async function refuseTargetOutside(
  p: VolumeParts,
  map: DataDeviceRef,
  scope: VgScope,
): Promise<void> {
  const target = await p.dataDevices.targetOf(map.volumeId);
  if (target?.present === true) {
    throw new FailedPreconditionError(
      `data device ${map.name} targets ${formatDeviceNumber(target.device)}, a device outside the volume groups ${scope.vgNames.join(', ')} (no LV of volume ${map.volumeId} there); name the volume group that holds its LV; left untouched`,
    );
  }
}
