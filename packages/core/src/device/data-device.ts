import { FailedPreconditionError, InvalidArgumentError, NotFoundError } from '../errors.js';
import type { CommandRunner } from '../exec/runner.js';
import { DATA_OFFSET_BYTES } from '../header/constants.js';
import {
  DEFAULT_NAMING,
  dmNameFor,
  dmUuidFor,
  isHexId,
  parseDmUuid,
  type Naming,
} from '../naming.js';
import { blockDeviceNumber, formatDeviceNumber, sameDevice } from '../os/devnum.js';
import { deviceUsersText } from '../os/holders.js';
import { linearTablesOf, listDmMaps } from './dm-listing.js';
import { withDriverCheck } from './no-driver.js';
import { formatLinearTable, linearTableFor, parseLinearTable, sameTable } from './dm-tables.js';
import { blockDevicePresent, sysfsMaps, sysfsMapsWith } from './sysfs.js';
import type {
  DataDevice,
  DataDeviceMap,
  DataDeviceRef,
  DataDeviceSource,
  DeviceNumber,
  DmMap,
  LinearTable,
} from './types.js';

/** Where `dmsetup mknodes` puts device nodes (libdevmapper's dm dir). */
export const MAPPER_DIR = '/dev/mapper';

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
 * runner, except on a kernel without the device-mapper driver:
 * FailedPreconditionError saying so (withDriverCheck).
 */
export class DataDeviceManager {
  readonly #runner: CommandRunner;
  readonly #naming: Naming;
  readonly #deviceNumberOf: (path: string) => Promise<DeviceNumber | null>;
  readonly #hostRoot: string | undefined;

  constructor(options: DataDeviceManagerOptions) {
    this.#hostRoot = options.hostRoot;
    this.#runner = withDriverCheck(options.runner);
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
    let map = this.#own(await sysfsMaps(this.#hostRoot), volumeId);
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
      map = this.#own(await sysfsMaps(this.#hostRoot), volumeId);
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
    return listDmMaps(this.#runner);
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
   * `dev` under the host root; no dmsetup process, sysfsMapsWith): one
   * directory read and one small read per device-mapper device.
   * @returns null when no map has that UUID.
   * @throws InvalidArgumentError for a malformed ID; FailedPreconditionError
   *   when sysfs cannot be read or a `dev` file is not `major:minor`.
   */
  async find(volumeId: string): Promise<DataDeviceRef | null> {
    const uuid = dmUuidFor(requireVolumeId(volumeId), this.#naming);
    const [map] = await sysfsMapsWith(this.#hostRoot, 'uuid', uuid);
    return map === undefined
      ? null
      : { volumeId, name: map.name, major: map.major, minor: map.minor };
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
    return linearTablesOf(this.#runner, byUuid);
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
    return { device, present: await blockDevicePresent(this.#hostRoot, device) };
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

function requireVolumeId(volumeId: string): string {
  if (!isHexId(volumeId)) {
    throw new InvalidArgumentError(`volume ID must be 32 lowercase hex digits, got "${volumeId}"`);
  }
  return volumeId;
}
