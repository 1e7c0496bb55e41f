/**
 * The names, IDs, prefixes and LV tags of DESIGN.md §3 (and the quarantined
 * names of §6 "Quarantine"): how each is made and read back. What lvm2 and
 * device-mapper allow of a name is in name-limits.ts.
 */
import { createHash } from 'node:crypto';
import { InvalidArgumentError } from './errors.js';

/**
 * Names and prefixes of one lvstamp installation (DESIGN.md §3). The
 * prefixes are configurable; DEFAULT_NAMING holds the defaults.
 */
export interface Naming {
  /** LV name prefix of a finished volume: `lvstamp_` + volume ID. */
  readonly lvPrefix: string;
  /** LV name prefix of a volume being created: `lvstamp_new_` + volume ID. */
  readonly newLvPrefix: string;
  /** LV name prefix of a snapshot: `lvstamp_snap_` + snapshot ID (docs/DESIGN.md §3). */
  readonly snapshotLvPrefix: string;
  /** LV tag set on every volume; the owner tag is `<tag>.owner=<ownerId>`. */
  readonly tag: string;
  /** device-mapper map name prefix of a data device: `lvstamp-` + volume ID. */
  readonly dmNamePrefix: string;
  /** device-mapper UUID prefix of a data device: `LVSTAMP-` + volume ID. */
  readonly dmUuidPrefix: string;
}

export const DEFAULT_NAMING: Naming = Object.freeze({
  lvPrefix: 'lvstamp_',
  newLvPrefix: 'lvstamp_new_',
  snapshotLvPrefix: 'lvstamp_snap_',
  tag: 'lvstamp',
  dmNamePrefix: 'lvstamp-',
  dmUuidPrefix: 'LVSTAMP-',
});

/** Owner ID of standalone use (no cluster): 32 zeros. */
export const STANDALONE_OWNER_ID = '0'.repeat(32);

/**
 * Default host lock path, shared by the driver, the CLI and the GC job;
 * `/run/lock` is a tmpfs, so a reboot clears it.
 */
export const DEFAULT_HOST_LOCK_PATH = '/run/lock/lvstamp/host.lock';

/**
 * Longest volume or snapshot name, in bytes of UTF-8 (DESIGN.md §3): 128,
 * the CSI spec's limit on a string field ("Field Requirements", "Size
 * Limits": fields SHALL NOT exceed 128 bytes unless the field says
 * otherwise; `CreateVolumeRequest.name` and `CreateSnapshotRequest.name`
 * do not). The header's name field is wider (HEADER_NAME_FIELD_BYTES).
 */
export const MAX_NAME_BYTES = 128;

const HEX32 = /^[0-9a-f]{32}$/;

/** True for a 32-digit lowercase hex string (a volume ID or owner ID). */
export function isHexId(value: string): boolean {
  return HEX32.test(value);
}

/**
 * Checks a volume (or snapshot) name: 1–128 bytes of UTF-8 (MAX_NAME_BYTES,
 * CSI "Size Limits"), well formed, no NUL. Every create and every name-to-ID
 * mapping runs it first, so an over-long name is refused before any command.
 * @param what the name's role for the message; default `volume name`.
 * @param maxBytes the limit; default MAX_NAME_BYTES (the header codec passes its field's width).
 * @throws InvalidArgumentError when the name is empty, too long or holds NUL.
 */
export function validateVolumeName(
  name: string,
  what = 'volume name',
  maxBytes = MAX_NAME_BYTES,
): void {
  const bytes = Buffer.byteLength(name, 'utf8');
  if (bytes < 1 || bytes > maxBytes) {
    const why = maxBytes === MAX_NAME_BYTES ? ', the CSI limit on a string field' : '';
    throw new InvalidArgumentError(
      `${what} must be 1–${maxBytes} bytes of UTF-8${why}, got ${bytes}`,
    );
  }
  if (name.includes('\0')) throw new InvalidArgumentError(`${what} must not contain NUL`);
  if (Buffer.from(name, 'utf8').toString('utf8') !== name) {
    throw new InvalidArgumentError(`${what} is not well-formed Unicode`);
  }
}

/**
 * The volume ID of a name: the first 16 bytes of SHA-256 over its UTF-8
 * bytes, as 32 lowercase hex digits (DESIGN.md §3). Deterministic, so that a
 * retried create finds its volume.
 * @throws InvalidArgumentError when the name is not a valid volume name.
 */
export function volumeIdForName(name: string): string {
  validateVolumeName(name);
  return createHash('sha256').update(name, 'utf8').digest('hex').slice(0, 32);
}

/**
 * The snapshot ID of a snapshot name: the volume ID's rule (first 16 bytes of
 * SHA-256 over the UTF-8 name, 32 lowercase hex digits) in a name space of its
 * own, since snapshot LVs carry their own prefix (docs/DESIGN.md §3). A
 * snapshot name follows the volume name's rules (1–128 bytes, no NUL).
 * @throws InvalidArgumentError when the name is not a valid name.
 */
export function snapshotIdForName(name: string): string {
  validateVolumeName(name, 'snapshot name');
  return volumeIdForName(name);
}

/**
 * Checks and normalises an owner ID (32 hex digits, case-insensitive).
 * @throws InvalidArgumentError when it is not 32 hex digits.
 */
export function parseOwnerId(value: string): string {
  const lower = value.trim().toLowerCase();
  if (!isHexId(lower))
    throw new InvalidArgumentError(`owner ID must be 32 hex digits, got "${value}"`);
  return lower;
}

/** `lvstamp_<id>`: the LV name of a finished volume. */
export function lvNameFor(volumeId: string, naming: Naming = DEFAULT_NAMING): string {
  return naming.lvPrefix + volumeId;
}

/** `lvstamp_new_<id>`: the LV name of a volume whose create is in progress. */
export function newLvNameFor(volumeId: string, naming: Naming = DEFAULT_NAMING): string {
  return naming.newLvPrefix + volumeId;
}

/** The longest prefix shared by finished and in-progress LV names (`lvstamp_`): one `-S` for both. */
export function commonLvPrefix(naming: Naming = DEFAULT_NAMING): string {
  const a = naming.lvPrefix;
  const b = naming.newLvPrefix;
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i += 1;
  return a.slice(0, i);
}

/** `lvstamp_snap_<id>`: the LV name of a snapshot (docs/DESIGN.md §3). */
export function snapshotLvNameFor(snapshotId: string, naming: Naming = DEFAULT_NAMING): string {
  return naming.snapshotLvPrefix + snapshotId;
}

/** Reads `lvstamp_snap_<id>` with a well-formed ID; anything else is null. */
export function parseSnapshotLvName(
  lvName: string,
  naming: Naming = DEFAULT_NAMING,
): string | null {
  if (!lvName.startsWith(naming.snapshotLvPrefix)) return null;
  const id = lvName.slice(naming.snapshotLvPrefix.length);
  return isHexId(id) ? id : null;
}

/** `lvstamp-<id>`: the device-mapper name of the data device. */
export function dmNameFor(volumeId: string, naming: Naming = DEFAULT_NAMING): string {
  return naming.dmNamePrefix + volumeId;
}

/** `LVSTAMP-<id>`: the device-mapper UUID of the data device. */
export function dmUuidFor(volumeId: string, naming: Naming = DEFAULT_NAMING): string {
  return naming.dmUuidPrefix + volumeId;
}

/** `lvstamp.owner=<ownerId>`: the LV tag recording the owner. */
export function ownerTagFor(ownerId: string, naming: Naming = DEFAULT_NAMING): string {
  return `${naming.tag}.owner=${ownerId}`;
}

/**
 * The LV tags a snapshot carries besides `lvstamp` and the owner tag
 * (docs/DESIGN.md §3): the source volume's ID, its capacity in bytes and
 * the creation time in Unix milliseconds, written once by the `lvcreate`.
 */
export interface SnapshotTags {
  readonly sourceVolumeId: string;
  readonly sizeBytes: number;
  readonly createdMs: number;
}

/**
 * `lvstamp.source=<id>`, `lvstamp.size=<bytes>`, `lvstamp.created=<ms>`, in
 * that order (docs/DESIGN.md §3).
 */
export function snapshotTagsFor(tags: SnapshotTags, naming: Naming = DEFAULT_NAMING): string[] {
  return [
    `${naming.tag}.source=${tags.sourceVolumeId}`,
    `${naming.tag}.size=${tags.sizeBytes}`,
    `${naming.tag}.created=${tags.createdMs}`,
  ];
}

/**
 * Reads the snapshot tags from an LV's tag list; null unless each of the
 * three is present exactly once and well formed (a 32-hex source ID, a
 * non-negative safe integer size and time).
 */
export function parseSnapshotTags(
  lvTags: readonly string[],
  naming: Naming = DEFAULT_NAMING,
): SnapshotTags | null {
  const one = (key: string): string | null => {
    const prefix = `${naming.tag}.${key}=`;
    const [first, ...more] = lvTags.filter((t) => t.startsWith(prefix));
    return first !== undefined && more.length === 0 ? first.slice(prefix.length) : null;
  };
  const integer = (text: string | null): number | null => {
    if (text === null || !/^(0|[1-9][0-9]*)$/.test(text)) return null;
    const value = Number(text);
    return Number.isSafeInteger(value) ? value : null;
  };
  const source = one('source');
  const sizeBytes = integer(one('size'));
  const createdMs = integer(one('created'));
  if (source === null || !isHexId(source) || sizeBytes === null || createdMs === null) return null;
  return { sourceVolumeId: source, sizeBytes, createdMs };
}

/**
 * `lvstamp.from=snapshot.<id>` or `lvstamp.from=volume.<id>`: the tag of a
 * volume restored from a snapshot or cloned from a volume
 * (docs/DESIGN.md §3, docs/SNAPSHOTS.md §8).
 */
export function fromTagFor(
  source: { readonly kind: 'snapshot' | 'volume'; readonly id: string },
  naming: Naming = DEFAULT_NAMING,
): string {
  return `${naming.tag}.from=${source.kind}.${source.id}`;
}

/** Reads the `lvstamp.from=…` tag; null when absent, repeated or malformed. */
export function parseFromTag(
  lvTags: readonly string[],
  naming: Naming = DEFAULT_NAMING,
): { readonly kind: 'snapshot' | 'volume'; readonly id: string } | null {
  const prefix = `${naming.tag}.from=`;
  const [first, ...more] = lvTags.filter((t) => t.startsWith(prefix));
  if (first === undefined || more.length > 0) return null;
  const value = first.slice(prefix.length);
  for (const kind of ['snapshot', 'volume'] as const) {
    const id = value.startsWith(`${kind}.`) ? value.slice(kind.length + 1) : '';
    if (isHexId(id)) return { kind, id };
  }
  return null;
}

/**
 * Which kind of LV a quarantined name holds (DESIGN.md §6 "Quarantine"):
 * a volume `lvstamp_q_<id>` or a snapshot `lvstamp_qs_<id>`.
 */
export type QuarantinedKind = 'volume' | 'snapshot';

/**
 * `lvstamp_q_<id>` (a volume) or `lvstamp_qs_<id>` (a snapshot): the LV name
 * of a quarantined LV, derived from the finished volume prefix so that no
 * look-up of `lvstamp_<id>`, `lvstamp_new_<id>` or `lvstamp_snap_<id>`
 * matches it (DESIGN.md §6 "Quarantine"). Both are shorter than
 * `lvstamp_snap_<id>`, so vgNameProblem's limits hold for them.
 */
export function quarantinedLvNameFor(
  kind: QuarantinedKind,
  id: string,
  naming: Naming = DEFAULT_NAMING,
): string {
  return quarantinePrefixOf(kind, naming) + id;
}

/** The prefix of quarantined LVs of `kind`: `lvstamp_q_` or `lvstamp_qs_`. */
export function quarantinePrefixOf(kind: QuarantinedKind, naming: Naming = DEFAULT_NAMING): string {
  return `${naming.lvPrefix}${kind === 'volume' ? 'q_' : 'qs_'}`;
}

/** Reads `lvstamp_q_<id>` or `lvstamp_qs_<id>` with a well-formed ID; anything else is null. */
export function parseQuarantinedLvName(
  lvName: string,
  naming: Naming = DEFAULT_NAMING,
): { readonly kind: QuarantinedKind; readonly id: string } | null {
  for (const kind of ['volume', 'snapshot'] as const) {
    const prefix = quarantinePrefixOf(kind, naming);
    if (lvName.startsWith(prefix)) {
      const id = lvName.slice(prefix.length);
      return isHexId(id) ? { kind, id } : null;
    }
  }
  return null;
}

/**
 * `lvstamp.quarantined=<Unix seconds>`: when an LV was put in quarantine
 * (DESIGN.md §6 "Quarantine"). Seconds, because an lvm tag is short text
 * and a window of days needs no finer time.
 */
export function quarantineTagFor(atSeconds: number, naming: Naming = DEFAULT_NAMING): string {
  return `${naming.tag}.quarantined=${atSeconds}`;
}

/**
 * Every `lvstamp.quarantined=…` tag of an LV, as they stand (a crash may
 * never leave two, but a person may).
 */
export function quarantineTagsOf(
  lvTags: readonly string[],
  naming: Naming = DEFAULT_NAMING,
): string[] {
  return lvTags.filter((t) => t.startsWith(`${naming.tag}.quarantined=`));
}

/**
 * Reads the quarantine time, Unix seconds; null when the tag is absent,
 * repeated or not a non-negative safe integer.
 */
export function parseQuarantineTag(
  lvTags: readonly string[],
  naming: Naming = DEFAULT_NAMING,
): number | null {
  const [first, ...more] = quarantineTagsOf(lvTags, naming);
  if (first === undefined || more.length > 0) return null;
  const text = first.slice(`${naming.tag}.quarantined=`.length);
  if (!/^(0|[1-9][0-9]*)$/.test(text)) return null;
  const value = Number(text);
  return Number.isSafeInteger(value) ? value : null;
}

/** What an LV name says about itself. */
export interface ParsedLvName {
  readonly volumeId: string;
  /** True for `lvstamp_new_<id>`: an interrupted or running create. */
  readonly creating: boolean;
}

/**
 * Reads an LV name: `lvstamp_new_<id>` or `lvstamp_<id>` with a well-formed
 * ID. Anything else, including a prefixed name with a malformed ID, is null.
 */
export function parseLvName(lvName: string, naming: Naming = DEFAULT_NAMING): ParsedLvName | null {
  for (const [prefix, creating] of [
    [naming.newLvPrefix, true],
    [naming.lvPrefix, false],
  ] as const) {
    if (lvName.startsWith(prefix)) {
      const id = lvName.slice(prefix.length);
      if (isHexId(id)) return { volumeId: id, creating };
    }
  }
  return null;
}

/** Reads a dm UUID `LVSTAMP-<id>`; anything else is null. */
export function parseDmUuid(uuid: string, naming: Naming = DEFAULT_NAMING): string | null {
  if (!uuid.startsWith(naming.dmUuidPrefix)) return null;
  const id = uuid.slice(naming.dmUuidPrefix.length);
  return isHexId(id) ? id : null;
}

/**
 * The device-mapper name lvm gives an active LV: the VG name and the LV
 * name, each with every `-` doubled, joined by one `-` (lvm2
 * `dm_build_dm_name`; `vg-a/lv` → `vg--a-lv`).
 */
export function lvDmName(vgName: string, lvName: string): string {
  return `${vgName.replaceAll('-', '--')}-${lvName.replaceAll('-', '--')}`;
}
