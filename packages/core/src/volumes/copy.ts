/**
 * Restore and clone (docs/DESIGN.md §5 "Restore and clone"): a new volume
 * holding a snapshot's or a volume's data, as a thin copy in the origin's
 * pool, made with the one create protocol (create-protocol.ts: leftovers
 * removed in every group of the scope, `lvstamp_new_<id>`, header, rename).
 * The data area is never cleared: it holds the data.
 */
import { withFrozen } from '../fs/freeze.js';
import {
  AlreadyExistsError,
  InvalidArgumentError,
  NotFoundError,
  OutOfRangeError,
} from '../errors.js';
import { isThinLv } from '../lvm/thin-snapshots.js';
import type { LogicalVolume } from '../lvm/types.js';
import {
  fromTagFor,
  isHexId,
  lvNameFor,
  newLvNameFor,
  ownerTagFor,
  parseFromTag,
  parseOwnerId,
  parseSnapshotTags,
  snapshotLvNameFor,
  validateVolumeName,
  volumeIdForName,
} from '../naming.js';
import type { ThinProvisioning } from '../provisioning.js';
import { newHeader, newLvPath, prepareNewLv, stampAndRename } from './create-protocol.js';
import {
  activateOwned,
  mountPointOf,
  single,
  toVolume,
  usableGroup,
  validateVgNames,
} from './lookup.js';
import { failedTagCheck, requireOwnerTags } from './ownership.js';
import type { SnapshotParts } from './parts.js';
import { CAPACITY_BLOCK_BYTES, volumeSize } from './size.js';
import { requireSourceHeader, sourceHeader, ThickVolumeError } from './source.js';
import { measureThinPool, requireThinAdmits, thinPoolCapacity } from './thin-capacity.js';
import type { CreatedVolume, CreateVolumeFromRequest, Volume } from './types.js';

/**
 * Creates a volume holding a snapshot's or a volume's data, idempotently,
 * under one holding of the host lock: the source (this owner's tags; thin);
 * an existing `lvstamp_<id>` is returned when its `lvstamp.from` tag names
 * this source and its header's name, owner and capacity fit; else
 * prepareNewLv, `lvcreate -s -kn -ay -prw` as `lvstamp_new_<id>` tagged
 * `lvstamp.from` (a mounted source volume frozen around it), its sector 0
 * checked to be the source's header, `lvextend` when the capacity is above
 * the source's, then stampAndRename.
 * @throws InvalidArgumentError for a bad name, group or owner ID, a group
 *   other than the source's, an origin outside the class's pool;
 *   ThickVolumeError for a thick source.
 * @throws NotFoundError when the source is malformed, absent or not this
 *   owner's; OutOfRangeError when the capacity asked is below the source's
 *   or the range cannot be met; AlreadyExistsError when the volume exists
 *   with another name, owner, size or source; NotOwnedError when the
 *   source's or the copy's sector 0 is not the source's header of this
 *   owner (a copy made is removed first); VolumeGroupUnusableError (the
 *   group's state, checked before anything is activated or made).
 * @throws ThinPoolUnusableError, OutOfSpaceError; CommandFailedError,
 *   CommandTimeoutError, UnparseableOutputError, LockTimeoutError.
 */
export async function createVolumeFrom(
  p: SnapshotParts,
  request: CreateVolumeFromRequest,
): Promise<CreatedVolume> {
  validateVolumeName(request.name);
  const ownerId = parseOwnerId(request.scope.ownerId);
  validateVgNames([request.vgName, ...request.scope.vgNames]);
  const { source } = request;
  const volumeId = volumeIdForName(request.name);
  if (!isHexId(source.id)) throw new NotFoundError(`${source.kind} ${source.id} does not exist`);
  const originLv =
    source.kind === 'snapshot'
      ? snapshotLvNameFor(source.id, p.naming)
      : lvNameFor(source.id, p.naming);
  const finalLv = lvNameFor(volumeId, p.naming);
  const newLv = newLvNameFor(volumeId, p.naming);
  const vgNames = [...new Set([request.vgName, ...request.scope.vgNames])];
  return p.hostLock.withLock(`create ${volumeId} from ${source.kind}`, async () => {
    const lvm = p.lvm.logicalVolumes;
    const found = await lvm.inGroups(vgNames, { names: [originLv, finalLv, newLv] });
    const { lvs } = found;
    const origin = single(lvs.filter((lv) => lv.lvName === originLv));
    const gone = (): never => {
      throw new NotFoundError(`${source.kind} ${source.id} does not exist`);
    };
    if (origin === null || failedTagCheck(origin, ownerId, p.naming) !== null) return gone();
    if (!isThinLv(origin)) throw new ThickVolumeError(`${source.kind} ${source.id}`, origin);
    // A broken group (a PV seen twice…) is refused before anything is activated or made.
    const vg = await usableGroup(p, origin.vgName, found);
    // The source's volume ID (its header's) and capacity.
    let sourceVolumeId = source.id;
    let sourceCapacity: number;
    if (source.kind === 'snapshot') {
      const tags = parseSnapshotTags(origin.tags, p.naming);
      if (tags === null) return gone();
      sourceVolumeId = tags.sourceVolumeId;
      sourceCapacity = tags.sizeBytes;
    } else {
      const active = await activateOwned(p, origin, ownerId);
      const expected = { volumeId: source.id, ownerId };
      sourceCapacity = (await sourceHeader(p, active, expected, 'copy')).capacityBytes;
    }
    if (origin.vgName !== request.vgName) {
      throw new InvalidArgumentError(
        `${source.kind} ${source.id} is in volume group ${origin.vgName}: a thin copy lives in its origin's pool, not in ${request.vgName}`,
      );
    }
    const capacityBytes = copyCapacity(request, sourceCapacity);
    const existing = single(lvs.filter((lv) => lv.lvName === finalLv));
    if (existing !== null) return adoptCopy(p, existing, request, volumeId, ownerId, capacityBytes);
    const pending = lvs.flatMap((lv) => (lv.lvName === newLv ? [toVolume(lv, p.naming)] : []));
    await prepareNewLv(
      p,
      vg.name,
      pending.filter((v): v is Volume => v !== null),
      found,
      ownerId,
    );
    const { lvSizeBytes } = volumeSize({
      requiredBytes: capacityBytes,
      extentSizeBytes: vg.extentSizeBytes,
    });
    const sizeBytes = Math.max(lvSizeBytes, origin.sizeBytes);
    if (request.thin) await requireInPool(p, vg.name, request.thin, origin, sizeBytes, volumeId);
    const tags = [p.naming.tag, ownerTagFor(ownerId, p.naming), fromTagFor(source, p.naming)];
    const create = (): Promise<void> =>
      p.lvm.thinSnapshots.createCopy({ vgName: vg.name, origin: originLv, lvName: newLv, tags });
    const frozenAt = source.kind === 'volume' ? await mountPointOf(p, source.id) : null;
    await withFrozen(p.runner, p.logger, frozenAt, create);
    const decoded = await p.headers.readHeader(newLvPath(vg.name, newLv));
    try {
      const readFrom = ` (read from its copy ${vg.name}/${newLv}, removed)`;
      requireSourceHeader(decoded, origin, { volumeId: sourceVolumeId, ownerId }, 'copy', readFrom);
    } catch (error) {
      await lvm.remove(vg.name, newLv);
      throw error;
    }
    if (lvSizeBytes > origin.sizeBytes) await lvm.extend(vg.name, newLv, lvSizeBytes);
    const header = newHeader(p, { volumeId, ownerId, name: request.name, capacityBytes });
    const lvName = await stampAndRename(p, vg.name, header);
    return { volumeId, vgName: vg.name, lvName, sizeBytes, capacityBytes };
  });
}

/**
 * The origin is a thin LV of the class's pool (measureThinPool), and the
 * pool admits a writable LV of `lvSizeBytes` (requireThinAdmits).
 * @throws InvalidArgumentError when the origin is in another pool;
 *   ThinPoolUnusableError; OutOfSpaceError.
 */
async function requireInPool(
  p: SnapshotParts,
  vgName: string,
  thin: ThinProvisioning,
  origin: LogicalVolume,
  lvSizeBytes: number,
  volumeId: string,
): Promise<void> {
  const report = await measureThinPool(p.lvm, vgName, thin);
  if (!report.thinLvs.some((lv) => lv.lvName === origin.lvName)) {
    throw new InvalidArgumentError(
      `${origin.vgName}/${origin.lvName} is not in the thin pool ${vgName}/${thin.thinPool} of the class asked for: a thin copy lives in its origin's pool`,
    );
  }
  const what = `take volume ${volumeId} (${lvSizeBytes} bytes)`;
  const sizes = { growBytes: lvSizeBytes, lvSizeBytes };
  requireThinAdmits(vgName, thin, thinPoolCapacity(thin, report), sizes, what);
}

/** The capacity of a copy: the source's unless more is asked; never less. */
function copyCapacity(request: CreateVolumeFromRequest, sourceCapacity: number): number {
  const limit = request.limitBytes ?? 0;
  if (request.requiredBytes !== 0 && request.requiredBytes < sourceCapacity) {
    throw new OutOfRangeError(
      `the size asked for (${request.requiredBytes} bytes) is below the source's capacity (${sourceCapacity} bytes); a copy never shrinks`,
    );
  }
  if (limit !== 0 && limit < sourceCapacity) {
    throw new OutOfRangeError(
      `the size limit (${limit} bytes) is below the source's capacity (${sourceCapacity} bytes); a copy never shrinks`,
    );
  }
  const { capacityBytes } = volumeSize({
    requiredBytes: Math.max(request.requiredBytes, sourceCapacity),
    limitBytes: limit,
    minimumBytes: request.minimumBytes ?? 0,
    extentSizeBytes: CAPACITY_BLOCK_BYTES,
  });
  return capacityBytes;
}

/** An existing `lvstamp_<id>` answers a retried restore when source, group, name, owner and size fit. */
async function adoptCopy(
  p: SnapshotParts,
  existing: LogicalVolume,
  request: CreateVolumeFromRequest,
  volumeId: string,
  ownerId: string,
  capacityBytes: number,
): Promise<CreatedVolume> {
  requireOwnerTags(existing, ownerId, p.naming, 'reuse');
  const from = parseFromTag(existing.tags, p.naming);
  if (from === null || from.kind !== request.source.kind || from.id !== request.source.id) {
    throw new AlreadyExistsError(
      `volume "${request.name}" (${volumeId}) exists, but not as a copy of ${request.source.kind} ${request.source.id}`,
    );
  }
  if (existing.vgName !== request.vgName) {
    throw new AlreadyExistsError(`volume ${volumeId} exists in ${existing.vgName}`);
  }
  const active = await activateOwned(p, existing, ownerId);
  const header = await sourceHeader(p, active, { volumeId, ownerId }, 'reuse');
  if (header.name !== request.name || header.capacityBytes !== capacityBytes) {
    throw new AlreadyExistsError(
      `volume "${request.name}" (${volumeId}) exists as "${header.name}" with capacity ${header.capacityBytes}, not ${capacityBytes}`,
    );
  }
  const { vgName, lvName } = active;
  return { volumeId, vgName, lvName, capacityBytes };
}
