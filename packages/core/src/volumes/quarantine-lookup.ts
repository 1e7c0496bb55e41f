/**
 * The look-ups every quarantine operation shares (DESIGN.md §6
 * "Quarantine"): the quarantined LVs of a scope from one look-up, and the
 * one quarantined LV of an ID.
 */
import { InvalidArgumentError, NotFoundError } from '../errors.js';
import type { LogicalVolume, UnusableGroup } from '../lvm/types.js';
import { parseQuarantinedLvName, quarantinedLvNameFor, type QuarantinedKind } from '../naming.js';
import { unusableGroupsIn } from './lookup.js';
import type { CoreParts } from './parts.js';
import type { VgScope } from './types.js';

/** One look-up of quarantined LVs (listQuarantined). */
export interface QuarantinedLook {
  readonly lvs: LogicalVolume[];
  /** The looked-up groups lvm refuses to change, from the same report. */
  readonly unusableGroups: UnusableGroup[];
}

/**
 * `lvstamp_q_<id>` and `lvstamp_qs_<id>` LVs of the scope's volume groups
 * (one look-up of the prefix `lvstamp_q`), whatever their tags; with
 * `lvNames`, only those names. `unusableGroups`: the groups of that
 * look-up lvm refuses to change (VolumeGroups.unusableIn, from the same
 * report), whose LVs nothing may change (DESIGN.md §6 rule 1).
 * @throws as LogicalVolumes.inGroups: a failure is never an empty list.
 */
export async function listQuarantined(
  p: CoreParts,
  scope: VgScope,
  lvNames?: readonly string[],
): Promise<QuarantinedLook> {
  if (lvNames !== undefined && lvNames.length === 0) return { lvs: [], unusableGroups: [] };
  const prefix = quarantinedLvNameFor('volume', '', p.naming).slice(0, -1);
  const report = await p.lvm.logicalVolumes.inGroups(
    scope.vgNames,
    lvNames === undefined ? { prefix } : { names: lvNames },
  );
  return {
    lvs: report.lvs.filter((lv) => parseQuarantinedLvName(lv.lvName, p.naming) !== null),
    unusableGroups: await unusableGroupsIn(p, report),
  };
}

/**
 * The one quarantined LV of `kind` and `id` in the scope.
 * @throws as oneQuarantined; as listQuarantined.
 */
export async function findQuarantined(
  p: CoreParts,
  kind: QuarantinedKind,
  id: string,
  scope: VgScope,
): Promise<LogicalVolume> {
  const qName = quarantinedLvNameFor(kind, id, p.naming);
  return oneQuarantined((await listQuarantined(p, scope, [qName])).lvs, kind, id, qName, scope);
}

/**
 * The one LV of `found` (the quarantined `qName` looked up in `scope`).
 * @throws NotFoundError when there is none; InvalidArgumentError when
 *   several groups hold one: the ref is ambiguous, a usage error the
 *   person fixes with `--vg` (CLI exit 2, as purge's `lv` in several
 *   groups), before anything is changed.
 */
export function oneQuarantined(
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
