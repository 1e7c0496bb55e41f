import { open, unlink } from 'node:fs/promises';
import {
  AlreadyExistsError,
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  UnparseableOutputError,
} from '../errors.js';
import type { CommandRunner } from '../exec/runner.js';
import type { HostLock } from '../lock/host-lock.js';
import {
  LV_REPORT_FIELDS,
  VG_REPORT_FIELDS,
  parseLvsReport,
  parseVgsReport,
} from '../lvm/report.js';
import type { VolumeGroup } from '../lvm/types.js';
import { DEFAULT_NAMING, requireVgNameFitsDm, type Naming } from '../naming.js';

/** Options of VolumeGroupAdmin. */
export interface VolumeGroupAdminOptions {
  readonly runner: CommandRunner;
  readonly hostLock: HostLock;
  readonly naming?: Naming;
}

/** What `createOnLoop` made. */
export interface LoopVolumeGroup {
  readonly vg: VolumeGroup;
  /** The loop device, e.g. `/dev/loop3`. */
  readonly loopDevice: string;
  /** The backing file. */
  readonly file: string;
}

const REPORT = ['--reportformat', 'json', '--units', 'b', '--nosuffix'] as const;
// lvm2 lvm(8) "VG names": letters, digits and + _ . -, not starting with a hyphen.
const VG_NAME = /^[A-Za-z0-9+_.][A-Za-z0-9+_.-]{0,126}$/;
const LOOP_DEVICE = /^\/dev\/loop\d+$/;

/**
 * Creates and removes the volume groups lvstamp carves volumes from: on real
 * devices, or on a sparse loop file (the embedded default for trying lvstamp
 * and for tests). Every group it creates carries the `lvstamp` VG tag, and it
 * only ever removes a group with that tag and no logical volumes.
 * No cache: every call asks lvm. Mutating commands run under the host lock.
 */
export class VolumeGroupAdmin {
  readonly #runner: CommandRunner;
  readonly #lock: HostLock;
  readonly #naming: Naming;

  constructor(options: VolumeGroupAdminOptions) {
    this.#runner = options.runner;
    this.#lock = options.hostLock;
    this.#naming = options.naming ?? DEFAULT_NAMING;
  }

  /**
   * Every volume group on the host (`vgs`), sizes in bytes.
   * @throws CommandFailedError, UnparseableOutputError.
   */
  async list(): Promise<VolumeGroup[]> {
    const argv = ['vgs', ...REPORT, '-o', VG_REPORT_FIELDS.join(',')];
    const result = await this.#runner.run(argv);
    return parseVgsReport(result.stdout, argv);
  }

  /**
   * One volume group, or null on an explicit empty selection (`vgs -S`).
   * @throws CommandFailedError, UnparseableOutputError.
   */
  async find(name: string): Promise<VolumeGroup | null> {
    const argv = ['vgs', ...REPORT, '-o', VG_REPORT_FIELDS.join(','), '-S', `vg_name=${name}`];
    const result = await this.#runner.run(argv);
    const groups = parseVgsReport(result.stdout, argv);
    return groups.find((g) => g.name === name) ?? null;
  }

  /**
   * Creates FILE as a sparse file of `sizeBytes`, attaches it to a free loop
   * device (`losetup --find --show`), and makes a volume group tagged
   * `lvstamp` on it. Undoes what it did when a later step fails.
   * @param sizeBytes at least 16 MiB.
   * @throws InvalidArgumentError (bad name or size; a name too long for
   *   lvstamp's LV names, naming.ts vgNameProblem), AlreadyExistsError (the
   *   VG exists), FailedPreconditionError (FILE exists: never overwritten),
   *   CommandFailedError.
   */
  async createOnLoop(request: {
    name: string;
    file: string;
    sizeBytes: number;
  }): Promise<LoopVolumeGroup> {
    validateVgName(request.name);
    requireVgNameFitsDm(request.name, this.#naming);
    if (!Number.isSafeInteger(request.sizeBytes) || request.sizeBytes < 16 * 1024 * 1024) {
      throw new InvalidArgumentError(
        `loop file size must be at least 16 MiB, got ${request.sizeBytes} bytes`,
      );
    }
    return this.#lock.withLock(`vg create ${request.name}`, async () => {
      if ((await this.find(request.name)) !== null) {
        throw new AlreadyExistsError(`volume group ${request.name} already exists`);
      }
      const undo: (() => Promise<unknown>)[] = [];
      try {
        await createSparseFile(request.file, request.sizeBytes);
        undo.unshift(() => unlink(request.file));
        const attach = ['losetup', '--find', '--show', request.file];
        const loopDevice = (await this.#runner.run(attach)).stdout.trim();
        if (!LOOP_DEVICE.test(loopDevice)) {
          throw new UnparseableOutputError(
            { argv: attach, exitCode: 0, stdout: loopDevice, stderr: '' },
            'expected a loop device path such as /dev/loop0',
          );
        }
        undo.unshift(() => this.#runner.run(['losetup', '--detach', loopDevice]));
        await this.#runner.run(['pvcreate', '--yes', loopDevice]);
        undo.unshift(() => this.#runner.run(['pvremove', '--yes', loopDevice]));
        await this.#runner.run([
          'vgcreate',
          '--addtag',
          this.#naming.tag,
          request.name,
          loopDevice,
        ]);
        const vg = await this.find(request.name);
        if (vg === null)
          throw new NotFoundError(`volume group ${request.name} is missing right after vgcreate`);
        return { vg, loopDevice, file: request.file };
      } catch (error) {
        for (const step of undo) await step().catch(() => undefined);
        throw error;
      }
    });
  }

  /**
   * Makes a volume group tagged `lvstamp` on the given block devices. lvm
   * refuses a device that holds a signature (stdin is closed, so its "Wipe
   * it?" prompt is answered no); nothing is wiped.
   * @throws InvalidArgumentError (also a name too long for lvstamp's LV
   *   names, naming.ts vgNameProblem), AlreadyExistsError, CommandFailedError.
   */
  async create(request: { name: string; devices: readonly string[] }): Promise<VolumeGroup> {
    validateVgName(request.name);
    requireVgNameFitsDm(request.name, this.#naming);
    if (request.devices.length === 0) throw new InvalidArgumentError('give at least one device');
    return this.#lock.withLock(`vg create ${request.name}`, async () => {
      if ((await this.find(request.name)) !== null) {
        throw new AlreadyExistsError(`volume group ${request.name} already exists`);
      }
      await this.#runner.run([
        'vgcreate',
        '--addtag',
        this.#naming.tag,
        request.name,
        ...request.devices,
      ]);
      const vg = await this.find(request.name);
      if (vg === null)
        throw new NotFoundError(`volume group ${request.name} is missing right after vgcreate`);
      return vg;
    });
  }

  /**
   * Removes an empty volume group that lvstamp created (VG tag `lvstamp`),
   * wipes the PV labels of its devices and detaches those that are loop
   * devices. Backing files are kept.
   * @returns the loop devices detached.
   * @throws NotFoundError (no such VG), FailedPreconditionError (not tagged
   *   `lvstamp`, or it still holds logical volumes), CommandFailedError.
   */
  async remove(name: string): Promise<{ detachedLoopDevices: string[] }> {
    validateVgName(name);
    return this.#lock.withLock(`vg remove ${name}`, async () => {
      const vg = await this.find(name);
      if (vg === null) throw new NotFoundError(`volume group ${name} does not exist`);
      if (!vg.tags.includes(this.#naming.tag)) {
        throw new FailedPreconditionError(
          `volume group ${name} was not created by lvstamp (no "${this.#naming.tag}" tag); refusing to remove it`,
        );
      }
      const lvsArgv = ['lvs', ...REPORT, '-o', LV_REPORT_FIELDS.join(','), '-S', `vg_name=${name}`];
      const lvs = parseLvsReport((await this.#runner.run(lvsArgv)).stdout, lvsArgv);
      if (lvs.length > 0) {
        throw new FailedPreconditionError(
          `volume group ${name} still holds ${lvs.length} logical volume(s) (${lvs.map((lv) => lv.lvName).join(', ')}); delete them first`,
        );
      }
      const pvs = await this.#physicalVolumes(name);
      await this.#runner.run(['vgremove', '--yes', name]);
      if (pvs.length > 0) await this.#runner.run(['pvremove', '--yes', ...pvs]);
      const detached: string[] = [];
      for (const pv of pvs.filter((p) => LOOP_DEVICE.test(p))) {
        await this.#runner.run(['losetup', '--detach', pv]);
        detached.push(pv);
      }
      return { detachedLoopDevices: detached };
    });
  }

  async #physicalVolumes(vgName: string): Promise<string[]> {
    const argv = ['pvs', ...REPORT, '-o', 'pv_name,vg_name', '-S', `vg_name=${vgName}`];
    const result = await this.#runner.run(argv);
    return parsePvNames(result.stdout, argv);
  }
}

function validateVgName(name: string): void {
  if (!VG_NAME.test(name) || name === '.' || name === '..') {
    throw new InvalidArgumentError(
      `invalid volume group name "${name}": use letters, digits and + _ . - (lvm(8)), not starting with -`,
    );
  }
}

async function createSparseFile(path: string, sizeBytes: number): Promise<void> {
  let handle;
  try {
    handle = await open(path, 'wx');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST')
      throw new FailedPreconditionError(`${path} already exists; refusing to overwrite it`);
    if (code === 'ENOENT')
      throw new NotFoundError(`cannot create ${path}: its directory does not exist`);
    throw new FailedPreconditionError(`cannot create ${path}: ${(error as Error).message}`);
  }
  try {
    await handle.truncate(sizeBytes);
  } finally {
    await handle.close();
  }
}

/**
 * Reads `pvs --reportformat json -o pv_name,vg_name`: `{"report":[{"pv":[...]}]}`.
 * @throws UnparseableOutputError on anything else.
 */
export function parsePvNames(stdout: string, argv: readonly string[]): string[] {
  const fail = (detail: string): never => {
    throw new UnparseableOutputError({ argv, exitCode: 0, stdout, stderr: '' }, detail);
  };
  let parsed: unknown;
  try {
    parsed = JSON.parse(stdout);
  } catch {
    return fail('stdout is not one JSON report');
  }
  const report = (parsed as { report?: unknown }).report;
  if (!Array.isArray(report) || report.length !== 1)
    return fail('expected {"report":[{"pv":[...]}]}');
  const rows = (report[0] as { pv?: unknown }).pv;
  if (!Array.isArray(rows)) return fail('expected a "pv" list');
  return rows.map((row: unknown) => {
    const name = (row as { pv_name?: unknown }).pv_name;
    if (typeof name !== 'string' || name === '') return fail('a row has no pv_name');
    return name;
  });
}
