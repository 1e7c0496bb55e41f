/**
 * The read-only side of the quarantine, for people (DESIGN.md §6
 * "Quarantine" "Capacity"): `lvstamp list --quarantined` and `lvstamp
 * quarantine inspect`.
 */
import { isThinLv } from '../lvm/thin-snapshots.js';
import type { LogicalVolume, UnusableGroup } from '../lvm/types.js';
import {
  parseOwnerId,
  parseQuarantineTag,
  parseQuarantinedLvName,
  parseSnapshotTags,
  quarantinedLvNameFor,
  type Naming,
  type QuarantinedKind,
} from '../naming.js';
import { readHeaderSafely, type HeaderReading } from './header-reading.js';
import { failedTagCheck } from './ownership.js';
import type { CoreParts } from './parts.js';
import { activateQuarantinedLv, deactivateQuarantined } from './quarantine-activation.js';
import { findQuarantined, listQuarantined } from './quarantine-lookup.js';
import type { VolumeScope } from './types.js';

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

/**
 * The quarantined LVs of the scope, sorted by kind then ID, for people,
 * and the groups lvm refuses to change (listQuarantined).
 * @throws as listQuarantined.
 */
export async function listQuarantinedLvs(
  p: CoreParts,
  scope: VolumeScope,
): Promise<{ readonly quarantined: QuarantinedLv[]; readonly unusableGroups: UnusableGroup[] }> {
  const naming = p.naming;
  const { lvs, unusableGroups } = await listQuarantined(p, scope);
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
 * One quarantined LV with its sector 0, for `lvstamp quarantine inspect`:
 * an inactive LV with both tags is activated (a snapshot with `-K`) under
 * the host lock for the read and deactivated again; one without them is
 * not activated, and its header is `unreadable`.
 * @throws NotFoundError when no such quarantined LV is in the scope;
 *   InvalidArgumentError when several groups hold one (oneQuarantined).
 */
export async function inspectQuarantined(
  p: CoreParts,
  kind: QuarantinedKind,
  id: string,
  scope: VolumeScope,
): Promise<{ readonly lv: QuarantinedLv; readonly header: HeaderReading }> {
  const ownerId = parseOwnerId(scope.ownerId);
  const qName = quarantinedLvNameFor(kind, id, p.naming);
  return p.hostLock.withLock(`inspect ${qName}`, async () => {
    const lv = await findQuarantined(p, kind, id, scope);
    const owned = failedTagCheck(lv, ownerId, p.naming) === null;
    const activatedHere = !lv.active && owned;
    if (activatedHere) await activateQuarantinedLv(p, lv);
    try {
      const now = activatedHere ? await p.lvm.logicalVolumes.get(lv.vgName, lv.lvName) : lv;
      const header = await readHeaderSafely(now, p.headers);
      return { lv: describe(lv, kind, id, owned, p.naming), header };
    } finally {
      if (activatedHere) await deactivateQuarantined(p, [`${lv.vgName}/${lv.lvName}`]);
    }
  });
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
