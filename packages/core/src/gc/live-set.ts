/**
 * The live sets of a GC run (DESIGN.md §6) and the refusals of an empty one
 * while stamped volumes or this owner's snapshots exist (DESIGN.md §2.4).
 */
import { FailedPreconditionError } from '../errors.js';
import { ownerTagFor } from '../naming.js';
import type { Inventory } from './types.js';

/** What a live set was read from, for the empty-live-set refusal. */
export interface LiveSetSource {
  /** e.g. `the list of PersistentVolumes of driver lvstamp.io`. */
  readonly what: string;
  readonly count: number;
}

/** The live sets a GC run is given (part of GcPlanRequest), and what stands for an empty one. */
export interface GcLiveSets {
  /** Volume IDs (32 hex digits) that something still references. */
  readonly liveSet: ReadonlySet<string>;
  /**
   * Accept an empty live set while stamped volumes exist. Without it such a
   * run is refused: an empty list is far more often a failed or partial
   * list than a real "nothing is live" (DESIGN.md §2.4).
   */
  readonly allowEmptyLiveSet: boolean;
  /**
   * The setting that sets `allowEmptyLiveSet`, as the caller's user types
   * it (e.g. `--allow-empty-live-set`), named in the refusal; default: the
   * refusal says "allow it explicitly".
   */
  readonly allowEmptyLiveSetWith?: string;
  /**
   * The records whose absence counts as "empty", when the live set also holds
   * IDs that do not prove the list worked: `count` records of `what` (the
   * CronJob: PersistentVolumes of its driver, since claims of any driver fill
   * the set even when a wrong driver name matches no volume). Default: the
   * live set itself.
   */
  readonly liveSetSource?: LiveSetSource;
  /**
   * Snapshot IDs (32 hex digits) that something still references, separate
   * from the volume IDs (DESIGN.md §6 "Snapshots"). Without it every
   * snapshot LV is kept with a warning.
   */
  readonly snapshotLiveSet?: ReadonlySet<string>;
  /**
   * Set when the snapshot live set could not be read at all (the CronJob:
   * the VolumeSnapshotContent CRD is not installed), with why: the run
   * aborts when the inventory holds a snapshot LV of this owner, whatever
   * `allowEmptyLiveSet` says; otherwise the empty `snapshotLiveSet` stands.
   */
  readonly snapshotLiveSetUnavailable?: string;
}

/**
 * The snapshot side of refuseEmptyLiveSet (DESIGN.md §6 "Snapshots"): an
 * empty snapshot live set while snapshot LVs tagged for this owner exist is
 * refused unless `allowEmptyLiveSet`. No snapshot live set at all is not
 * refused (every snapshot is kept then). A snapshot live set that could not
 * be read (`snapshotLiveSetUnavailable`) is refused whenever such LVs exist.
 * @throws FailedPreconditionError.
 */
export function refuseEmptySnapshotLiveSet(
  request: Pick<
    GcLiveSets,
    'snapshotLiveSet' | 'allowEmptyLiveSet' | 'allowEmptyLiveSetWith' | 'snapshotLiveSetUnavailable'
  >,
  inventory: Inventory,
  ownerId: string,
): void {
  const ownerTag = ownerTagFor(ownerId, inventory.naming);
  const own = (inventory.snapshots ?? []).filter((s) => s.tags.includes(ownerTag)).length;
  if (request.snapshotLiveSetUnavailable !== undefined && own > 0) {
    throw new FailedPreconditionError(
      `${own} snapshot LV(s) of this owner exist but ${request.snapshotLiveSetUnavailable}; refusing to plan`,
    );
  }
  if (request.snapshotLiveSet === undefined || request.snapshotLiveSet.size > 0) return;
  if (request.allowEmptyLiveSet) return;
  if (own === 0) return;
  throw new FailedPreconditionError(
    `the snapshot live set is empty while ${own} snapshot LV(s) of this owner exist; refusing to plan ` +
      `(an empty list is more often a failed one); ${allowText(request)} if no snapshot is really in use`,
  );
}

/**
 * Refuse rather than guess (DESIGN.md §2.4): an empty live set (or an empty
 * `liveSetSource`) while `stamped` volumes with a valid header exist is far
 * more often a failed or partial list than "nothing is live".
 * @throws FailedPreconditionError unless `allowEmptyLiveSet`.
 */
export function refuseEmptyLiveSet(
  request: Pick<
    GcLiveSets,
    'liveSet' | 'allowEmptyLiveSet' | 'allowEmptyLiveSetWith' | 'liveSetSource'
  >,
  stamped: number,
): void {
  const source = request.liveSetSource ?? { what: 'the live set', count: request.liveSet.size };
  if (source.count > 0 || stamped === 0 || request.allowEmptyLiveSet) return;
  throw new FailedPreconditionError(
    `${source.what} is empty while ${stamped} stamped volume(s) exist; refusing to plan removals ` +
      `(an empty list is more often a failed one); ${allowText(request)} if nothing is really in use`,
  );
}

/** How the refusals tell a person to allow an empty live set. */
function allowText(request: Pick<GcLiveSets, 'allowEmptyLiveSetWith'>): string {
  const setting = request.allowEmptyLiveSetWith;
  return setting === undefined ? 'allow it explicitly' : `allow it with ${setting}`;
}
