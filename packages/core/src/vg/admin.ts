import { open, unlink } from 'node:fs/promises';
import { noDeviceMapperError } from '../device/no-driver.js';
import {
  AlreadyExistsError,
  CommandFailedError,
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  UnparseableOutputError,
} from '../errors.js';
import type { CommandRunner } from '../exec/runner.js';
import type { HostLock } from '../lock/host-lock.js';
import type { Lvm } from '../lvm/lvm.js';
import type { VolumeGroup } from '../lvm/types.js';
import { validateVgName } from '../lvm/volume-groups.js';
import { requireVgNameFitsDm } from '../name-limits.js';
import { DEFAULT_NAMING, type Naming } from '../naming.js';

/** Options of VolumeGroupAdmin. */
export interface VolumeGroupAdminOptions {
  /** The lvm command module: every lvm call goes through it. */
  readonly lvm: Lvm;
  /** Runs `losetup` (not lvm). */
  readonly runner: CommandRunner;
  /** Held across each whole create or remove (the lvm module takes it per command too). */
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

const LOOP_DEVICE = /^\/dev\/loop\d+$/;

/**
 * Creates and removes the volume groups lvstamp carves volumes from: on real
 * devices, or on a sparse loop file (the embedded default for trying lvstamp
 * and for tests). Every group it creates carries the `lvstamp` VG tag, and it
 * only ever removes a group with that tag and no logical volumes.
 * No cache: every call asks lvm. Mutating commands run under the host lock.
 */
export class VolumeGroupAdmin {
  readonly #lvm: Lvm;
  readonly #runner: CommandRunner;
  readonly #lock: HostLock;
  readonly #naming: Naming;

  constructor(options: VolumeGroupAdminOptions) {
    this.#lvm = options.lvm;
    this.#runner = options.runner;
    this.#lock = options.hostLock;
    this.#naming = options.naming ?? DEFAULT_NAMING;
  }

  /**
   * Every volume group on the host (`vgs`), sizes in bytes.
   * @throws CommandFailedError, UnparseableOutputError.
   */
  async list(): Promise<VolumeGroup[]> {
    return this.#lvm.volumeGroups.list();
  }

  /** True for a group lvstamp made: it carries the lvstamp VG tag (naming's `tag`). */
  isLvstampGroup(vg: Pick<VolumeGroup, 'tags'>): boolean {
    return vg.tags.includes(this.#naming.tag);
  }

  /**
   * One volume group, or null on an explicit empty selection (`vgs -S`).
   * @throws FailedPreconditionError for two groups of one name;
   *   CommandFailedError, UnparseableOutputError.
   */
  async find(name: string): Promise<VolumeGroup | null> {
    return this.#lvm.volumeGroups.find(name);
  }

  /**
   * Creates FILE as a sparse file of `sizeBytes`, attaches it to a free loop
   * device (`losetup --find --show`), and makes a volume group tagged
   * `lvstamp` on it. Undoes what it did when a later step fails.
   * @param sizeBytes at least 16 MiB.
   * @throws InvalidArgumentError (bad name or size; a name too long for
   *   lvstamp's LV names, name-limits.ts vgNameProblem), AlreadyExistsError (the
   *   VG exists), FailedPreconditionError (FILE exists: never overwritten;
   *   the kernel has no device-mapper driver), CommandFailedError.
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
    await this.#requireDeviceMapper();
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
        await this.#lvm.volumeGroups.createPhysicalVolume(loopDevice);
        undo.unshift(() => this.#lvm.volumeGroups.removePhysicalVolumes([loopDevice]));
        await this.#lvm.volumeGroups.create({
          name: request.name,
          devices: [loopDevice],
          tags: [this.#naming.tag],
        });
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
   *   names, name-limits.ts vgNameProblem), AlreadyExistsError,
   *   FailedPreconditionError (no device-mapper driver), CommandFailedError.
   */
  async create(request: { name: string; devices: readonly string[] }): Promise<VolumeGroup> {
    validateVgName(request.name);
    requireVgNameFitsDm(request.name, this.#naming);
    if (request.devices.length === 0) throw new InvalidArgumentError('give at least one device');
    await this.#requireDeviceMapper();
    return this.#lock.withLock(`vg create ${request.name}`, async () => {
      if ((await this.find(request.name)) !== null) {
        throw new AlreadyExistsError(`volume group ${request.name} already exists`);
      }
      await this.#lvm.volumeGroups.create({
        name: request.name,
        devices: request.devices,
        tags: [this.#naming.tag],
      });
      const vg = await this.find(request.name);
      if (vg === null)
        throw new NotFoundError(`volume group ${request.name} is missing right after vgcreate`);
      return vg;
    });
  }

  /**
   * Refuses before any side effect when the kernel has no device-mapper
   * driver (`dmsetup version` fails): lvm would still make the group, but no
   * logical volume in it could ever be activated (docs/FACTS.md).
   * @throws FailedPreconditionError with dmsetup's own words.
   */
  async #requireDeviceMapper(): Promise<void> {
    try {
      await this.#runner.run(['dmsetup', 'version']);
    } catch (error) {
      if (!(error instanceof CommandFailedError)) throw error;
      throw noDeviceMapperError(
        error,
        'lvstamp volumes could not be activated here, so no volume group is created',
      );
    }
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
      if (!this.isLvstampGroup(vg)) {
        throw new FailedPreconditionError(
          `volume group ${name} was not created by lvstamp (no "${this.#naming.tag}" tag); refusing to remove it`,
        );
      }
      const lvs = await this.#lvm.logicalVolumes.ofGroup(name);
      if (lvs.length > 0) {
        throw new FailedPreconditionError(
          `volume group ${name} still holds ${lvs.length} logical volume(s) (${lvs.map((lv) => lv.lvName).join(', ')}); delete them first`,
        );
      }
      const pvs = await this.#lvm.volumeGroups.physicalVolumesOf(name);
      await this.#lvm.volumeGroups.remove(name);
      await this.#lvm.volumeGroups.removePhysicalVolumes(pvs);
      const detached: string[] = [];
      for (const pv of pvs.filter((p) => LOOP_DEVICE.test(p))) {
        await this.#runner.run(['losetup', '--detach', pv]);
        detached.push(pv);
      }
      return { detachedLoopDevices: detached };
    });
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
