import { lstat, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  UnparseableOutputError,
} from '../errors.js';
import type { CommandResult, CommandRunner } from '../exec/runner.js';
import { DATA_OFFSET_BYTES, SECTOR_BYTES } from '../header/constants.js';
import {
  DEFAULT_NAMING,
  dmNameFor,
  dmUuidFor,
  isHexId,
  parseDmUuid,
  type Naming,
} from '../naming.js';
import { blockDeviceNumber, formatDeviceNumber, sameDevice } from '../os/devnum.js';
import { errorCode, errorMessage } from '../os/errno.js';
import { deviceUsersText } from '../os/holders.js';
import type {
  DataDevice,
  DataDeviceMap,
  DataDeviceRef,
  DataDeviceSource,
  DeviceNumber,
  DmMap,
  DmTableEntry,
  LinearTable,
} from './types.js';

/** Where `dmsetup mknodes` puts device nodes (libdevmapper's dm dir). */
export const MAPPER_DIR = '/dev/mapper';

/**
 * Field list of the one `dmsetup info` query behind listAll/list; the
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
 * The one command behind `tables()`: the live table of every map on the
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

/** What `dmsetup info`/`dmsetup table` print when no map exists at all. */
const NO_DEVICES = 'No devices found';

export interface DataDeviceManagerOptions {
  readonly runner: CommandRunner;
  /** Name and UUID prefixes; default DEFAULT_NAMING (`lvstamp-`, `LVSTAMP-`). */
  readonly naming?: Naming;
  /**
   * The device number of the block device node at a path, or null when the
   * path does not exist; throws FailedPreconditionError for anything else.
   * Default: `blockDeviceNumber` (stat(2) of the node). Injected by tests.
   */
  readonly deviceNumberOf?: (path: string) => Promise<DeviceNumber | null>;
  /** Where `sys/` and `proc/` are read to name the holders of an open map; default `/`. */
  readonly hostRoot?: string;
}

/**
 * The data device of a volume (DESIGN.md §4): the device-mapper linear map
 * `lvstamp-<id>` (UUID `LVSTAMP-<id>`) over the LV's data area,
 * `0 <dataSectors> linear <LV major:minor> <dataOffset/512>`.
 *
 * Every command goes through the injected runner. Nothing assumes udev
 * (docs/FACTS.md: without udev `dmsetup create` makes no node): maps are made and
 * removed with `--noudevsync` and nodes kept right with `dmsetup mknodes`.
 * A node is trusted only after its rdev matches the map's major:minor.
 * Commands that fail throw CommandFailedError / CommandTimeoutError from the
 * runner.
 */
export class DataDeviceManager {
  readonly #runner: CommandRunner;
  readonly #naming: Naming;
  readonly #deviceNumberOf: (path: string) => Promise<DeviceNumber | null>;
  readonly #hostRoot: string | undefined;

  constructor(options: DataDeviceManagerOptions) {
    this.#hostRoot = options.hostRoot;
    this.#runner = options.runner;
    this.#naming = options.naming ?? DEFAULT_NAMING;
    this.#deviceNumberOf = options.deviceNumberOf ?? blockDeviceNumber;
  }

  /** `/dev/mapper/lvstamp-<id>`: where the data device's node lives once it exists. */
  pathFor(volumeId: string): string {
    return `${MAPPER_DIR}/${dmNameFor(requireVolumeId(volumeId), this.#naming)}`;
  }

  /**
   * Creates the data device of `volumeId` over `lv`, idempotently: an
   * existing map with the same table is kept; one with another table (for
   * example after the LV grew) is reloaded and resumed.
   *
   * Whether the map exists, and its device number once made, are read from
   * sysfs in-process (as `find`); the processes are `dmsetup create
   * lvstamp-<id> --uuid LVSTAMP-<id> --noudevsync --table "0 <dataBytes/512>
   * linear <major>:<minor> <dataOffset/512>"`, then `dmsetup mknodes
   * lvstamp-<id>` when the node is missing or stale (always without udev).
   *
   * @param lv the LV's device number and size in bytes (must be active).
   * @param dataOffsetBytes bytes from LV start to the data area; default 1 MiB.
   * @param dataBytes the data device's length (the volume's capacity,
   *   DESIGN.md §4 "Capacity"); default the rest of the LV.
   * @returns the node path and the map's major:minor, checked to agree.
   * @throws InvalidArgumentError for a malformed ID or a data area that is
   *   empty, beyond the LV or not a whole number of 512-byte sectors.
   * @throws FailedPreconditionError when the LV is inactive, a map of that
   *   name has another UUID (or the UUID another name), or the node does not
   *   match the map after `mknodes`.
   * @throws UnparseableOutputError when dmsetup prints something unexpected.
   */
  async create(
    volumeId: string,
    lv: DataDeviceSource,
    dataOffsetBytes: number = DATA_OFFSET_BYTES,
    dataBytes?: number,
  ): Promise<DataDevice> {
    const wanted = linearTableFor(lv, dataOffsetBytes, dataBytes);
    const name = dmNameFor(requireVolumeId(volumeId), this.#naming);
    const uuid = dmUuidFor(volumeId, this.#naming);
    let map = this.#own(await this.#sysfsMaps(), volumeId);
    if (map === null) {
      await this.#runner.run([
        'dmsetup',
        'create',
        name,
        '--uuid',
        uuid,
        '--noudevsync',
        '--table',
        formatLinearTable(wanted),
      ]);
      map = this.#own(await this.#sysfsMaps(), volumeId);
      if (map === null) {
        throw new FailedPreconditionError(
          `dmsetup create ${name} succeeded but the map is not listed`,
        );
      }
    } else {
      await this.#replaceTableIfDifferent(name, wanted);
    }
    return this.#ensureNode(name, map);
  }

  /**
   * Loads the table for the volume's current capacity (`dataBytes`, default
   * the rest of the LV) into an existing map and resumes it (after
   * `lvextend` and the header rewrite; DESIGN.md §4 "Growing a volume"):
   * `dmsetup reload lvstamp-<id> --table "..."` then `dmsetup resume
   * --noudevsync lvstamp-<id>`. A map that already has this table is left
   * alone.
   * @returns the node path and major:minor (unchanged by a reload).
   * @throws NotFoundError when the map does not exist.
   * @throws InvalidArgumentError, FailedPreconditionError, UnparseableOutputError as for `create`.
   */
  async reload(
    volumeId: string,
    lv: DataDeviceSource,
    dataOffsetBytes: number = DATA_OFFSET_BYTES,
    dataBytes?: number,
  ): Promise<DataDevice> {
    const wanted = linearTableFor(lv, dataOffsetBytes, dataBytes);
    const name = dmNameFor(requireVolumeId(volumeId), this.#naming);
    const map = this.#own(await this.listAll(), volumeId);
    if (map === null) throw new NotFoundError(`data device ${name} does not exist`);
    await this.#replaceTableIfDifferent(name, wanted);
    return this.#ensureNode(name, map);
  }

  /**
   * Removes the data device, idempotently: an absent map is success (a
   * stale node left by an interrupted remove is cleared). Otherwise
   * `dmsetup remove --noudevsync lvstamp-<id>`, then `dmsetup mknodes
   * lvstamp-<id>` to drop the node (docs/FACTS.md: remove leaves it behind).
   * The data on the LV is untouched.
   * @throws InvalidArgumentError for a malformed ID.
   * @throws FailedPreconditionError when the map is open (mounted, in use;
   *   the message names its holders and mounts, `findDeviceUsers`),
   *   belongs to another UUID, or its node survives `mknodes`.
   */
  async remove(volumeId: string): Promise<void> {
    const name = dmNameFor(requireVolumeId(volumeId), this.#naming);
    const path = `${MAPPER_DIR}/${name}`;
    const map = this.#own(await this.listAll(), volumeId);
    if (map === null) {
      if ((await this.#deviceNumberOf(path)) !== null) await this.#mknodes(name);
      return;
    }
    if (map.openCount > 0) {
      throw new FailedPreconditionError(
        `data device ${name} is open (${map.openCount} holder${map.openCount === 1 ? '' : 's'}: ${await deviceUsersText(map, { hostRoot: this.#hostRoot })}); unmount or detach it first`,
      );
    }
    await this.#runner.run(['dmsetup', 'remove', '--noudevsync', name]);
    await this.#mknodes(name);
    if ((await this.#deviceNumberOf(path)) !== null) {
      throw new FailedPreconditionError(
        `${path} is still present after dmsetup remove and mknodes`,
      );
    }
  }

  /**
   * Every device-mapper map on the host, LV devices included (the GC
   * matches their open counts by major:minor), from one
   * `dmsetup info -c --noheadings --separator '|' -o name,uuid,major,minor,open`.
   * "No devices found" is an empty list; an empty UUID is "".
   * @throws UnparseableOutputError for any line that is not five well-formed fields.
   */
  async listAll(): Promise<DmMap[]> {
    return parseDmInfo(await this.#runner.run(INFO_ARGV));
  }

  /**
   * The lvstamp data devices: maps whose UUID is `LVSTAMP-<32 hex digits>`
   * (DESIGN.md §6 inventory), from the same single `dmsetup info` as listAll.
   * @throws UnparseableOutputError as listAll.
   */
  async list(): Promise<DataDeviceMap[]> {
    return (await this.listAll()).flatMap((map) => {
      const volumeId = parseDmUuid(map.uuid, this.#naming);
      return volumeId === null ? [] : [{ ...map, volumeId }];
    });
  }

  /**
   * The data device of `volumeId` if a map with its UUID `LVSTAMP-<id>`
   * exists, read from sysfs in-process (`sys/block/dm-N/dm/uuid`, `dm/name`,
   * `dev` under the host root; no dmsetup process): one directory read and
   * one small read per device-mapper device.
   * @returns null when no map has that UUID.
   * @throws InvalidArgumentError for a malformed ID; FailedPreconditionError
   *   when sysfs cannot be read or a `dev` file is not `major:minor`.
   */
  async find(volumeId: string): Promise<DataDeviceRef | null> {
    const uuid = dmUuidFor(requireVolumeId(volumeId), this.#naming);
    const map = (await this.#sysfsMaps()).find((m) => m.uuid === uuid);
    return map === undefined
      ? null
      : { volumeId, name: map.name, major: map.major, minor: map.minor };
  }

  /**
   * Every device-mapper device as sysfs shows it under the host root
   * (`sys/block/dm-N/dm/name`, `dm/uuid`, `dev`), read in-process; a device
   * that goes away while it is read is left out. No open count (that is
   * dmsetup's, listAll).
   * @throws FailedPreconditionError when `sys/block` cannot be listed or a
   *   `dev` file is not `major:minor`.
   */
  async #sysfsMaps(): Promise<(DeviceNumber & { name: string; uuid: string })[]> {
    const blockDir = join(this.#hostRoot ?? '/', 'sys/block');
    let entries: string[];
    try {
      entries = (await readdir(blockDir)).filter((name) => name.startsWith('dm-'));
    } catch (error) {
      throw new FailedPreconditionError(`cannot list ${blockDir}: ${(error as Error).message}`);
    }
    const read = (entry: string, file: string): Promise<string | null> =>
      readFile(join(blockDir, entry, file), 'utf8').then(
        (text) => text.trim(),
        () => null, // the device went away while listing
      );
    const maps = await Promise.all(
      entries.map(async (entry) => {
        const [name, uuid, dev] = await Promise.all([
          read(entry, 'dm/name'),
          read(entry, 'dm/uuid'),
          read(entry, 'dev'),
        ]);
        if (name === null || uuid === null || dev === null) return [];
        const match = /^(\d+):(\d+)$/.exec(dev);
        if (match === null) {
          throw new FailedPreconditionError(
            `${join(blockDir, entry, 'dev')} holds "${dev}", not major:minor`,
          );
        }
        return [{ name, uuid, major: Number(match[1]), minor: Number(match[2]) }];
      }),
    );
    return maps.flat();
  }

  /**
   * The live table of the data device, parsed: the map is found by its UUID
   * `LVSTAMP-<id>` (the GC inventory's key), then `dmsetup table <its name>`.
   * @returns the linear table; null when no map has that UUID or the map has
   *   no live table (a create interrupted between creating and loading).
   * @throws InvalidArgumentError for a malformed ID.
   * @throws UnparseableOutputError when the table is not one linear segment.
   */
  async table(volumeId: string): Promise<LinearTable | null> {
    const uuid = dmUuidFor(requireVolumeId(volumeId), this.#naming);
    const map = (await this.listAll()).find((m) => m.uuid === uuid);
    return map === undefined ? null : this.#readTable(map.name);
  }

  /**
   * The live tables of the data devices of `volumeIds`, all from ONE
   * `dmsetup table --concise` (none when `volumeIds` is empty), so that the
   * GC inventory starts the same number of processes for 1 map as for
   * 1,000. Per ID the answer is what `table(id)` gives: the map is found by
   * its UUID `LVSTAMP-<id>`, whatever its name; the entries of every other
   * map (LV devices, foreign maps, lvstamp maps not asked for) are split
   * off but never read.
   *
   * @param volumeIds volume IDs (32 lowercase hex digits); repeats are fine.
   * @returns one entry per distinct ID: the single-segment linear table;
   *   null when no map has that UUID (gone since the caller listed it), the
   *   map has no live table (a create interrupted between creating and
   *   loading; dmsetup prints `name,uuid,minor,rw` with no table field), or
   *   its table is not one linear segment (several segments, another target;
   *   `table(id)` throws for those).
   * @throws InvalidArgumentError for a malformed ID.
   * @throws UnparseableOutputError when the output is not the concise format
   *   or two maps carry an asked-for UUID.
   * @throws CommandFailedError when dmsetup fails (for example a map removed
   *   while dmsetup walks the list: "No such device or address", exit 1).
   */
  async tables(volumeIds: readonly string[]): Promise<Map<string, LinearTable | null>> {
    const byUuid = new Map<string, string>();
    for (const id of volumeIds) byUuid.set(dmUuidFor(requireVolumeId(id), this.#naming), id);
    const tables = new Map<string, LinearTable | null>();
    if (byUuid.size === 0) return tables;
    const result = await this.#runner.run(TABLES_ARGV);
    const found = new Map<string, DmTableEntry>();
    for (const entry of parseConciseTables(result)) {
      if (!byUuid.has(entry.uuid)) continue;
      if (found.has(entry.uuid)) {
        throw new UnparseableOutputError(result, `two maps carry UUID ${entry.uuid}`);
      }
      found.set(entry.uuid, entry);
    }
    for (const [uuid, id] of byUuid) {
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

  /**
   * The device the data device's table targets, and whether that block
   * device still exists on the host (`sys/dev/block/<major>:<minor>` under
   * the host root, sysfs-rules in the kernel documentation). The table is
   * read as `tables([volumeId])` reads it (one `dmsetup table --concise`).
   * A delete that finds no LV of the volume in its volume groups removes the
   * map as a leftover only when its target is gone (DESIGN.md §6 rule 4).
   * @returns null when no map has that UUID or its table is not one linear
   *   segment (no live table, another target): it maps nothing.
   * @throws InvalidArgumentError for a malformed ID; FailedPreconditionError
   *   when sysfs cannot be read (nothing proves the target gone);
   *   CommandFailedError and UnparseableOutputError as `tables`.
   */
  async targetOf(
    volumeId: string,
  ): Promise<{ readonly device: DeviceNumber; readonly present: boolean } | null> {
    const table = (await this.tables([volumeId])).get(volumeId) ?? null;
    if (table === null) return null;
    const device = { major: table.major, minor: table.minor };
    const blockDir = join(this.#hostRoot ?? '/', 'sys/dev/block');
    const exists = (path: string): Promise<boolean> =>
      lstat(path).then(
        () => true,
        (error: unknown) => {
          if (errorCode(error) === 'ENOENT') return false;
          throw new FailedPreconditionError(`cannot read ${path}: ${errorMessage(error)}`);
        },
      );
    // Without sysfs nothing proves the target gone.
    if (!(await exists(blockDir))) throw new FailedPreconditionError(`${blockDir} does not exist`);
    return { device, present: await exists(join(blockDir, formatDeviceNumber(device))) };
  }

  /** The map of `volumeId` in a listing, checking that name and UUID agree. */
  #own<M extends { readonly name: string; readonly uuid: string }>(
    maps: readonly M[],
    volumeId: string,
  ): M | null {
    const name = dmNameFor(volumeId, this.#naming);
    const uuid = dmUuidFor(volumeId, this.#naming);
    const byName = maps.find((m) => m.name === name);
    const byUuid = maps.find((m) => m.uuid === uuid);
    if (byName === undefined && byUuid === undefined) return null;
    if (byName === undefined || byUuid === undefined || byName !== byUuid) {
      const which = byName ?? byUuid;
      throw new FailedPreconditionError(
        `device-mapper map "${which?.name ?? ''}" has UUID "${which?.uuid ?? ''}", expected name ${name} with UUID ${uuid}; not touching it`,
      );
    }
    return byName;
  }

  async #readTable(name: string): Promise<LinearTable | null> {
    const result = await this.#runner.run(['dmsetup', 'table', name]);
    return result.stdout.trim() === '' ? null : parseLinearTable(result);
  }

  async #replaceTableIfDifferent(name: string, wanted: LinearTable): Promise<void> {
    const current = await this.#readTable(name);
    if (current !== null && sameTable(current, wanted)) return;
    await this.#runner.run(['dmsetup', 'reload', name, '--table', formatLinearTable(wanted)]);
    await this.#runner.run(['dmsetup', 'resume', '--noudevsync', name]);
  }

  async #mknodes(name: string): Promise<void> {
    await this.#runner.run(['dmsetup', 'mknodes', name]);
  }

  /** Makes sure /dev/mapper/<name> is a block device with the map's number (DESIGN.md: compare by major:minor). */
  async #ensureNode(name: string, map: DeviceNumber): Promise<DataDevice> {
    const path = `${MAPPER_DIR}/${name}`;
    const wanted: DeviceNumber = { major: map.major, minor: map.minor };
    let node = await this.#deviceNumberOf(path);
    if (node === null || !sameDevice(node, wanted)) {
      await this.#mknodes(name);
      node = await this.#deviceNumberOf(path);
    }
    if (node === null || !sameDevice(node, wanted)) {
      throw new FailedPreconditionError(
        `${path} is ${node === null ? 'missing' : `device ${formatDeviceNumber(node)}`} after dmsetup mknodes, expected ${formatDeviceNumber(wanted)}`,
      );
    }
    return { path, major: map.major, minor: map.minor };
  }
}

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

function sameTable(a: LinearTable, b: LinearTable): boolean {
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
function isOneLinear(segments: readonly string[]): boolean {
  return segments.length === 1 && LINEAR_LINE.test(segments[0]?.trim() ?? '');
}

/**
 * The table of one map from its segments (one `<start> <length> <target>
 * <args>` each), by the same rule for `dmsetup table <name>` and for one
 * map of `dmsetup table --concise`: exactly one `linear` segment.
 */
function linearTableOfSegments(result: CommandResult, segments: readonly string[]): LinearTable {
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

function requireVolumeId(volumeId: string): string {
  if (!isHexId(volumeId)) {
    throw new InvalidArgumentError(`volume ID must be 32 lowercase hex digits, got "${volumeId}"`);
  }
  return volumeId;
}
