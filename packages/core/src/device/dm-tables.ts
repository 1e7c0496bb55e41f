/**
 * The device-mapper tables of data devices (DESIGN.md §4): the linear table
 * lvstamp loads, and the parsers of what `dmsetup table`, `dmsetup table
 * --concise` and `dmsetup info -c` print (dmsetup(8)).
 */
import {
  FailedPreconditionError,
  InvalidArgumentError,
  UnparseableOutputError,
} from '../errors.js';
import type { CommandResult } from '../exec/runner.js';
import { SECTOR_BYTES } from '../header/constants.js';
import type { DataDeviceSource, DmMap, DmTableEntry, LinearTable } from './types.js';

/** What `dmsetup info`/`dmsetup table` print when no map exists at all. */
export const NO_DEVICES = 'No devices found';

/**
 * The linear table of a data device over `lv` (DESIGN.md §4):
 * `0 <dataBytes/512> linear <major>:<minor> <dataOffsetBytes/512>`, where
 * dataBytes defaults to sizeBytes − dataOffsetBytes (a v1 volume).
 * @throws InvalidArgumentError when the data offset is not a positive whole
 *   number of 512-byte sectors, or the data area is empty, negative, beyond
 *   the LV's end or not a whole number of sectors.
 * @throws FailedPreconditionError when the LV is inactive (no device number).
 */
export function linearTableFor(
  lv: DataDeviceSource,
  dataOffsetBytes: number,
  dataBytes: number = lv.sizeBytes - dataOffsetBytes,
): LinearTable {
  if (
    !Number.isSafeInteger(dataOffsetBytes) ||
    dataOffsetBytes <= 0 ||
    dataOffsetBytes % SECTOR_BYTES !== 0
  ) {
    throw new InvalidArgumentError(
      `data offset must be a positive multiple of ${SECTOR_BYTES} bytes, got ${dataOffsetBytes}`,
    );
  }
  if (!Number.isSafeInteger(lv.sizeBytes)) {
    throw new InvalidArgumentError(`LV size must be a whole number of bytes, got ${lv.sizeBytes}`);
  }
  if (!Number.isSafeInteger(dataBytes) || dataBytes <= 0) {
    throw new InvalidArgumentError(
      `LV of ${lv.sizeBytes} bytes has no data area of ${dataBytes} bytes after the ${dataOffsetBytes}-byte offset`,
    );
  }
  if (dataOffsetBytes + dataBytes > lv.sizeBytes) {
    throw new InvalidArgumentError(
      `a data area of ${dataBytes} bytes at ${dataOffsetBytes} bytes does not fit the LV of ${lv.sizeBytes} bytes`,
    );
  }
  if (dataBytes % SECTOR_BYTES !== 0) {
    throw new InvalidArgumentError(
      `data area of ${dataBytes} bytes is not a whole number of ${SECTOR_BYTES}-byte sectors`,
    );
  }
  if (
    lv.kernelMajor === null ||
    lv.kernelMinor === null ||
    lv.kernelMajor < 0 ||
    lv.kernelMinor < 0
  ) {
    throw new FailedPreconditionError('the LV is not active (it has no kernel device number)');
  }
  return {
    startSector: 0,
    sectors: dataBytes / SECTOR_BYTES,
    major: lv.kernelMajor,
    minor: lv.kernelMinor,
    offsetSectors: dataOffsetBytes / SECTOR_BYTES,
  };
}

/** `<start> <sectors> linear <major>:<minor> <offset>`, as dmsetup takes and prints it. */
export function formatLinearTable(t: LinearTable): string {
  return `${t.startSector} ${t.sectors} linear ${t.major}:${t.minor} ${t.offsetSectors}`;
}

export function sameTable(a: LinearTable, b: LinearTable): boolean {
  return formatLinearTable(a) === formatLinearTable(b);
}

const LINEAR_LINE = /^(\d+) (\d+) linear (\d+):(\d+) (\d+)$/;

/**
 * Parses the output of `dmsetup table <name>` for a single-segment linear map.
 * @throws UnparseableOutputError for more than one line, another target, or
 *   malformed numbers.
 */
export function parseLinearTable(result: CommandResult): LinearTable {
  return linearTableOfSegments(
    result,
    result.stdout.split('\n').filter((l) => l.trim() !== ''),
  );
}

/** True when `segments` is exactly one `linear` segment (linearTableOfSegments accepts it). */
export function isOneLinear(segments: readonly string[]): boolean {
  return segments.length === 1 && LINEAR_LINE.test(segments[0]?.trim() ?? '');
}

/**
 * The table of one map from its segments (one `<start> <length> <target>
 * <args>` each), by the same rule for `dmsetup table <name>` and for one
 * map of `dmsetup table --concise`: exactly one `linear` segment.
 */
export function linearTableOfSegments(
  result: CommandResult,
  segments: readonly string[],
): LinearTable {
  const line = segments[0]?.trim() ?? '';
  const m = segments.length === 1 ? LINEAR_LINE.exec(line) : null;
  if (m === null) {
    throw new UnparseableOutputError(
      result,
      `expected one "linear" segment, got ${JSON.stringify(segments.join('\n'))}`,
    );
  }
  const [startSector, sectors, major, minor, offsetSectors] = m
    .slice(1)
    .map((s) => parseCount(result, s));
  return {
    startSector: startSector ?? 0,
    sectors: sectors ?? 0,
    major: major ?? 0,
    minor: minor ?? 0,
    offsetSectors: offsetSectors ?? 0,
  };
}

/**
 * Parses `dmsetup table --concise` (dmsetup(8), CONCISE FORMAT): devices
 * separated by `;`, each `<name>,<uuid>,<minor>,<flags>[,<segment>...]`
 * with `\,` `\;` `\\` escaping those characters in any field; one line in
 * all, ended by a newline (only that newline is dropped; nothing is split
 * but on unescaped separators, so a name may hold anything). A map without
 * a live table has no segment field. Exactly "No devices found" is an empty
 * list. Segments are returned verbatim (`0 2048 error ` keeps its trailing
 * blank), not interpreted.
 * Shapes recorded in fixtures/device/recorded/ (lvm2 2.03.16).
 * @returns the maps in dmsetup's order; `readOnly` from the flag `ro`/`rw`.
 * @throws UnparseableOutputError for empty output, a dangling backslash, a
 *   device with fewer than four fields or an empty name, a minor that is not
 *   a number, a flag other than `ro`/`rw`, or an empty segment.
 */
export function parseConciseTables(result: CommandResult): DmTableEntry[] {
  const text = result.stdout.endsWith('\n') ? result.stdout.slice(0, -1) : result.stdout;
  if (text.trim() === NO_DEVICES) return [];
  if (text === '') throw new UnparseableOutputError(result, 'empty output');
  const devices: string[][] = [];
  let fields: string[] = [];
  let field = '';
  let escaped = false;
  for (const c of text) {
    if (escaped) {
      field += c;
      escaped = false;
    } else if (c === '\\') {
      escaped = true;
    } else if (c === ',') {
      fields.push(field);
      field = '';
    } else if (c === ';') {
      devices.push([...fields, field]);
      fields = [];
      field = '';
    } else {
      field += c;
    }
  }
  if (escaped) throw new UnparseableOutputError(result, 'dangling backslash at the end');
  devices.push([...fields, field]);
  return devices.map((device) => {
    const [name, uuid, minor, flags, ...segments] = device;
    if (
      name === undefined ||
      name === '' ||
      uuid === undefined ||
      minor === undefined ||
      (flags !== 'rw' && flags !== 'ro') ||
      segments.some((segment) => segment.trim() === '')
    ) {
      throw new UnparseableOutputError(
        result,
        `expected name,uuid,minor,rw|ro[,segment...], got ${JSON.stringify(device.join(','))}`,
      );
    }
    return { name, uuid, minor: parseCount(result, minor), readOnly: flags === 'ro', segments };
  });
}

/**
 * Parses `dmsetup info -c --noheadings --separator '|' -o
 * name,uuid,major,minor,open`. Exactly "No devices found" is an empty list;
 * empty output, a line with other than five fields, or a non-numeric number
 * is UnparseableOutputError (never read as "no maps").
 */
export function parseDmInfo(result: CommandResult): DmMap[] {
  const lines = result.stdout.split('\n').filter((l) => l.trim() !== '');
  if (lines.length === 1 && lines[0]?.trim() === NO_DEVICES) return [];
  if (lines.length === 0) throw new UnparseableOutputError(result, 'empty output');
  return lines.map((line) => {
    const fields = line.split('|').map((f) => f.trim());
    const [name, uuid, major, minor, open] = fields;
    if (
      fields.length !== 5 ||
      name === undefined ||
      name === '' ||
      uuid === undefined ||
      major === undefined ||
      minor === undefined ||
      open === undefined
    ) {
      throw new UnparseableOutputError(
        result,
        `expected name|uuid|major|minor|open, got ${JSON.stringify(line)}`,
      );
    }
    return {
      name,
      uuid,
      major: parseCount(result, major),
      minor: parseCount(result, minor),
      openCount: parseCount(result, open),
    };
  });
}

function parseCount(result: CommandResult, text: string): number {
  const value = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(value)) {
    throw new UnparseableOutputError(
      result,
      `expected a non-negative integer, got ${JSON.stringify(text)}`,
    );
  }
  return value;
}
