/**
 * Restore of a quarantined volume or snapshot (DESIGN.md §6 "Quarantine"
 * "Restore"): the checks, then the quarantine tag removed and the name
 * given back; a second restore of a restored LV changes nothing.
 */
import { AlreadyExistsError, VolumeGroupUnusableError } from '../errors.js';
import type { HeaderFields } from '../header/types.js';
import type { LogicalVolume } from '../lvm/types.js';
import {
  lvNameFor,
  newLvNameFor,
  parseOwnerId,
  parseQuarantineTag,
  parseSnapshotTags,
  quarantineTagsOf,
  quarantinedLvNameFor,
  snapshotLvNameFor,
  type QuarantinedKind,
} from '../naming.js';
import { readHeaderSafely, type HeaderReading } from './header-reading.js';
import { refuseOpenLv } from './lookup.js';
import { failedHeaderCheck, notOwned, requireOwnerTags } from './ownership.js';
import type { CoreParts, QuarantineParts } from './parts.js';
import { activateQuarantinedLv, deactivateQuarantined } from './quarantine-activation.js';
import { listQuarantined, oneQuarantined } from './quarantine-lookup.js';
import { capacityOf } from './size.js';
import type { VolumeScope } from './types.js';

/** What a restore gives back: enough to bind the volume again. */
export interface RestoredLv {
  readonly kind: QuarantinedKind;
  readonly id: string;
  readonly vgName: string;
  /** The LV's name now: `lvstamp_<id>` or `lvstamp_snap_<id>`. */
  readonly lvName: string;
  /** The header read before the restore (a snapshot: its source's). */
  readonly header: HeaderFields;
  /** A volume's capacity in bytes (its header, DESIGN.md §4 "Capacity"); a snapshot: `lvstamp.size`. */
  readonly capacityBytes: number | null;
  /** When it had been put in quarantine, Unix ms, or null (also when already restored). */
  readonly quarantinedAtMs: number | null;
  /** The LV's size in bytes (what a PersistentVolume may claim when the capacity is unknown). */
  readonly lvSizeBytes: number;
  /**
   * The LV's device (`/dev/mapper/...`) when it is active after the restore
   * (a volume), so that its data area can be probed; null for a snapshot,
   * which rests inactive.
   */
  readonly devicePath: string | null;
  /**
   * True when nothing was restored because this LV was restored already: no
   * quarantined LV of the ID is left, and the live one carries this owner's
   * tags, no quarantine tag, and sector 0 of this owner with the ID.
   */
  readonly alreadyRestored: boolean;
}

/**
 * Restores a quarantined volume or snapshot (DESIGN.md §6 "Quarantine"),
 * under the host lock: exactly one `lvstamp_q_<id>` (`lvstamp_qs_<id>`) in
 * the scope; no `lvstamp_<id>` or `lvstamp_new_<id>` (`lvstamp_snap_<id>`)
 * in the scope; both tags; activated (a snapshot with `-K`) and sector 0
 * an `ok` header of this owner with the name's ID (a snapshot: its
 * `lvstamp.source`); then one `lvchange` deletes the quarantine tag (a
 * volume stays active, a snapshot is deactivated: it rests inactive) and
 * `lvrename` gives back its name. An LV that lvm reports open
 * (refuseOpenLv) is refused before anything changes. A crash between the two leaves an
 * untagged `lvstamp_q_<id>` that the GC never expires and a second
 * restore finishes. A refused restore deactivates what it activated.
 *
 * A restore of what is already restored (no quarantined LV of the ID in
 * the scope, and exactly one live `lvstamp_<id>` / `lvstamp_snap_<id>`
 * with this owner's tags, no quarantine tag and sector 0 of this owner
 * with the ID) changes nothing and returns it with `alreadyRestored`.
 * @throws NotFoundError when no such quarantined LV and no live one is in the scope.
 * @throws AlreadyExistsError when a volume (snapshot) with that ID exists
 *   again next to the quarantined one (the message names both and what to
 *   run), or exists without being provably the restored LV.
 * @throws InvalidArgumentError when several groups hold the quarantined
 *   name (oneQuarantined); VolumeGroupUnusableError (its group has a missing or
 *   duplicate PV...: checked before anything changes); NotOwnedError
 *   (tags, header); FailedPreconditionError (the quarantined LV is open);
 *   CommandFailedError, LockTimeoutError.
 */
export async function restoreQuarantined(
  p: QuarantineParts,
  kind: QuarantinedKind,
  id: string,
  scope: VolumeScope,
): Promise<RestoredLv> {
  const ownerId = parseOwnerId(scope.ownerId);
  const naming = p.naming;
  const qName = quarantinedLvNameFor(kind, id, naming);
  const liveNames =
    kind === 'volume'
      ? [lvNameFor(id, naming), newLvNameFor(id, naming)]
      : [snapshotLvNameFor(id, naming)];
  return p.hostLock.withLock(`restore ${qName}`, async () => {
    const { lvs: found, unusableGroups } = await listQuarantined(p, scope, [qName]);
    const { lvs: again } = await p.lvm.logicalVolumes.inGroups(scope.vgNames, {
      names: liveNames,
    });
    if (found.length === 0 && again.length > 0) {
      return alreadyRestored(p, kind, id, again, ownerId);
    }
    const lv = oneQuarantined(found, kind, id, qName, scope);
    if (again.length > 0) {
      const here = `${lv.vgName}/${lv.lvName}`;
      throw new AlreadyExistsError(
        `a ${kind} with ID ${id} exists again (${again.map((l) => `${l.vgName}/${l.lvName}`).join(', ')}); ` +
          `the quarantined ${here} is left as it is. To keep the live one and drop the quarantined copy: ` +
          `lvstamp quarantine purge ${here} --apply. To bring the quarantined copy back instead, first ` +
          `delete the live one (lvstamp ${kind === 'volume' ? 'delete' : 'snapshot delete'} ${id}), then restore again`,
      );
    }
    // A group lvm refuses to change (a PV missing or seen twice...) is refused before any
    // change: there `lvchange --deltag` can commit and only `lvrename` fail, which would leave
    // the LV untagged, its quarantine time lost (DESIGN.md §6 rule 1).
    const broken = unusableGroups.find((g) => g.vgName === lv.vgName);
    if (broken !== undefined) {
      throw new VolumeGroupUnusableError(broken.vgName, broken.problem, broken.detail);
    }
    requireOwnerTags(lv, ownerId, naming, 'restore');
    // Another process may have activated and opened it: a rename under a user is refused.
    await refuseOpenLv(lv, p.hostRoot, 'not restored, nothing was changed: close it first');
    const expectedId =
      kind === 'volume' ? id : (parseSnapshotTags(lv.tags, naming)?.sourceVolumeId ?? null);
    if (expectedId === null) {
      throw notOwned(
        lv,
        { check: 'tag', detail: `it lacks well-formed ${naming.tag}.source/size/created tags` },
        'restore',
      );
    }
    const activatedHere = !lv.active;
    if (activatedHere) await activateQuarantinedLv(p, lv);
    const active = await p.lvm.logicalVolumes.get(lv.vgName, lv.lvName);
    const reading: HeaderReading = await readHeaderSafely(active, p.headers);
    const failed = failedHeaderCheck(reading, expectedId, ownerId);
    if (failed !== null || reading.status !== 'ok') {
      if (activatedHere) await deactivateQuarantined(p, [`${lv.vgName}/${lv.lvName}`]);
      throw notOwned(lv, failed ?? { check: 'header', detail: 'no header' }, 'restore');
    }
    const at = parseQuarantineTag(lv.tags, naming);
    const stale = quarantineTagsOf(lv.tags, naming);
    // No tag left (a second restore after a crash) and a volume stays active: nothing to change.
    if (stale.length > 0 || kind === 'snapshot') {
      await p.lvm.logicalVolumes.changeTagsAndActivation(lv.vgName, lv.lvName, {
        deleteTags: stale,
        ...(kind === 'snapshot' ? { activate: 'n' as const } : {}),
      });
    }
    const to = liveNames[0] ?? lvNameFor(id, naming);
    await p.lvm.logicalVolumes.rename(lv.vgName, lv.lvName, to);
    const renamed = kind === 'volume' ? await p.lvm.logicalVolumes.get(lv.vgName, to) : null;
    return {
      ...restoredParts(p, kind, id, lv, reading),
      lvName: to,
      quarantinedAtMs: at === null ? null : at * 1000,
      devicePath: renamed?.active === true ? renamed.dmPath : null,
      alreadyRestored: false,
    };
  });
}

/**
 * The second restore of a restored LV (restoreQuarantined): `again` must be exactly
 * the live `lvstamp_<id>` (`lvstamp_snap_<id>`) with this owner's tags, no
 * quarantine tag, and sector 0 of this owner with the ID (a snapshot: its
 * `lvstamp.source`); an inactive one is activated to read it (a snapshot
 * with `-K`, and deactivated again: it rests inactive; a volume stays
 * active, as a restore leaves it). Nothing else changes.
 * @throws AlreadyExistsError when it is anything else; NotOwnedError (tags).
 */
async function alreadyRestored(
  p: CoreParts,
  kind: QuarantinedKind,
  id: string,
  again: readonly LogicalVolume[],
  ownerId: string,
): Promise<RestoredLv> {
  const naming = p.naming;
  const liveName = kind === 'volume' ? lvNameFor(id, naming) : snapshotLvNameFor(id, naming);
  const names = again.map((l) => `${l.vgName}/${l.lvName}`).join(', ');
  const refuse = (why: string) =>
    new AlreadyExistsError(
      `no quarantined ${kind} ${id} is left, and the ${kind} that exists with that ID (${names}) is not provably the restored one: ${why}; nothing was changed`,
    );
  const [live, ...more] = again;
  if (live === undefined || more.length > 0 || live.lvName !== liveName) {
    throw refuse(`expected exactly one ${liveName}`);
  }
  requireOwnerTags(live, ownerId, naming, 'restore');
  if (quarantineTagsOf(live.tags, naming).length > 0) {
    throw refuse(`it carries a ${naming.tag}.quarantined tag (a GC run is quarantining it)`);
  }
  const expectedId =
    kind === 'volume' ? id : (parseSnapshotTags(live.tags, naming)?.sourceVolumeId ?? null);
  if (expectedId === null)
    throw refuse(`it lacks well-formed ${naming.tag}.source/size/created tags`);
  const activate = (how: 'y' | 'n') =>
    p.lvm.logicalVolumes.changeTagsAndActivation(live.vgName, live.lvName, {
      activate: how,
      ignoreActivationSkip: kind === 'snapshot',
    });
  if (!live.active) await activate('y');
  const now = await p.lvm.logicalVolumes.get(live.vgName, live.lvName);
  const reading = await readHeaderSafely(now, p.headers);
  if (!live.active && kind === 'snapshot') await activate('n');
  const failed = failedHeaderCheck(reading, expectedId, ownerId);
  if (failed !== null || reading.status !== 'ok') {
    throw refuse(failed?.detail ?? 'no header');
  }
  return {
    ...restoredParts(p, kind, id, now, reading),
    quarantinedAtMs: null,
    devicePath: kind === 'volume' && now.active ? now.dmPath : null,
    alreadyRestored: true,
  };
}

/** The parts of a RestoredLv that its LV and its `ok` sector 0 give. */
function restoredParts(
  p: CoreParts,
  kind: QuarantinedKind,
  id: string,
  lv: LogicalVolume,
  reading: Extract<HeaderReading, { status: 'ok' }>,
): Pick<
  RestoredLv,
  'kind' | 'id' | 'vgName' | 'lvName' | 'header' | 'capacityBytes' | 'lvSizeBytes'
> {
  return {
    kind,
    id,
    vgName: lv.vgName,
    lvName: lv.lvName,
    header: reading.header,
    capacityBytes:
      kind === 'volume'
        ? capacityOf({ version: reading.version, ...reading.header }, lv.sizeBytes)
        : (parseSnapshotTags(lv.tags, p.naming)?.sizeBytes ?? null),
    lvSizeBytes: lv.sizeBytes,
  };
}
