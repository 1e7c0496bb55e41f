import { LvmCommand, REPORT_OPTIONS } from './command.js';
import { parseThinPoolReport, THIN_POOL_REPORT_FIELDS } from './report.js';
import type { ThinPoolReport } from './types.js';
import { classifyThinChangeFailure } from './vg-state.js';
import { validateVgName } from './volume-groups.js';

/**
 * The argv that makes a thin pool (lvcreate(8), lvmthin(7)):
 * `lvcreate --yes --type thin-pool -L <bytes>b --addtag … -n POOL VG`.
 * lvm's defaults for chunk size and metadata size; chunk zeroing on (lvm's
 * default). lvm2 2.03.16 refuses `--errorwhenfull` here (exit 3, "Option
 * --errorwhenfull is unsupported with thin pools."): ThinPools.create sets
 * it with lvchange right after.
 */
export function thinPoolCreateArgv(request: {
  readonly vgName: string;
  readonly poolName: string;
  readonly sizeBytes: number;
  readonly tags: readonly string[];
}): string[] {
  return [
    'lvcreate',
    '--yes',
    '--type',
    'thin-pool',
    '-L',
    `${request.sizeBytes}b`,
    ...request.tags.flatMap((tag) => ['--addtag', tag]),
    '-n',
    request.poolName,
    request.vgName,
  ];
}

/**
 * The argv that makes a thin LV (lvcreate(8), lvmthin(7)): `lvcreate --yes
 * --type thin -V <bytes>b --thinpool VG/POOL -n LV --addtag …`. No `--zero`
 * (lvm refuses it for thin LVs; the pool zeroes new chunks) and no
 * `--wipesignatures` (a new thin LV reads zeros). lvm rounds the virtual
 * size up to whole extents, so `virtualSizeBytes` is a multiple of the
 * extent size already.
 */
export function thinLvCreateArgv(request: {
  readonly vgName: string;
  readonly poolName: string;
  readonly lvName: string;
  readonly virtualSizeBytes: number;
  readonly tags: readonly string[];
}): string[] {
  return [
    'lvcreate',
    '--yes',
    '--type',
    'thin',
    '-V',
    `${request.virtualSizeBytes}b`,
    '--thinpool',
    `${request.vgName}/${request.poolName}`,
    '-n',
    request.lvName,
    ...request.tags.flatMap((tag) => ['--addtag', tag]),
  ];
}

/**
 * Thin pools through lvm (lvs(8), lvcreate(8), lvchange(8), lvmthin(7)):
 * the one report that measures a pool, pool creation, pool activation and
 * thin LV creation. lvstamp never removes, renames, resizes or deactivates
 * a pool (docs/DESIGN.md §4 "Thin device classes").
 */
export class ThinPools {
  readonly #lvm: LvmCommand;

  constructor(command: LvmCommand) {
    this.#lvm = command;
  }

  /**
   * The pool `vgName/poolName`, every thin LV in it and the group's free
   * space, in one `lvs -S 'vg_name="VG" && (lv_name="POOL" ||
   * pool_lv="POOL")'` (THIN_POOL_REPORT_FIELDS).
   * @throws InvalidArgumentError for a bad group name.
   * @throws CommandFailedError, CommandTimeoutError, UnparseableOutputError.
   */
  async report(vgName: string, poolName: string): Promise<ThinPoolReport> {
    validateVgName(vgName);
    const result = await this.#lvm.report([
      'lvs',
      ...REPORT_OPTIONS,
      '-o',
      THIN_POOL_REPORT_FIELDS.join(','),
      '-S',
      `vg_name="${vgName}" && (lv_name="${poolName}" || pool_lv="${poolName}")`,
    ]);
    return parseThinPoolReport(result.stdout, result.argv, poolName);
  }

  /**
   * Makes the pool (thinPoolCreateArgv), then `lvchange --errorwhenfull y
   * VG/POOL` so that a full pool fails a write with ENOSPC instead of
   * blocking the writer (docs/DESIGN.md §4 "Thin device classes"), under
   * the host lock.
   * @throws OutOfSpaceError (too few free extents), VolumeGroupUnusableError;
   *   CommandFailedError, CommandTimeoutError, LockTimeoutError.
   */
  async create(request: {
    readonly vgName: string;
    readonly poolName: string;
    readonly sizeBytes: number;
    readonly tags: readonly string[];
  }): Promise<void> {
    const argv = thinPoolCreateArgv(request);
    const target = `${request.vgName}/${request.poolName}`;
    try {
      await this.#lvm.change(`lvcreate ${target}`, argv);
    } catch (error) {
      throw classifyThinChangeFailure(request.vgName, request.poolName, error);
    }
    await this.setErrorWhenFull(request.vgName, request.poolName);
  }

  /**
   * `lvchange --errorwhenfull y VG/POOL` (lvchange(8)): writes to a full
   * pool fail at once (`lv_when_full` `error`) instead of queueing. Changes
   * no data; the caller checked the name against its class.
   * @throws CommandFailedError, CommandTimeoutError, LockTimeoutError.
   */
  async setErrorWhenFull(vgName: string, poolName: string): Promise<void> {
    const target = `${vgName}/${poolName}`;
    await this.#lvm.change(`lvchange ${target}`, ['lvchange', '--errorwhenfull', 'y', target]);
  }

  /**
   * `lvchange -ay VG/POOL`: activates an inactive pool alone (its `-tpool`,
   * `_tdata`, `_tmeta` devices), so that its usage can be read; changes no
   * data. The caller checked the name against its class first.
   * @throws ThinPoolUnusableError (no thin-pool target in the kernel, lvm:
   *   "is not a thin pool"); CommandFailedError, CommandTimeoutError,
   *   LockTimeoutError.
   */
  async activate(vgName: string, poolName: string): Promise<void> {
    const target = `${vgName}/${poolName}`;
    try {
      await this.#lvm.change(`lvchange ${target}`, ['lvchange', '-ay', target]);
    } catch (error) {
      throw classifyThinChangeFailure(vgName, poolName, error);
    }
  }

  /**
   * Makes an active thin LV (thinLvCreateArgv), under the host lock.
   * @throws OutOfSpaceError (lvm: the pool "reached threshold" or is "out of
   *   data space"), ThinPoolUnusableError (lvm: "is not a thin pool", "Pool
   *   … not found"), VolumeGroupUnusableError; CommandFailedError,
   *   CommandTimeoutError, LockTimeoutError.
   */
  async createThinLv(request: {
    readonly vgName: string;
    readonly poolName: string;
    readonly lvName: string;
    readonly virtualSizeBytes: number;
    readonly tags: readonly string[];
  }): Promise<void> {
    const argv = thinLvCreateArgv(request);
    try {
      await this.#lvm.change(`lvcreate ${request.vgName}/${request.lvName}`, argv);
    } catch (error) {
      throw classifyThinChangeFailure(request.vgName, request.poolName, error);
    }
  }

  /**
   * `lvextend --yes -L <bytes>b VG/LV` of a thin LV in `poolName`: its
   * virtual size only, to exactly `sizeBytes` (whole extents).
   * @throws as createThinLv.
   */
  async extendThinLv(
    vgName: string,
    poolName: string,
    lvName: string,
    sizeBytes: number,
  ): Promise<void> {
    const target = `${vgName}/${lvName}`;
    try {
      await this.#lvm.change(`lvextend ${target}`, [
        'lvextend',
        '--yes',
        '-L',
        `${sizeBytes}b`,
        target,
      ]);
    } catch (error) {
      throw classifyThinChangeFailure(vgName, poolName, error);
    }
  }
}
