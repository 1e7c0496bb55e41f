/**
 * Create (DESIGN.md §5 "Create"): adopt an existing volume, or make a new
 * one with the one create protocol (create-protocol.ts) under one holding
 * of the host lock. A thick create in a scope of one group tries the
 * protocol without the look-up first (createWithoutLookup).
 */
import {
  AlreadyExistsError,
  CommandFailedError,
  CommandTimeoutError,
  FailedPreconditionError,
  OutOfSpaceError,
  VolumeGroupUnusableError,
} from '../errors.js';
import { sysfsMapsWith } from '../device/sysfs.js';
import { isThinLv } from '../lvm/thin-snapshots.js';
import type { VolumeGroup } from '../lvm/types.js';
import type { GroupsReport } from '../lvm/volume-groups.js';
import type { ThinProvisioning } from '../provisioning.js';
import {
  lvDmName,
  lvNameFor,
  newLvNameFor,
  ownerTagFor,
  parseOwnerId,
  validateVolumeName,
  volumeIdForName,
} from '../naming.js';
import {
  activateOwned,
  lookupVolume,
  single,
  unusableGroupsIn,
  usableGroup,
  validateBytes,
  validateVgNames,
} from './lookup.js';
import { failedHeaderCheck, failedTagCheck, ownedHeaderOf, requireCapacity } from './ownership.js';
import { makeThickLv, newHeader, prepareNewLv, stampAndRename } from './create-protocol.js';
import { volumeLockKey } from '../lock/host-lock.js';
import type { CoreParts, VolumeParts } from './parts.js';
import { CAPACITY_BLOCK_BYTES, volumeSize, type VolumeSize } from './size.js';
import { measureThinPool, requireThinAdmits, thinPoolCapacity } from './thin-capacity.js';
import type { CreatedVolume, CreateVolumeRequest, Volume } from './types.js';

/**
 * Creates a volume with the DESIGN.md §5 protocol, idempotently: an existing
 * `lvstamp_<id>` of this name, owner and a fitting capacity in `vgName` is
 * returned (activated first when inactive and tagged); otherwise
 * prepareNewLv, `lvcreate` with volumeSize's sizes, the first and last MiB
 * of a thick data area zeroed, then stampAndRename. A thick class whose
 * scope is `vgName` alone first tries createWithoutLookup (unless sysfs
 * shows `lvstamp_<id>` active): `lvcreate` and `lvrename`, two lvm
 * processes, and the look-up path only after lvm refused one of them;
 * otherwise three: one `lvm fullreport`, `lvcreate`, `lvrename`.
 * @throws InvalidArgumentError for a bad name, size, VG name or owner ID;
 *   OutOfRangeError when no capacity fits the range (both before any lvm
 *   command).
 * @throws NotFoundError when the VG does not exist; VolumeGroupUnusableError.
 * @throws AlreadyExistsError when the volume exists with another capacity,
 *   group, owner, name or device class; FailedPreconditionError when its
 *   header is not `ok` or of another volume.
 * @throws ThinPoolUnusableError, OutOfSpaceError; CommandFailedError,
 *   CommandTimeoutError, UnparseableOutputError, LockTimeoutError.
 */
export async function createVolume(
  p: VolumeParts,
  request: CreateVolumeRequest,
): Promise<CreatedVolume> {
  validateVolumeName(request.name);
  if (request.limitBytes !== undefined) validateBytes('limitBytes', request.limitBytes);
  // The range alone (any extent size): refused before any lvm command. With 4 KiB "extents" the
  // LV size is data offset + capacity, what a create without the look-up asks lvm for.
  const size = volumeSize({ ...request, extentSizeBytes: CAPACITY_BLOCK_BYTES });
  validateVgNames([request.vgName]);
  const ownerId = parseOwnerId(request.ownerId);
  const volumeId = volumeIdForName(request.name);
  const vgNames = [request.vgName, ...(request.otherVgNames ?? [])];
  // One holding from the look-up to the rename: a leftover `lvstamp_new_<id>` is removed on its
  // tags alone, so with the lock free between lvcreate and lvrename another create or delete of
  // this volume could remove the LV being built, or rename it before its header exists. A thick
  // create is one volume's work; a thin one measures and admits against the pool, which spans
  // volumes, so it holds the lock exclusively (DESIGN.md §2.3 "The host lock").
  const thin = request.provisioning?.type === 'thin';
  const hold = <T>(fn: () => Promise<T>): Promise<T> =>
    thin
      ? p.hostLock.withLock(`create ${volumeId}`, fn)
      : p.hostLock.withVolumeLock(volumeLockKey(volumeId), `create ${volumeId}`, fn);
  return hold(async () => {
    let madeNewLv = false;
    if (
      !thin &&
      new Set(vgNames).size === 1 &&
      !(await finishedLvActive(p, request.vgName, volumeId))
    ) {
      const created = await createWithoutLookup(p, request, { volumeId, ownerId }, size);
      if (typeof created !== 'string') return created;
      madeNewLv = created === 'lvrename refused';
    }
    const { groups, finished, pending } = await lookupVolume(p, volumeId, vgNames);
    const vg = await usableGroup(p, request.vgName, groups);
    const existing = single(finished, `volume ${volumeId}`);
    if (existing !== null) {
      // The `lvstamp_new_<id>` this call made a moment ago goes whatever the answer; one an
      // earlier call left goes only once the volume is adopted (a refusal keeps it to look at).
      if (madeNewLv) await removeOwnLeftovers(p, pending, groups, ownerId);
      const adopted = await adoptExisting(p, existing, request, volumeId, ownerId);
      if (!madeNewLv) await removeOwnLeftovers(p, pending, groups, ownerId);
      return adopted;
    }
    const freedBytes = await prepareNewLv(p, vg.name, pending, groups, ownerId);
    return createNew(p, request, volumeId, ownerId, {
      ...vg,
      freeBytes: vg.freeBytes + freedBytes,
    });
  });
}

/**
 * The create protocol without the look-up (DESIGN.md §5 "Create"), for a
 * thick class whose scope is one group; the caller holds the host lock.
 * lvm makes the checks the look-up would make for such a scope: `lvcreate`
 * refuses a group that does not exist, is broken (docs/FACTS.md "Broken
 * groups"), has too few free extents, or holds `lvstamp_new_<id>` already;
 * `lvrename` refuses when `lvstamp_<id>` exists. The LV is asked for as
 * `size.lvSizeBytes`, data offset + capacity (volumeSize with 4 KiB
 * blocks), and lvm rounds it up to whole extents, as volumeSize does with
 * the extent size.
 * @returns the volume, or which command lvm refused: after a refused
 *   `lvcreate` at most an `lvstamp_new_<id>` that lvm made and could not
 *   activate (docs/FACTS.md "device-mapper") is left; after a refused
 *   `lvrename` this call's `lvstamp_new_<id>` (both tags, header written)
 *   is. The look-up path removes either, its tags checked (prepareNewLv,
 *   removeOwnLeftovers).
 * @throws what makeThickLv and stampAndRename throw other than an lvm
 *   refusal (refusedByLvm), as createNew does; a `lvstamp_new_<id>` made
 *   stays for a retry or the GC.
 */
async function createWithoutLookup(
  p: VolumeParts,
  request: CreateVolumeRequest,
  ids: { readonly volumeId: string; readonly ownerId: string },
  size: VolumeSize,
): Promise<CreatedVolume | 'lvcreate refused' | 'lvrename refused'> {
  const { volumeId, ownerId } = ids;
  const vgName = request.vgName;
  try {
    await makeThickLv(p, vgName, ids, size);
  } catch (error) {
    if (refusedByLvm(error)) return 'lvcreate refused';
    throw error;
  }
  const { capacityBytes } = size;
  const header = newHeader(p, { volumeId, ownerId, name: request.name, capacityBytes });
  try {
    const lvName = await stampAndRename(p, vgName, header);
    return { volumeId, vgName, lvName, capacityBytes };
  } catch (error) {
    if (refusedByLvm(error)) return 'lvrename refused';
    throw error;
  }
}

/**
 * Whether `lvstamp_<id>` of `vgName` is active, from sysfs (`sys/block/dm-N/
 * dm/name` under the host root, sysfsMapsWith; no process). A hint only, that
 * spares a create of an existing volume the doomed `lvcreate` and
 * `lvrename` of createWithoutLookup: that path is right either way, so an
 * unreadable sysfs is "no".
 */
async function finishedLvActive(
  p: VolumeParts,
  vgName: string,
  volumeId: string,
): Promise<boolean> {
  const dmName = lvDmName(vgName, lvNameFor(volumeId, p.naming));
  try {
    return (await sysfsMapsWith(p.hostRoot, 'name', dmName)).length > 0;
  } catch (error) {
    if (error instanceof FailedPreconditionError) return false;
    throw error;
  }
}

/**
 * Whether lvm refused a change: it exited non-zero, however classified. A
 * command that timed out is no refusal: what it did is unknown.
 */
function refusedByLvm(error: unknown): boolean {
  return (
    (error instanceof CommandFailedError && !(error instanceof CommandTimeoutError)) ||
    error instanceof OutOfSpaceError ||
    error instanceof VolumeGroupUnusableError
  );
}

/**
 * Where an existing volume is found: every `lvstamp_new_<id>` of the scope
 * with both of this owner's tags, in a group lvm can change, is removed
 * (DESIGN.md §5 "Create"; both tags suffice, §2.3). It is an interrupted
 * create of this very volume's ID: createWithoutLookup's attempt before its
 * refused `lvrename`, or what a failure or a crash after an earlier attempt
 * left, which the GC keeps while the volume is live. One with other tags or
 * in a group lvm refuses to change is left in place, and a removal that
 * fails is logged: adopting the volume does not depend on either. The
 * caller holds the host lock.
 * @throws as VolumeGroups.unusableIn (no lvm process for the look-up's report).
 */
async function removeOwnLeftovers(
  p: CoreParts,
  pending: readonly Volume[],
  groups: GroupsReport,
  ownerId: string,
): Promise<void> {
  if (pending.length === 0) return;
  const unusable = new Set((await unusableGroupsIn(p, groups)).map((g) => g.vgName));
  for (const leftover of pending) {
    const where = `${leftover.vgName}/${leftover.lvName}`;
    const failed = failedTagCheck(leftover, ownerId, p.naming);
    if (failed !== null || unusable.has(leftover.vgName)) {
      const why = failed?.detail ?? 'its volume group is unusable';
      p.logger?.warn('interrupted create left in place', { lv: where, reason: why });
      continue;
    }
    await p.lvm.logicalVolumes.remove(leftover.vgName, leftover.lvName).catch((error: unknown) => {
      p.logger?.warn('interrupted create not removed', { lv: where, error: String(error) });
    });
  }
}

/** lvcreate, the data area's ends cleared (thick), header and rename; the caller holds the host lock. */
async function createNew(
  p: VolumeParts,
  request: CreateVolumeRequest,
  volumeId: string,
  ownerId: string,
  vg: VolumeGroup,
): Promise<CreatedVolume> {
  const { capacityBytes, lvSizeBytes } = volumeSize({
    ...request,
    extentSizeBytes: vg.extentSizeBytes,
  });
  const thin = request.provisioning?.type === 'thin' ? request.provisioning : null;
  if (thin !== null) {
    await readyThinPool(p, vg, thin, ownerId, volumeId, lvSizeBytes);
    await p.lvm.thinPools.createThinLv({
      vgName: vg.name,
      poolName: thin.thinPool,
      lvName: newLvNameFor(volumeId, p.naming),
      virtualSizeBytes: lvSizeBytes,
      tags: [p.naming.tag, ownerTagFor(ownerId, p.naming)],
    });
  } else {
    if (lvSizeBytes > vg.freeBytes) {
      throw new OutOfSpaceError(
        `volume group ${vg.name} has ${vg.freeBytes} bytes free, volume ${volumeId} needs ${lvSizeBytes}`,
      );
    }
    await makeThickLv(p, vg.name, { volumeId, ownerId }, { capacityBytes, lvSizeBytes });
  }
  const header = newHeader(p, { volumeId, ownerId, name: request.name, capacityBytes });
  const lvName = await stampAndRename(p, vg.name, header);
  return { volumeId, vgName: vg.name, lvName, capacityBytes };
}

/**
 * A thin create's pool step (DESIGN.md §4 "Thin device classes"): the pool
 * measured (measureThinPool); absent with `thinPoolSize`, created (tagged
 * for this owner) and measured again; then the admission step.
 * @throws ThinPoolUnusableError, OutOfSpaceError.
 */
async function readyThinPool(
  p: CoreParts,
  vg: VolumeGroup,
  thin: ThinProvisioning,
  ownerId: string,
  volumeId: string,
  lvSizeBytes: number,
): Promise<void> {
  let capacity = thinPoolCapacity(thin, await measureThinPool(p.lvm, vg.name, thin));
  if (capacity.condition === 'prospective' && thin.thinPoolSizeBytes !== null) {
    await p.lvm.thinPools.create({
      vgName: vg.name,
      poolName: thin.thinPool,
      sizeBytes: capacity.poolBytes,
      tags: [p.naming.tag, ownerTagFor(ownerId, p.naming)],
    });
    p.logger?.warn('created thin pool', {
      pool: `${vg.name}/${thin.thinPool}`,
      sizeBytes: capacity.poolBytes,
    });
    capacity = thinPoolCapacity(thin, await measureThinPool(p.lvm, vg.name, thin));
  }
  const sizes = { growBytes: lvSizeBytes, lvSizeBytes };
  requireThinAdmits(
    vg.name,
    thin,
    capacity,
    sizes,
    `take volume ${volumeId} (${lvSizeBytes} bytes)`,
  );
}

/** An existing `lvstamp_<id>` answers a retried create when group, class, name, owner and size fit. */
async function adoptExisting(
  p: CoreParts,
  existing: Volume,
  request: CreateVolumeRequest,
  volumeId: string,
  ownerId: string,
): Promise<CreatedVolume> {
  const where = `${existing.vgName}/${existing.lvName}`;
  const wantThin = request.provisioning?.type === 'thin';
  if (wantThin !== isThinLv(existing)) {
    throw new AlreadyExistsError(
      `volume "${request.name}" (${volumeId}) exists as a ${isThinLv(existing) ? 'thin' : 'thick'} LV ${where}; the request's device class is ${wantThin ? 'thin' : 'thick'}`,
    );
  }
  if (existing.vgName !== request.vgName) {
    throw new AlreadyExistsError(
      `volume "${request.name}" (${volumeId}) exists in volume group ${existing.vgName}, not ${request.vgName}`,
    );
  }
  // A retried create after a reboot without auto-activation: activate it (tags first).
  const active = await activateOwned(p, existing, ownerId);
  if (active.dmPath === null) {
    throw new FailedPreconditionError(`${where} is active but lvm reports no device path`);
  }
  const decoded = await p.headers.readHeader(active.dmPath);
  const failed = failedHeaderCheck(decoded, volumeId, ownerId);
  if (decoded.status !== 'ok') {
    throw new FailedPreconditionError(
      `${where} exists but its header is ${decoded.status}: ${decoded.reason}`,
    );
  }
  const { header } = decoded;
  if (failed?.check === 'header-id') {
    throw new FailedPreconditionError(`${where} holds a header for volume ${header.volumeId}`);
  }
  if (header.name !== request.name) {
    throw new AlreadyExistsError(
      `${where} belongs to volume "${header.name}", not "${request.name}"`,
    );
  }
  // Another installation's volume of the same name: "exists", as CSI CreateVolume answers.
  if (failed?.check === 'header-owner') {
    throw new AlreadyExistsError(`${where} belongs to owner ${header.ownerId}, not ${ownerId}`);
  }
  const capacityBytes = requireCapacity(ownedHeaderOf(decoded, existing.sizeBytes), existing);
  const tooSmall = capacityBytes < request.requiredBytes;
  const tooLarge = request.limitBytes !== undefined && capacityBytes > request.limitBytes;
  if (tooSmall || tooLarge) {
    const range = `${request.requiredBytes}..${request.limitBytes ?? 'unlimited'}`;
    throw new AlreadyExistsError(
      `volume "${request.name}" exists with a different size: capacity ${capacityBytes} bytes, requested ${range}`,
    );
  }
  const { vgName, lvName } = active;
  return { volumeId, vgName, lvName, capacityBytes };
}
