/**
 * Quarantining, the executor's steps 2 and 3 on the node (DESIGN.md §6
 * "Quarantine"): tag and deactivate, then rename; each under the host lock
 * after a re-check of the LV by `lv_uuid`.
 */
import { FailedPreconditionError } from '../errors.js';
import type { LogicalVolume } from '../lvm/types.js';
import {
  parseOwnerId,
  parseQuarantineTag,
  quarantineTagFor,
  quarantineTagsOf,
  quarantinedLvNameFor,
  type QuarantinedKind,
} from '../naming.js';
import { requireOwnerTags } from './ownership.js';
import type { CoreParts } from './parts.js';
import { listQuarantined } from './quarantine-lookup.js';

/** The LV a GC plan entry names: its group, name and `lv_uuid`, and the owner it was planned for. */
export interface PlannedLvRef {
  readonly vgName: string;
  readonly lvName: string;
  readonly lvUuid: string;
  readonly ownerId: string;
}

/**
 * Quarantine step 2 (GcQuarantinePort.markQuarantined): under the host
 * lock, the LV by `lv_uuid` must still be `ref`'s name in `ref`'s group
 * with both tags; then one `lvchange --deltag <any old quarantine tag>
 * --addtag lvstamp.quarantined=<atSeconds> --activate n`. lvm2 2.03.16
 * does both in one call (measured; it warns that combining activation
 * with other changes "is not advised", and commits the tags first). A
 * stale tag (an interrupted run, or a volume that became live again) is
 * replaced, so a window always starts at its own quarantine.
 * @throws FailedPreconditionError, NotOwnedError; CommandFailedError.
 */
export async function markQuarantined(
  p: CoreParts,
  ref: PlannedLvRef,
  atSeconds: number,
): Promise<void> {
  await p.hostLock.withLock(`quarantine ${ref.vgName}/${ref.lvName}`, async () => {
    const lv = await recheck(p, ref, 'quarantine');
    const tag = quarantineTagFor(atSeconds, p.naming);
    await p.lvm.logicalVolumes.changeTagsAndActivation(lv.vgName, lv.lvName, {
      deleteTags: quarantineTagsOf(lv.tags, p.naming).filter((t) => t !== tag),
      addTags: lv.tags.includes(tag) ? [] : [tag],
      activate: 'n',
    });
  });
}

/**
 * Quarantine step 3 (GcQuarantinePort.renameQuarantined): the same
 * re-check, the quarantine tag present, the LV inactive and its
 * quarantined name free in the group; then `lvrename`.
 * @throws FailedPreconditionError, NotOwnedError; CommandFailedError.
 */
export async function renameQuarantined(
  p: CoreParts,
  ref: PlannedLvRef & { readonly kind: QuarantinedKind; readonly id: string },
): Promise<void> {
  await p.hostLock.withLock(`quarantine ${ref.vgName}/${ref.lvName}`, async () => {
    const lv = await recheck(p, ref, 'quarantine');
    if (parseQuarantineTag(lv.tags, p.naming) === null) {
      throw new FailedPreconditionError(
        `${lv.vgName}/${lv.lvName} carries no ${p.naming.tag}.quarantined tag; not renamed`,
      );
    }
    if (lv.active) {
      throw new FailedPreconditionError(`${lv.vgName}/${lv.lvName} is active again; not renamed`);
    }
    const to = quarantinedLvNameFor(ref.kind, ref.id, p.naming);
    const { lvs: taken } = await listQuarantined(p, { vgNames: [lv.vgName] }, [to]);
    if (taken.length > 0) {
      throw new FailedPreconditionError(
        `${lv.vgName}/${to} exists already; ${lv.vgName}/${lv.lvName} stays tagged and inactive until a person looks`,
      );
    }
    await p.lvm.logicalVolumes.rename(lv.vgName, lv.lvName, to);
  });
}

/**
 * The LV of `ref.lvUuid`, still `ref`'s name in `ref`'s group with both
 * tags of `ref.ownerId` (DESIGN.md §2.3).
 * @throws FailedPreconditionError when it is gone or elsewhere; NotOwnedError.
 */
async function recheck(p: CoreParts, ref: PlannedLvRef, act: string): Promise<LogicalVolume> {
  const ownerId = parseOwnerId(ref.ownerId);
  const [lv, ...more] = await p.lvm.logicalVolumes.byUuid(ref.lvUuid);
  if (lv === undefined || more.length > 0 || lv.vgName !== ref.vgName || lv.lvName !== ref.lvName) {
    throw new FailedPreconditionError(
      `LV ${ref.lvUuid} is no longer exactly ${ref.vgName}/${ref.lvName}; left alone`,
    );
  }
  requireOwnerTags(lv, ownerId, p.naming, act);
  return lv;
}
