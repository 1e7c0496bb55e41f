import {
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  VolumeGroupUnusableError,
} from '../errors.js';
import { LvmCommand, REPORT_OPTIONS } from './command.js';
import {
  parsePvsReport,
  parsePvUuids,
  parseVgsReport,
  PV_REPORT_FIELDS,
  VG_REPORT_FIELDS,
} from './report.js';
import { duplicatePvUuids, lvmMessage, problemsOfVgAttr } from './vg-state.js';
import type { PvDevice, UnusableGroup, VolumeGroup } from './types.js';

/**
 * lvm(8) "VALID NAMES" of a volume group: up to 127 characters of a-z A-Z
 * 0-9 + _ . -, not starting with '-' (and not '.' or '..', validateVgName).
 */
export const VG_NAME_PATTERN = /^[A-Za-z0-9+_.][A-Za-z0-9+_.-]{0,126}$/;

/**
 * Refuses a volume group name lvm cannot hold (lvm(8) "VALID NAMES").
 * @throws InvalidArgumentError naming the rule.
 */
export function validateVgName(vgName: string): void {
  if (!VG_NAME_PATTERN.test(vgName) || vgName === '.' || vgName === '..') {
    throw new InvalidArgumentError(
      `"${vgName}" is not a valid volume group name (lvm(8) VALID NAMES)`,
    );
  }
}

/** `vg_name="a" || vg_name="b"`: an lvm selection of these volume groups (lvmreport(7)). */
export function vgSelection(vgNames: readonly string[]): string {
  return vgNames.map((name) => `vg_name="${name}"`).join(' || ');
}

/**
 * What a report said about volume groups, for VolumeGroups.usable: the rows
 * of the groups it selected, lvm's warnings (stderr), the PVs of each group
 * by `vg_uuid` when the report listed them (the look-up's `lvm fullreport`;
 * a group missing from the map is asked with `pvs`), and whether it ran
 * with `--shared` (then a group not listed does not exist; otherwise it may
 * be a shared group lvm skipped).
 */
export interface GroupsReport {
  readonly groups: readonly VolumeGroup[];
  readonly stderr: string;
  readonly pvs: ReadonlyMap<string, readonly PvDevice[]>;
  readonly sharedListed: boolean;
}

/**
 * Volume groups and physical volumes through lvm (vgs(8), vgcreate(8),
 * vgremove(8), pvs(8), pvcreate(8), pvremove(8)): typed values in and out,
 * sizes in bytes. Absence is only an empty selection from a command that
 * exited 0; a non-zero exit is an error (docs/FACTS.md "Absence").
 */
export class VolumeGroups {
  readonly #lvm: LvmCommand;

  constructor(command: LvmCommand) {
    this.#lvm = command;
  }

  /**
   * Every volume group on the host (`vgs`).
   * @throws CommandFailedError, CommandTimeoutError, UnparseableOutputError.
   */
  async list(): Promise<VolumeGroup[]> {
    return this.#vgs(null);
  }

  /**
   * The volume groups named in `vgNames` that exist, one `vgs -S`; lvm lists
   * two groups that share a name side by side.
   * @throws InvalidArgumentError for a name lvm cannot hold; as list.
   */
  async select(vgNames: readonly string[]): Promise<VolumeGroup[]> {
    for (const name of vgNames) validateVgName(name);
    if (vgNames.length === 0) return [];
    return this.#vgs(vgSelection(vgNames));
  }

  /**
   * The names of `vgNames` that name no volume group lvm sees, shared
   * groups counted as seen (one `vgs --shared -S`, whatever their state).
   * @throws InvalidArgumentError for a name lvm cannot hold; as list.
   */
  async missing(vgNames: readonly string[]): Promise<string[]> {
    for (const name of vgNames) validateVgName(name);
    const names = [...new Set(vgNames)];
    if (names.length === 0) return [];
    const listed = await this.#vgs(vgSelection(names), ['--shared']);
    const seen = new Set(listed.map((g) => g.name));
    return names.filter((name) => !seen.has(name));
  }

  /**
   * The group named `vgName`, or null when the selection is empty.
   * @throws InvalidArgumentError, FailedPreconditionError when lvm lists two
   *   groups of that name; as list.
   */
  async find(vgName: string): Promise<VolumeGroup | null> {
    const [vg, ...more] = await this.select([vgName]);
    if (more.length > 0)
      throw new FailedPreconditionError(`${more.length + 1} volume groups are named ${vgName}`);
    return vg ?? null;
  }

  /**
   * One group that can take new volumes (docs/LVM-CONFIG.md "Broken volume
   * groups"): its `vg_attr` shows no missing PV, read-only, exported or
   * shared state, and none of its PVs is one lvm warns it sees on two
   * devices (then one `pvs` tells which PVs are its own). An empty selection
   * is checked once more with `vgs --shared` (lvm skips a shared group
   * silently without lvmlockd).
   * @throws InvalidArgumentError for a bad name; NotFoundError when it does
   *   not exist; VolumeGroupUnusableError when it is broken;
   *   FailedPreconditionError for two groups of one name; as list.
   */
  async get(vgName: string): Promise<VolumeGroup> {
    validateVgName(vgName);
    const { groups, stderr } = await this.#report(vgName, []);
    return this.usable(vgName, { groups, stderr, pvs: new Map(), sharedListed: false });
  }

  /**
   * The checks of `get` on what a report already gave (GroupsReport: a `vgs
   * -S` or the look-up's `lvm fullreport` whose selection includes
   * `vgName`): asks lvm again only when the group is missing from a report
   * without `--shared` (`vgs --shared`), or lvm warned of a duplicate PV and
   * the report did not list the group's PVs (`pvs`).
   * @throws as get.
   */
  async usable(vgName: string, report: GroupsReport): Promise<VolumeGroup> {
    const { groups, stderr } = report;
    const [vg, ...more] = groups.filter((g) => g.name === vgName);
    if (vg === undefined) {
      const shared = report.sharedListed
        ? { groups: [] }
        : await this.#report(vgName, ['--shared']);
      if (shared.groups.length > 0) {
        throw new VolumeGroupUnusableError(
          vgName,
          'shared',
          `vg_attr ${shared.groups.map((g) => g.attr).join(', ')}: lvm skips a shared group on a node without lvmlockd`,
        );
      }
      throw new NotFoundError(`volume group ${vgName} does not exist`);
    }
    if (more.length > 0)
      throw new FailedPreconditionError(`${more.length + 1} volume groups are named ${vgName}`);
    if (report.sharedListed && problemsOfVgAttr(vg.attr).includes('shared')) {
      throw new VolumeGroupUnusableError(
        vgName,
        'shared',
        `vg_attr ${vg.attr}: lvm skips a shared group on a node without lvmlockd`,
      );
    }
    requireUsable(vg, stderr);
    const duplicates = duplicatePvUuids(stderr);
    if (duplicates.length > 0) {
      // a group has at least one PV: an empty list is a report that did not list them
      const listed = (report.pvs.get(vg.uuid) ?? []).map((pv) => pv.uuid);
      const own = listed.length > 0 ? listed : await this.#pvUuidsOf(vgName);
      if (duplicates.some((uuid) => own.includes(uuid))) {
        throw new VolumeGroupUnusableError(vgName, 'duplicate-pv', lvmMessage(stderr));
      }
    }
    return vg;
  }

  /**
   * The groups of `report` that `usable` refuses, each with lvm's warnings
   * about it (UnusableGroup). Starts no lvm process for a look-up's `lvm
   * fullreport` (it lists each group's PVs); `usable` may for other reports.
   * @throws as usable, except VolumeGroupUnusableError.
   */
  async unusableIn(report: GroupsReport): Promise<UnusableGroup[]> {
    const unusable: UnusableGroup[] = [];
    for (const vgName of new Set(report.groups.map((g) => g.name))) {
      try {
        await this.usable(vgName, report);
      } catch (error) {
        if (!(error instanceof VolumeGroupUnusableError)) throw error;
        const vg = report.groups.find((g) => g.name === vgName);
        const pvUuids =
          vg === undefined ? [] : (report.pvs.get(vg.uuid) ?? []).map((pv) => pv.uuid);
        const said = groupWarnings(vgName, pvUuids, report.stderr);
        unusable.push({
          vgName,
          problem: error.problem,
          detail: said === '' ? error.detail : said,
        });
      }
    }
    return unusable;
  }

  async #pvUuidsOf(vgName: string): Promise<string[]> {
    const argv = ['pvs', ...REPORT_OPTIONS, '-o', 'pv_uuid', '-S', `vg_name="${vgName}"`];
    return parsePvUuids(await this.#lvm.report(argv));
  }

  /**
   * Every physical volume on the host with its group (`pvs`); null group
   * for a PV in none.
   * @throws as list.
   */
  async physicalVolumes(): Promise<{ pvName: string; vgName: string | null }[]> {
    const argv = ['pvs', ...REPORT_OPTIONS, '-o', PV_REPORT_FIELDS.join(',')];
    const result = await this.#lvm.report(argv);
    return parsePvsReport(result.stdout, result.argv);
  }

  /**
   * The physical volumes (device paths) of one group, one `pvs -S`.
   * @throws as select.
   */
  async physicalVolumesOf(vgName: string): Promise<string[]> {
    validateVgName(vgName);
    const argv = [
      'pvs',
      ...REPORT_OPTIONS,
      '-o',
      PV_REPORT_FIELDS.join(','),
      '-S',
      `vg_name="${vgName}"`,
    ];
    const result = await this.#lvm.report(argv);
    return parsePvsReport(result.stdout, result.argv).map((pv) => pv.pvName);
  }

  /**
   * `pvcreate --yes <device>` (pvcreate(8)), under the host lock.
   * @throws CommandFailedError, CommandTimeoutError, LockTimeoutError.
   */
  async createPhysicalVolume(device: string): Promise<void> {
    await this.#lvm.change(`pvcreate ${device}`, ['pvcreate', '--yes', device]);
  }

  /**
   * `pvremove --yes <devices>` (pvremove(8)): wipes their PV labels.
   * @throws as createPhysicalVolume.
   */
  async removePhysicalVolumes(devices: readonly string[]): Promise<void> {
    if (devices.length === 0) return;
    await this.#lvm.change(`pvremove ${devices.join(' ')}`, ['pvremove', '--yes', ...devices]);
  }

  /**
   * `vgcreate [--addtag T]… <name> <devices>` (vgcreate(8)). lvm refuses a
   * device holding a signature (stdin is closed: its prompt is answered no).
   * @throws InvalidArgumentError for a bad name; CommandFailedError,
   *   CommandTimeoutError, LockTimeoutError.
   */
  async create(request: {
    readonly name: string;
    readonly devices: readonly string[];
    readonly tags: readonly string[];
  }): Promise<void> {
    validateVgName(request.name);
    await this.#lvm.change(`vgcreate ${request.name}`, [
      'vgcreate',
      ...request.tags.flatMap((tag) => ['--addtag', tag]),
      request.name,
      ...request.devices,
    ]);
  }

  /**
   * `vgremove --yes <name>` (vgremove(8)); the caller checked it is empty.
   * @throws as create.
   */
  async remove(vgName: string): Promise<void> {
    validateVgName(vgName);
    await this.#lvm.change(`vgremove ${vgName}`, ['vgremove', '--yes', vgName]);
  }

  async #vgs(selection: string | null, extra: readonly string[] = []): Promise<VolumeGroup[]> {
    const argv = ['vgs', ...extra, ...REPORT_OPTIONS, '-o', VG_REPORT_FIELDS.join(',')];
    if (selection !== null) argv.push('-S', selection);
    const result = await this.#lvm.report(argv);
    return parseVgsReport(result.stdout, result.argv);
  }

  /** One group's `vgs` report (with `extra` options) and lvm's warnings. */
  async #report(
    vgName: string,
    extra: readonly string[],
  ): Promise<{ groups: VolumeGroup[]; stderr: string }> {
    const argv = ['vgs', ...extra, ...REPORT_OPTIONS, '-o', VG_REPORT_FIELDS.join(',')];
    argv.push('-S', `vg_name="${vgName}"`);
    const result = await this.#lvm.report(argv);
    return { groups: parseVgsReport(result.stdout, result.argv), stderr: result.stderr };
  }
}

/**
 * lvm's warning lines (trimmed, joined with ` | `) that name the group
 * `VG <vgName> ` or one of its PV uuids; '' when none does.
 */
export function groupWarnings(vgName: string, pvUuids: readonly string[], stderr: string): string {
  return stderr
    .split('\n')
    .map((line) => line.trim())
    .filter(
      (line) =>
        line.includes(`VG ${vgName} `) ||
        pvUuids.some((uuid) => uuid !== '' && line.includes(uuid)),
    )
    .join(' | ');
}

/**
 * Throws VolumeGroupUnusableError when the group's `vg_attr` shows a
 * problem (problemsOfVgAttr), with lvm's warnings from `stderr`.
 */
export function requireUsable(vg: VolumeGroup, stderr: string): void {
  const [problem] = problemsOfVgAttr(vg.attr);
  if (problem !== undefined) {
    const said = lvmMessage(stderr);
    throw new VolumeGroupUnusableError(
      vg.name,
      problem,
      `vg_attr ${vg.attr}${said === '' ? '' : `; ${said}`}`,
    );
  }
}
