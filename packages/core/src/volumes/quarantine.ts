/**
 * Quarantined LVs on the node (DESIGN.md §6 "Quarantine"): the GC's
 * quarantine port (list, mark, rename, activate for the expiry's header
 * read), the listing for `lvstamp list --quarantined`, and restore.
 */
import {
  AlreadyExistsError,
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
} from '../errors.js';
import { isThinLv } from '../lvm/thin-snapshots.js';
import type { LogicalVolume, UnusableGroup } from '../lvm/types.js';
import type { VgScope, VolumeScope } from './types.js';
import {
  lvNameFor,
  newLvNameFor,
  parseOwnerId,
  parseQuarantineTag,
  parseQuarantinedLvName,
  parseSnapshotTags,
  quarantineTagFor,
  quarantineTagsOf,
  quarantinedLvNameFor,
  snapshotLvNameFor,
  type Naming,
  type QuarantinedKind,
} from '../naming.js';
import type { HeaderFields } from '../header/types.js';
import { readHeaderSafely, type HeaderReading } from './header-reading.js';
import { capacityOf } from './size.js';
import { failedHeaderCheck, failedTagCheck, notOwned, requireOwnerTags } from './ownership.js';
import { refuseOpenLv } from './lookup.js';
import { withDefaults, type ResolvedServiceParts, type ServiceParts } from './parts.js';

/** What QuarantineService runs on: the volume services' parts, without maps and filesystems. */
export type QuarantineServiceOptions = ServiceParts<unknown, unknown> & {
  /** Where `sys/` and `proc/` are read to name the holders of an open LV; default `/`. */
  readonly hostRoot?: string;
};

/** One look-up of quarantined LVs (QuarantineService.listQuarantined). */
export interface QuarantinedLook {
  readonly lvs: LogicalVolume[];
  /** The looked-up groups lvm refuses to change, from the same report. */
  readonly unusableGroups: UnusableGroup[];
}

/** One quarantined LV as `lvstamp list --quarantined` shows it. */
export interface QuarantinedLv {
  readonly kind: QuarantinedKind;
  /** Volume or snapshot ID from the LV name. */
  readonly id: string;
  readonly vgName: string;
  readonly lvName: string;
  /**
   * LV size in bytes. For a thick LV the extents it holds; for a thin LV
   * (`thin`) its virtual size: it holds only the pool chunks written, which
   * lvm does not report while it is inactive, as a quarantined LV is.
   */
  readonly sizeBytes: number;
  /** True for a thin LV (`lv_attr` char 1 `V`, lvs(8)); every snapshot is one. */
  readonly thin: boolean;
  /** From `lvstamp.quarantined=<s>`, Unix ms; null when missing or malformed. */
  readonly quarantinedAtMs: number | null;
  /** True when it carries `lvstamp` and this owner's tag. */
  readonly owned: boolean;
  /** A snapshot's `lvstamp.source`; null for a volume. */
  readonly sourceVolumeId: string | null;
  readonly active: boolean;
  readonly tags: readonly string[];
}

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
 * The node's quarantine (DESIGN.md §6 "Quarantine"). Fills the GC's
 * GcQuarantinePort; every change runs under the host lock and re-checks
 * the LV by `lv_uuid` first.
 */
export class QuarantineService {
  readonly #p: ResolvedServiceParts<unknown, unknown>;
  readonly #hostRoot: string | undefined;

  constructor(options: QuarantineServiceOptions) {
    this.#p = withDefaults(options);
    this.#hostRoot = options.hostRoot;
  }

  /**
   * `lvstamp_q_<id>` and `lvstamp_qs_<id>` LVs of the scope's volume groups
   * (one look-up of the prefix `lvstamp_q`), whatever their tags; with
   * `lvNames`, only those names. `unusableGroups`: the groups of that
   * look-up lvm refuses to change (VolumeGroups.unusableIn, from the same
   * report), whose LVs nothing may change (DESIGN.md §6 rule 1).
   * @throws as LogicalVolumes.inGroups: a failure is never an empty list.
   */
  async listQuarantined(scope: VgScope, lvNames?: readonly string[]): Promise<QuarantinedLook> {
    if (lvNames !== undefined && lvNames.length === 0) return { lvs: [], unusableGroups: [] };
    const prefix = quarantinedLvNameFor('volume', '', this.#p.naming).slice(0, -1);
    const report = await this.#p.lvm.logicalVolumes.inGroups(
      scope.vgNames,
      lvNames === undefined ? { prefix } : { names: lvNames },
    );
    return {
      lvs: report.lvs.filter((lv) => parseQuarantinedLvName(lv.lvName, this.#p.naming) !== null),
      unusableGroups: await this.#p.lvm.volumeGroups.unusableIn(report),
    };
  }

  /**
   * The quarantined LVs of the scope, sorted by kind then ID, for people,
   * and the groups lvm refuses to change (listQuarantined).
   * @throws as listQuarantined.
   */
  async list(
    scope: VolumeScope,
  ): Promise<{ readonly quarantined: QuarantinedLv[]; readonly unusableGroups: UnusableGroup[] }> {
    const naming = this.#p.naming;
    const { lvs, unusableGroups } = await this.listQuarantined(scope);
    const quarantined = lvs
      .flatMap((lv): QuarantinedLv[] => {
        const parsed = parseQuarantinedLvName(lv.lvName, naming);
        if (parsed === null) return [];
        const owned = failedTagCheck(lv, scope.ownerId, naming) === null;
        return [describe(lv, parsed.kind, parsed.id, owned, naming)];
      })
      .sort((a, b) => a.kind.localeCompare(b.kind) || a.id.localeCompare(b.id));
    return { quarantined, unusableGroups };
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
  async markQuarantined(
    ref: {
      readonly vgName: string;
      readonly lvName: string;
      readonly lvUuid: string;
      readonly ownerId: string;
    },
    atSeconds: number,
  ): Promise<void> {
    await this.#p.hostLock.withLock(`quarantine ${ref.vgName}/${ref.lvName}`, async () => {
      const lv = await this.#recheck(ref, 'quarantine');
      const tag = quarantineTagFor(atSeconds, this.#p.naming);
      await this.#p.lvm.logicalVolumes.changeTagsAndActivation(lv.vgName, lv.lvName, {
        deleteTags: quarantineTagsOf(lv.tags, this.#p.naming).filter((t) => t !== tag),
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
  async renameQuarantined(ref: {
    readonly kind: QuarantinedKind;
    readonly id: string;
    readonly vgName: string;
    readonly lvName: string;
    readonly lvUuid: string;
    readonly ownerId: string;
  }): Promise<void> {
    await this.#p.hostLock.withLock(`quarantine ${ref.vgName}/${ref.lvName}`, async () => {
      const lv = await this.#recheck(ref, 'quarantine');
      if (parseQuarantineTag(lv.tags, this.#p.naming) === null) {
        throw new FailedPreconditionError(
          `${lv.vgName}/${lv.lvName} carries no ${this.#p.naming.tag}.quarantined tag; not renamed`,
        );
      }
      if (lv.active) {
        throw new FailedPreconditionError(`${lv.vgName}/${lv.lvName} is active again; not renamed`);
      }
      const to = quarantinedLvNameFor(ref.kind, ref.id, this.#p.naming);
      const { lvs: taken } = await this.listQuarantined({ vgNames: [lv.vgName] }, [to]);
      if (taken.length > 0) {
        throw new FailedPreconditionError(
          `${lv.vgName}/${to} exists already; ${lv.vgName}/${lv.lvName} stays tagged and inactive until a person looks`,
        );
      }
      await this.#p.lvm.logicalVolumes.rename(lv.vgName, lv.lvName, to);
    });
  }

  /**
   * Activates the quarantined LVs `lvNames` of the scope that are inactive
   * and carry both tags (a volume `lvchange --activate y`, a snapshot with
   * `-K`), under the host lock, so that the expiry can read sector 0.
   * @returns `vg/lv` of each activated.
   * @throws as listQuarantined; CommandFailedError, LockTimeoutError.
   */
  async activateQuarantined(
    scope: { readonly vgNames: readonly string[]; readonly ownerId: string },
    lvNames: readonly string[],
  ): Promise<string[]> {
    if (lvNames.length === 0) return [];
    const ownerId = parseOwnerId(scope.ownerId);
    return this.#p.hostLock.withLock('activate quarantined lvstamp LVs', async () => {
      const activated: string[] = [];
      for (const lv of (await this.listQuarantined(scope, lvNames)).lvs) {
        if (lv.active || failedTagCheck(lv, ownerId, this.#p.naming) !== null) continue;
        await this.#activate(lv);
        activated.push(`${lv.vgName}/${lv.lvName}`);
      }
      return activated;
    });
  }

  /**
   * Deactivates quarantined LVs (`vg/lv`) this service activated
   * (`lvchange --activate n`); best effort: a failure is logged, never thrown.
   */
  async deactivateQuarantined(lvs: readonly string[]): Promise<void> {
    for (const device of lvs) {
      const [vgName = '', lvName = '', ...rest] = device.split('/');
      if (rest.length > 0 || parseQuarantinedLvName(lvName, this.#p.naming) === null) {
        this.#p.logger?.warn(`not deactivating ${device}: not a quarantined LV name`);
        continue;
      }
      try {
        await this.#p.hostLock.withLock(`deactivate ${device}`, () =>
          this.#p.lvm.logicalVolumes.changeTagsAndActivation(vgName, lvName, { activate: 'n' }),
        );
      } catch (error) {
        this.#p.logger?.warn(
          `could not deactivate quarantined ${device} again: ${error instanceof Error ? error.message : String(error)}`,
        );
      }
    }
  }

  /**
   * One quarantined LV with its sector 0, for `lvstamp quarantine inspect`:
   * an inactive LV with both tags is activated (a snapshot with `-K`) under
   * the host lock for the read and deactivated again; one without them is
   * not activated, and its header is `unreadable`.
   * @throws NotFoundError when no such quarantined LV is in the scope;
   *   InvalidArgumentError when several groups hold one (oneOf).
   */
  async inspect(
    kind: QuarantinedKind,
    id: string,
    scope: VolumeScope,
  ): Promise<{ readonly lv: QuarantinedLv; readonly header: HeaderReading }> {
    const ownerId = parseOwnerId(scope.ownerId);
    const qName = quarantinedLvNameFor(kind, id, this.#p.naming);
    return this.#p.hostLock.withLock(`inspect ${qName}`, async () => {
      const lv = await this.#findOne(kind, id, scope);
      const owned = failedTagCheck(lv, ownerId, this.#p.naming) === null;
      const activatedHere = !lv.active && owned;
      if (activatedHere) await this.#activate(lv);
      try {
        const now = activatedHere ? await this.#p.lvm.logicalVolumes.get(lv.vgName, lv.lvName) : lv;
        const header = await readHeaderSafely(now, this.#p.headers);
        return { lv: describe(lv, kind, id, owned, this.#p.naming), header };
      } finally {
        if (activatedHere) await this.deactivateQuarantined([`${lv.vgName}/${lv.lvName}`]);
      }
    });
  }

  /** The one quarantined LV of `kind` and `id` in the scope. */
  async #findOne(kind: QuarantinedKind, id: string, scope: VgScope): Promise<LogicalVolume> {
    const qName = quarantinedLvNameFor(kind, id, this.#p.naming);
    return oneOf((await this.listQuarantined(scope, [qName])).lvs, kind, id, qName, scope);
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
   *   name (oneOf); NotOwnedError (tags, header); FailedPreconditionError
   *   (the quarantined LV is open); CommandFailedError, LockTimeoutError.
   */
  async restore(kind: QuarantinedKind, id: string, scope: VolumeScope): Promise<RestoredLv> {
    const ownerId = parseOwnerId(scope.ownerId);
    const naming = this.#p.naming;
    const qName = quarantinedLvNameFor(kind, id, naming);
    const liveNames =
      kind === 'volume'
        ? [lvNameFor(id, naming), newLvNameFor(id, naming)]
        : [snapshotLvNameFor(id, naming)];
    return this.#p.hostLock.withLock(`restore ${qName}`, async () => {
      const { lvs: found } = await this.listQuarantined(scope, [qName]);
      const { lvs: again } = await this.#p.lvm.logicalVolumes.inGroups(scope.vgNames, {
        names: liveNames,
      });
      if (found.length === 0 && again.length > 0) {
        return this.#alreadyRestored(kind, id, again, ownerId);
      }
      const lv = oneOf(found, kind, id, qName, scope);
      if (again.length > 0) {
        const here = `${lv.vgName}/${lv.lvName}`;
        throw new AlreadyExistsError(
          `a ${kind} with ID ${id} exists again (${again.map((l) => `${l.vgName}/${l.lvName}`).join(', ')}); ` +
            `the quarantined ${here} is left as it is. To keep the live one and drop the quarantined copy: ` +
            `lvstamp quarantine purge ${here} --apply. To bring the quarantined copy back instead, first ` +
            `delete the live one (lvstamp ${kind === 'volume' ? 'delete' : 'snapshot delete'} ${id}), then restore again`,
        );
      }
      requireOwnerTags(lv, ownerId, naming, 'restore');
      // Another process may have activated and opened it: a rename under a user is refused.
      await refuseOpenLv(lv, this.#hostRoot, 'not restored, nothing was changed: close it first');
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
      if (activatedHere) await this.#activate(lv);
      const active = await this.#p.lvm.logicalVolumes.get(lv.vgName, lv.lvName);
      const reading: HeaderReading = await readHeaderSafely(active, this.#p.headers);
      const failed = failedHeaderCheck(reading, expectedId, ownerId);
      if (failed !== null || reading.status !== 'ok') {
        if (activatedHere) await this.deactivateQuarantined([`${lv.vgName}/${lv.lvName}`]);
        throw notOwned(lv, failed ?? { check: 'header', detail: 'no header' }, 'restore');
      }
      const at = parseQuarantineTag(lv.tags, naming);
      const stale = quarantineTagsOf(lv.tags, naming);
      // No tag left (a second restore after a crash) and a volume stays active: nothing to change.
      if (stale.length > 0 || kind === 'snapshot') {
        await this.#p.lvm.logicalVolumes.changeTagsAndActivation(lv.vgName, lv.lvName, {
          deleteTags: stale,
          ...(kind === 'snapshot' ? { activate: 'n' as const } : {}),
        });
      }
      const to = liveNames[0] ?? lvNameFor(id, naming);
      await this.#p.lvm.logicalVolumes.rename(lv.vgName, lv.lvName, to);
      const renamed =
        kind === 'volume' ? await this.#p.lvm.logicalVolumes.get(lv.vgName, to) : null;
      return {
        ...this.#restored(kind, id, lv, reading),
        lvName: to,
        quarantinedAtMs: at === null ? null : at * 1000,
        devicePath: renamed?.active === true ? renamed.dmPath : null,
        alreadyRestored: false,
      };
    });
  }

  /**
   * The second restore of a restored LV (restore): `again` must be exactly
   * the live `lvstamp_<id>` (`lvstamp_snap_<id>`) with this owner's tags, no
   * quarantine tag, and sector 0 of this owner with the ID (a snapshot: its
   * `lvstamp.source`); an inactive one is activated to read it (a snapshot
   * with `-K`, and deactivated again: it rests inactive; a volume stays
   * active, as a restore leaves it). Nothing else changes.
   * @throws AlreadyExistsError when it is anything else; NotOwnedError (tags).
   */
  async #alreadyRestored(
    kind: QuarantinedKind,
    id: string,
    again: readonly LogicalVolume[],
    ownerId: string,
  ): Promise<RestoredLv> {
    const naming = this.#p.naming;
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
      this.#p.lvm.logicalVolumes.changeTagsAndActivation(live.vgName, live.lvName, {
        activate: how,
        ignoreActivationSkip: kind === 'snapshot',
      });
    if (!live.active) await activate('y');
    const now = await this.#p.lvm.logicalVolumes.get(live.vgName, live.lvName);
    const reading = await readHeaderSafely(now, this.#p.headers);
    if (!live.active && kind === 'snapshot') await activate('n');
    const failed = failedHeaderCheck(reading, expectedId, ownerId);
    if (failed !== null || reading.status !== 'ok') {
      throw refuse(failed?.detail ?? 'no header');
    }
    return {
      ...this.#restored(kind, id, now, reading),
      quarantinedAtMs: null,
      devicePath: kind === 'volume' && now.active ? now.dmPath : null,
      alreadyRestored: true,
    };
  }

  /** The parts of a RestoredLv that its LV and its `ok` sector 0 give. */
  #restored(
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
          : (parseSnapshotTags(lv.tags, this.#p.naming)?.sizeBytes ?? null),
      lvSizeBytes: lv.sizeBytes,
    };
  }

  /** `lvchange -ay` of exactly this LV; a snapshot with `-K` (it carries the activation-skip flag). */
  async #activate(lv: LogicalVolume): Promise<void> {
    const parsed = parseQuarantinedLvName(lv.lvName, this.#p.naming);
    await this.#p.lvm.logicalVolumes.changeTagsAndActivation(lv.vgName, lv.lvName, {
      activate: 'y',
      ignoreActivationSkip: parsed?.kind === 'snapshot',
    });
  }

  /**
   * The LV of `ref.lvUuid`, still `ref`'s name in `ref`'s group with both
   * tags of `ref.ownerId` (DESIGN.md §2.3).
   * @throws FailedPreconditionError when it is gone or elsewhere; NotOwnedError.
   */
  async #recheck(
    ref: {
      readonly vgName: string;
      readonly lvName: string;
      readonly lvUuid: string;
      readonly ownerId: string;
    },
    act: string,
  ): Promise<LogicalVolume> {
    const ownerId = parseOwnerId(ref.ownerId);
    const [lv, ...more] = await this.#p.lvm.logicalVolumes.byUuid(ref.lvUuid);
    if (
      lv === undefined ||
      more.length > 0 ||
      lv.vgName !== ref.vgName ||
      lv.lvName !== ref.lvName
    ) {
      throw new FailedPreconditionError(
        `LV ${ref.lvUuid} is no longer exactly ${ref.vgName}/${ref.lvName}; left alone`,
      );
    }
    requireOwnerTags(lv, ownerId, this.#p.naming, act);
    return lv;
  }
}

function describe(
  lv: LogicalVolume,
  kind: QuarantinedKind,
  id: string,
  owned: boolean,
  naming: Naming,
): QuarantinedLv {
  const at = parseQuarantineTag(lv.tags, naming);
  return {
    kind,
    id,
    vgName: lv.vgName,
    lvName: lv.lvName,
    sizeBytes: lv.sizeBytes,
    thin: isThinLv(lv),
    quarantinedAtMs: at === null ? null : at * 1000,
    owned,
    sourceVolumeId:
      kind === 'snapshot' ? (parseSnapshotTags(lv.tags, naming)?.sourceVolumeId ?? null) : null,
    active: lv.active,
    tags: lv.tags,
  };
}

/**
 * The one LV of `found` (the quarantined `qName` looked up in `scope`).
 * @throws NotFoundError when there is none; InvalidArgumentError when
 *   several groups hold one: the ref is ambiguous, a usage error the
 *   person fixes with `--vg` (CLI exit 2, as purge's `lv` in several
 *   groups), before anything is changed.
 */
function oneOf(
  found: readonly LogicalVolume[],
  kind: QuarantinedKind,
  id: string,
  qName: string,
  scope: VgScope,
): LogicalVolume {
  const [lv, ...more] = found;
  if (lv === undefined) {
    throw new NotFoundError(
      `no quarantined ${kind} ${id} (${qName}) in ${scope.vgNames.join(', ') || 'no volume group'}`,
    );
  }
  if (more.length > 0) {
    throw new InvalidArgumentError(
      `${qName} is in several volume groups (${found.map((l) => l.vgName).join(', ')}); name one with --vg`,
    );
  }
  return lv;
}
