/**
 * The host-wide device-mapper queries behind DataDeviceManager's listings,
 * one dmsetup process each however many maps exist (dmsetup(8)): every map
 * with its open count, and the live tables of the maps asked for.
 */
import { UnparseableOutputError } from '../errors.js';
import type { CommandRunner } from '../exec/runner.js';
import {
  isOneLinear,
  linearTableOfSegments,
  parseConciseTables,
  parseDmInfo,
} from './dm-tables.js';
import type { DmMap, DmTableEntry, LinearTable } from './types.js';

/**
 * Field list of the one `dmsetup info` query behind listDmMaps; the
 * separator `|` never occurs in lvstamp names, UUIDs or numbers.
 */
const INFO_ARGV = [
  'dmsetup',
  'info',
  '-c',
  '--noheadings',
  '--separator',
  '|',
  '-o',
  'name,uuid,major,minor,open',
] as const;

/**
 * The one command behind linearTablesOf: the live table of every map on the
 * host. dmsetup(8), `table`: "With --concise, the output is presented
 * concisely on a single line. Commas then separate the name, uuid, minor
 * device number, flags ('ro' or 'rw') and the table (if present).
 * Semi-colons separate devices. Backslashes escape any commas, semi-colons
 * or backslashes." Chosen over plain `dmsetup table`, whose
 * `<name>: <segment>` lines are ambiguous (a map may be named
 * `lvstamp-<id>: 0 8 linear 7:0 0`; recorded in
 * fixtures/device/recorded/mixed-table.stdout) and carry no UUID.
 * `-S/--select` is a general option of dmsetup(8) but not in `table`'s
 * synopsis; the recorded `table -S 'uuid=~^LVSTAMP-'` does filter, but it
 * would have to quote the configurable UUID prefix as a regex and saves
 * only parsing. `--target linear` would hide the very segments that make a
 * map unusable. So neither is used.
 */
const TABLES_ARGV = ['dmsetup', 'table', '--concise'] as const;

/**
 * Every device-mapper map on the host, from one `dmsetup info -c` (INFO_ARGV).
 * @throws UnparseableOutputError for any line that is not five well-formed fields.
 */
export async function listDmMaps(runner: CommandRunner): Promise<DmMap[]> {
  return parseDmInfo(await runner.run(INFO_ARGV));
}

/**
 * The live tables of the maps whose UUIDs are the keys of `volumeIdOf`,
 * keyed by the volume ID each maps to, from one `dmsetup table --concise`
 * (TABLES_ARGV; none when `volumeIdOf` is empty). A map that is absent, has
 * no live table or is not one linear segment gets null (the rules of
 * DataDeviceManager.tables).
 * @throws UnparseableOutputError when the output is not the concise format or
 *   two maps carry an asked-for UUID; CommandFailedError when dmsetup fails.
 */
export async function linearTablesOf(
  runner: CommandRunner,
  volumeIdOf: ReadonlyMap<string, string>,
): Promise<Map<string, LinearTable | null>> {
  const tables = new Map<string, LinearTable | null>();
  if (volumeIdOf.size === 0) return tables;
  const result = await runner.run(TABLES_ARGV);
  const found = new Map<string, DmTableEntry>();
  for (const entry of parseConciseTables(result)) {
    if (!volumeIdOf.has(entry.uuid)) continue;
    if (found.has(entry.uuid)) {
      throw new UnparseableOutputError(result, `two maps carry UUID ${entry.uuid}`);
    }
    found.set(entry.uuid, entry);
  }
  for (const [uuid, id] of volumeIdOf) {
    const entry = found.get(uuid);
    // A map that is not one linear segment (an error or zero target after `dmsetup
    // wipe_table`, several segments) is not the layout of a data device: null, which the GC
    // keeps with a warning (DESIGN.md §6 rule 1) instead of stopping at the first such map.
    tables.set(
      id,
      entry === undefined || entry.segments.length === 0 || !isOneLinear(entry.segments)
        ? null
        : linearTableOfSegments(result, entry.segments),
    );
  }
  return tables;
}
