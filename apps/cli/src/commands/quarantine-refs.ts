/**
 * The references `lvstamp quarantine` takes (DESIGN.md §6 "Quarantine"):
 * `[<vg>/]<ref>`, where `<ref>` is a PersistentVolume (VolumeSnapshot)
 * name, an ID, or a quarantined LV's name.
 */
import {
  isHexId,
  parseQuarantinedLvName,
  quarantinedLvNameFor,
  snapshotIdForName,
  volumeIdForName,
  type QuarantinedKind,
} from '@lvstamp/core';
import { UsageError } from '../errors.js';

/**
 * `[<vg>/]<rest>` split: the group (the prefix, else `--vg`), whether the
 * reference carried it, and the rest.
 * @throws UsageError for an empty part, a second `/`, or a prefix that
 *   differs from `--vg`.
 */
function splitRef(
  ref: string,
  vgOption: string | undefined,
): { vg: string | undefined; prefixed: boolean; rest: string } {
  const parts = ref.split('/');
  if (parts.length > 2 || parts.some((part) => part === '')) {
    throw new UsageError(`${JSON.stringify(ref)} is not [<vg>/]<name or ID>`);
  }
  const [first, second] = parts as [string, string | undefined];
  if (second === undefined) return { vg: vgOption, prefixed: false, rest: first };
  if (vgOption !== undefined && first !== vgOption) {
    throw new UsageError(`${ref} names volume group ${first}, --vg ${vgOption}: give one`);
  }
  return { vg: first, prefixed: true, rest: second };
}

/**
 * The quarantined LV a name of that form means (`lvstamp_q_<id>`,
 * `lvstamp_qs_<id>`, any case: lvstamp's names are lowercase), or null for
 * any other reference.
 * @throws UsageError for a name with the prefix and no well-formed ID.
 */
function quarantinedLvRef(rest: string): { kind: QuarantinedKind; id: string } | null {
  if (!/^lvstamp_qs?_/i.test(rest)) return null;
  const lv = parseQuarantinedLvName(rest.toLowerCase());
  if (lv === null) {
    throw new UsageError(
      `${rest} is no quarantined LV name (lvstamp_q_<id> or lvstamp_qs_<id>, the ID 32 hex digits)`,
    );
  }
  return lv;
}

/**
 * What a quarantine reference names: `[<vg>/]<ref>`, where `<ref>` is a
 * PersistentVolume (VolumeSnapshot) name, an ID, or the LV name `list
 * --quarantined` prints (`lvstamp_q_<id>`, `lvstamp_qs_<id>`, which also
 * tells the kind). A `<vg>/` prefix is the group, as `--vg` is.
 * @throws UsageError as splitRef and quarantinedLvRef, or when the LV
 *   name's kind contradicts `--snapshot`.
 */
export function quarantineRef(
  ref: string,
  opts: { readonly snapshot: boolean; readonly vg?: string },
): { kind: QuarantinedKind; id: string; vg: string | undefined; byLvName: boolean } {
  const { vg, rest } = splitRef(ref, opts.vg);
  const lv = quarantinedLvRef(rest);
  if (lv !== null) {
    if (lv.kind === 'volume' && opts.snapshot) {
      throw new UsageError(
        `${rest} is a quarantined volume (lvstamp_qs_<id> is a snapshot): drop --snapshot`,
      );
    }
    return { ...lv, vg, byLvName: true };
  }
  const kind: QuarantinedKind = opts.snapshot ? 'snapshot' : 'volume';
  return { kind, id: idOf(rest, kind), vg, byLvName: false };
}

/**
 * A purge argument as the GC names quarantined LVs: the LV name
 * `lvstamp_q_<id>` (`lvstamp_qs_<id>`), and the group when the argument
 * named one with `<vg>/`; a volume's PV name or ID means its
 * `lvstamp_q_<id>` (a snapshot is named by its LV name).
 * @throws UsageError as splitRef and quarantinedLvRef.
 */
export function purgeRef(
  arg: string,
  vgOption: string | undefined,
): { vg: string | undefined; lvName: string } {
  const { vg, prefixed, rest } = splitRef(arg, vgOption);
  const lv = quarantinedLvRef(rest) ?? { kind: 'volume' as const, id: idOf(rest, 'volume') };
  return { vg: prefixed ? vg : undefined, lvName: quarantinedLvNameFor(lv.kind, lv.id) };
}

/** A volume ID, or the ID a volume (snapshot) name maps to (DESIGN.md §3). */
function idOf(ref: string, kind: QuarantinedKind): string {
  const lower = ref.toLowerCase();
  if (isHexId(lower)) return lower;
  return kind === 'volume' ? volumeIdForName(ref) : snapshotIdForName(ref);
}
