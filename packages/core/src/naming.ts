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
  tag: 'lvstamp',
  dmNamePrefix: 'lvstamp-',
  dmUuidPrefix: 'LVSTAMP-',
});

/** Owner ID of standalone use (no cluster): 32 zeros. */
export const STANDALONE_OWNER_ID = '0'.repeat(32);

/** Longest volume name in bytes of UTF-8 (DESIGN.md §3, header field `name`). */
export const MAX_NAME_BYTES = 256;

const HEX32 = /^[0-9a-f]{32}$/;

/** True for a 32-digit lowercase hex string (a volume ID or owner ID). */
export function isHexId(value: string): boolean {
  return HEX32.test(value);
}

/**
 * Checks a volume name: 1–256 bytes of UTF-8, no NUL.
 * @throws InvalidArgumentError when the name is empty, too long or holds NUL.
 */
export function validateVolumeName(name: string): void {
  const bytes = Buffer.byteLength(name, 'utf8');
  if (bytes < 1 || bytes > MAX_NAME_BYTES) {
    throw new InvalidArgumentError(
      `volume name must be 1–${MAX_NAME_BYTES} bytes of UTF-8, got ${bytes}`,
    );
  }
  if (name.includes('\0')) throw new InvalidArgumentError('volume name must not contain NUL');
  if (Buffer.from(name, 'utf8').toString('utf8') !== name) {
    throw new InvalidArgumentError('volume name is not well-formed Unicode');
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
