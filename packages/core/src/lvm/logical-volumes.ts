import { FailedPreconditionError, InvalidArgumentError } from '../errors.js';
import { LV_TIME_CONFIG, LvmCommand, REPORT_OPTIONS } from './command.js';
import {
  FULLREPORT_PV_FIELDS,
  LV_REPORT_FIELDS,
  parseFullReport,
  parseLvsReport,
  VG_REPORT_FIELDS,
} from './report.js';
import { classifyChangeFailure, problemsOfVgAttr } from './vg-state.js';
import {
  validateVgName,
  VG_NAME_PATTERN,
  vgSelection,
  type GroupsReport,
} from './volume-groups.js';
import type { LogicalVolume } from './types.js';

// lvm uuids: 32 alphanumerics in groups joined by '-'.
const LV_UUID = /^[A-Za-z0-9]+(-[A-Za-z0-9]+)*$/;

/**
 * Refuses what cannot be an lvm uuid (alphanumerics in groups joined by `-`).
 * @throws InvalidArgumentError.
 */
export function validateLvUuid(lvUuid: string): void {
  if (!LV_UUID.test(lvUuid)) throw new InvalidArgumentError(`"${lvUuid}" is not an lvm uuid`);
}

/** Which LVs a look-up wants: exactly these names, or every name with this prefix. */
export type LvNameFilter = { readonly names: readonly string[] } | { readonly prefix: string };

/**
 * What a look-up in a scope found: the groups of the scope that exist (with
 * lvm's warnings and their PVs, for VolumeGroups.usable), and the LVs in them.
 */
export interface ScopedLogicalVolumes extends GroupsReport {
  readonly lvs: readonly LogicalVolume[];
}

/**
 * lvm settings (lvm.conf(5)) that a thick `lvcreate` (lvcreateArgv) and
 * every `lvrename` carry, whatever the host's lvm.conf says: lvm then
 * refuses to change a shared group (`global/use_lvmlockd=0`: "requires
 * lvmlockd") and a group with a PV seen twice
 * (`devices/allow_changes_with_duplicate_pvs=0`), as the look-up refuses
 * them. A create without the look-up rests on those refusals (DESIGN.md §5
 * "Create").
 */
export const CREATE_PROTOCOL_CONFIG: readonly string[] = [
  '--config',
  'global/use_lvmlockd=0 devices/allow_changes_with_duplicate_pvs=0',
];

/**
 * The argv that makes an LV (lvcreate(8)): with CREATE_PROTOCOL_CONFIG,
 * signatures wiped and the first 4 KiB zeroed (`--wipesignatures y --zero
 * y`), activated, `sizeBytes` (lvm rounds it up to whole extents), with the
 * given tags. The benchmarks run the same argv as the bare baseline.
 */
export function lvcreateArgv(request: {
  readonly vgName: string;
  readonly lvName: string;
  readonly sizeBytes: number;
  readonly tags: readonly string[];
}): string[] {
  return [
    'lvcreate',
    ...CREATE_PROTOCOL_CONFIG,
    '--yes',
    '--wipesignatures',
    'y',
    '--zero',
    'y',
    '--activate',
    'y',
    '-n',
    request.lvName,
    '-L',
    `${request.sizeBytes}b`,
    ...request.tags.flatMap((tag) => ['--addtag', tag]),
    request.vgName,
  ];
}

/**
 * The argv that renames an LV (lvrename(8)): with CREATE_PROTOCOL_CONFIG,
 * `--yes`, then the group, the old and the new name. The benchmarks run the
 * same argv as the bare baseline.
 */
export function lvrenameArgv(vgName: string, from: string, to: string): string[] {
  return ['lvrename', ...CREATE_PROTOCOL_CONFIG, '--yes', vgName, from, to];
}

/**
 * Logical volumes through lvm (lvs(8), lvcreate(8), lvrename(8),
 * lvremove(8), lvextend(8), lvchange(8)): typed values in and out, sizes in
 * bytes, one row per LV. Absence is only an empty selection (`-S`) from a
 * command that exited 0 (docs/FACTS.md "Absence"); changes run under the
 * host lock.
 */
export class LogicalVolumes {
  readonly #lvm: LvmCommand;

  constructor(command: LvmCommand) {
    this.#lvm = command;
  }

  /**
   * The LVs matching `filter` in the volume groups `vgNames` (DESIGN.md
   * §2.3: never every group), and those groups, from one `lvm fullreport`
   * (lookupArgv; docs/ARCHITECTURE.md "lvm processes per call"). A group
   * that does not exist holds nothing. A shared group (lvmlockd) is listed
   * as a group, for VolumeGroups.usable to refuse, but its LVs are not
   * (lvm without `--shared` skips the whole group).
   * @throws InvalidArgumentError for a bad group name.
   * @throws FailedPreconditionError when lvm sees two groups with one of the
   *   names (a copy, or a group nested in a volume), naming both vg_uuids.
   * @throws CommandFailedError, CommandTimeoutError, UnparseableOutputError.
   */
  async inGroups(vgNames: readonly string[], filter: LvNameFilter): Promise<ScopedLogicalVolumes> {
    for (const name of vgNames) validateVgName(name);
    const names = [...new Set(vgNames)];
    if (names.length === 0) {
      return { groups: [], lvs: [], stderr: '', pvs: new Map(), sharedListed: true };
    }
    const result = await this.#lvm.report(lookupArgv(names, filter));
    const found = parseFullReport(result.stdout, result.argv).filter((g) =>
      names.includes(g.group.name),
    );
    for (const name of names) {
      const same = found.filter((g) => g.group.name === name).map((g) => g.group);
      if (same.length > 1) {
        throw new FailedPreconditionError(
          `lvm sees ${same.length} volume groups named ${name} (vg_uuid ${same.map((vg) => vg.uuid).join(' and ')}): ` +
            'a copy, or a volume group inside a volume; lvstamp acts on neither until lvm sees one (an lvm device filter, docs/DESIGN.md §2.3)',
        );
      }
    }
    return {
      groups: found.map((g) => g.group),
      lvs: found
        .filter((g) => !problemsOfVgAttr(g.group.attr).includes('shared'))
        .flatMap((g) => g.lvs),
      stderr: result.stderr,
      pvs: new Map(found.map((g) => [g.group.uuid, g.pvs])),
      sharedListed: true,
    };
  }

  /**
   * Every LV whose name matches `filter` in every volume group (`lvs -S`):
   * only for finding the groups to look in (DESIGN.md §2.3).
   * @throws CommandFailedError, CommandTimeoutError, UnparseableOutputError.
   */
  async everywhere(filter: LvNameFilter): Promise<LogicalVolume[]> {
    return this.#lvs(nameSelection(filter), null);
  }

  /**
   * Every LV of one volume group (`lvs -S vg_name=…`).
   * @throws InvalidArgumentError for a bad name; as everywhere.
   */
  async ofGroup(vgName: string): Promise<LogicalVolume[]> {
    validateVgName(vgName);
    return this.#lvs(vgSelection([vgName]), null);
  }

  /**
   * The one LV `vgName/lvName`, right after a change (`lvs -S lv_name=… VG`).
   * @throws FailedPreconditionError when lvm lists none or several.
   * @throws CommandFailedError, CommandTimeoutError, UnparseableOutputError.
   */
  async get(vgName: string, lvName: string): Promise<LogicalVolume> {
    const lvs = await this.#lvs(`lv_name="${lvName}"`, vgName);
    const [lv, ...more] = lvs;
    if (lv === undefined || more.length > 0) {
      throw new FailedPreconditionError(
        `expected one LV ${vgName}/${lvName} after the change, lvs listed ${lvs.length}`,
      );
    }
    return lv;
  }

  /**
   * The LVs with this `lv_uuid` (`lvs -S lv_uuid=…`): none, one, or (a
   * copied disk) several.
   * @throws InvalidArgumentError when it is not an lvm uuid; as get.
   */
  async byUuid(lvUuid: string): Promise<LogicalVolume[]> {
    validateLvUuid(lvUuid);
    return this.#lvs(`lv_uuid="${lvUuid}"`, null);
  }

  /**
   * Makes an active LV (lvcreateArgv), under the host lock.
   * @throws OutOfSpaceError, VolumeGroupUnusableError (classifyChangeFailure);
   *   CommandFailedError, CommandTimeoutError, LockTimeoutError.
   */
  async create(request: {
    readonly vgName: string;
    readonly lvName: string;
    readonly sizeBytes: number;
    readonly tags: readonly string[];
  }): Promise<void> {
    await this.#changeOf(
      request.vgName,
      `lvcreate ${request.vgName}/${request.lvName}`,
      lvcreateArgv(request),
    );
  }

  /**
   * `lvrename` of FROM to TO in the group (lvrenameArgv), under the host
   * lock.
   * @throws CommandFailedError, CommandTimeoutError, LockTimeoutError.
   */
  async rename(vgName: string, from: string, to: string): Promise<void> {
    await this.#lvm.change(`lvrename ${vgName}/${from}`, lvrenameArgv(vgName, from, to));
  }

  /**
   * `lvremove --yes VG/LV` (lvremove(8)), under the host lock; the caller
   * proved ownership (DESIGN.md §2.3).
   * @throws VolumeGroupUnusableError when lvm names a broken group (its
   *   metadata could not be written: lvremove has then deactivated the LV);
   *   CommandFailedError, CommandTimeoutError, LockTimeoutError.
   */
  async remove(vgName: string, lvName: string): Promise<void> {
    const target = `${vgName}/${lvName}`;
    await this.#changeOf(vgName, `lvremove ${target}`, ['lvremove', '--yes', target]);
  }

  /**
   * `lvextend --yes -L <bytes>b VG/LV` (lvextend(8)) to exactly `sizeBytes`
   * (a multiple of the extent size), under the host lock.
   * @throws as create.
   */
  async extend(vgName: string, lvName: string, sizeBytes: number): Promise<void> {
    const target = `${vgName}/${lvName}`;
    await this.#changeOf(vgName, `lvextend ${target}`, [
      'lvextend',
      '--yes',
      '-L',
      `${sizeBytes}b`,
      target,
    ]);
  }

  /**
   * `lvchange --activate y VG/LV` (lvchange(8)): this LV only, never a
   * group-wide activation; changes no data.
   * @throws CommandFailedError, CommandTimeoutError, LockTimeoutError.
   */
  async activate(vgName: string, lvName: string): Promise<void> {
    const target = `${vgName}/${lvName}`;
    await this.#lvm.change(`lvchange ${target}`, ['lvchange', '--activate', 'y', target]);
  }

  /**
   * One `lvchange [--addtag T]… [--deltag T]… [--activate y|n] [-K] VG/LV`
   * (lvchange(8)): tags and activation of this LV in one metadata change,
   * under the host lock. `ignoreActivationSkip` (`-K`) activates a thin
   * snapshot that carries the activation-skip flag (DESIGN.md §3).
   * Quarantine adds its tag and deactivates in one call, restore deletes it
   * (DESIGN.md §6 "Quarantine").
   * @throws InvalidArgumentError when nothing would change; CommandFailedError,
   *   CommandTimeoutError, LockTimeoutError.
   */
  async changeTagsAndActivation(
    vgName: string,
    lvName: string,
    change: {
      readonly addTags?: readonly string[];
      readonly deleteTags?: readonly string[];
      readonly activate?: 'y' | 'n';
      readonly ignoreActivationSkip?: boolean;
    },
  ): Promise<void> {
    const target = `${vgName}/${lvName}`;
    const argv = ['lvchange'];
    for (const tag of change.addTags ?? []) argv.push('--addtag', tag);
    for (const tag of change.deleteTags ?? []) argv.push('--deltag', tag);
    if (change.activate !== undefined) argv.push('--activate', change.activate);
    if (change.ignoreActivationSkip === true) argv.push('-K');
    if (argv.length === 1)
      throw new InvalidArgumentError(`lvchange of ${target}: nothing to change`);
    argv.push(target);
    await this.#lvm.change(`lvchange ${target}`, argv);
  }

  async #changeOf(vgName: string, reason: string, argv: readonly string[]): Promise<void> {
    try {
      await this.#lvm.change(reason, argv);
    } catch (error) {
      throw classifyChangeFailure(vgName, error);
    }
  }

  async #lvs(selection: string, vgName: string | null): Promise<LogicalVolume[]> {
    const argv = [
      'lvs',
      ...REPORT_OPTIONS,
      ...LV_TIME_CONFIG,
      '-o',
      LV_REPORT_FIELDS.join(','),
      '-S',
      selection,
    ];
    if (vgName !== null) argv.push(vgName);
    const result = await this.#lvm.report(argv);
    return parseLvsReport(result.stdout, result.argv);
  }
}

/**
 * The look-up of LVs in volume groups as one process (lvmreport(7)
 * "fullreport", `--configreport`): `lvm fullreport` with no positional group
 * (a positional name lvm sees twice, or not at all, is exit 5; a selection
 * is exit 0 and lists both groups of one name), each sub-report with its
 * own `-o` and `-S`: the groups' `vg` rows (VG_REPORT_FIELDS), their PV
 * uuids, their LVs matching `filter` (LV_REPORT_FIELDS), no segments; and
 * `--shared`, so a shared group shows in `vg_attr` instead of being
 * skipped. The field lists are the ones `vgs` and `lvs` use.
 */
export function lookupArgv(vgNames: readonly string[], filter: LvNameFilter): string[] {
  const inGroups = vgSelection(vgNames);
  return [
    'lvm',
    'fullreport',
    ...REPORT_OPTIONS,
    ...LV_TIME_CONFIG,
    '--shared',
    '--configreport',
    'vg',
    '-o',
    VG_REPORT_FIELDS.join(','),
    '-S',
    inGroups,
    '--configreport',
    'pv',
    '-o',
    FULLREPORT_PV_FIELDS.join(','),
    '-S',
    inGroups,
    '--configreport',
    'lv',
    '-o',
    LV_REPORT_FIELDS.join(','),
    '-S',
    `(${inGroups}) && (${nameSelection(filter)})`,
    '--configreport',
    'pvseg',
    '-o',
    'pvseg_start',
    '-S',
    'pvseg_start<0',
    '--configreport',
    'seg',
    '-o',
    'seg_start',
    '-S',
    'seg_start<0',
  ];
}

/** The lvm selection (lvmreport(7)) of a name filter. */
function nameSelection(filter: LvNameFilter): string {
  if ('prefix' in filter) return `lv_name=~"^${escapeRegex(filter.prefix)}"`;
  for (const name of filter.names) {
    // lvm(8) VALID NAMES: the same characters for logical volumes as for groups, so no quote.
    if (!VG_NAME_PATTERN.test(name)) {
      throw new InvalidArgumentError(
        `"${name}" is not a valid logical volume name (lvm(8) VALID NAMES)`,
      );
    }
  }
  return filter.names.map((name) => `lv_name="${name}"`).join(' || ');
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
