import { CommandFailedError, OutOfSpaceError } from '../errors.js';
import type { LvmCommand } from './command.js';
import { classifyChangeFailure } from './vg-state.js';

/**
 * True for a thin LV (lvs(8) "lv_attr bits", first character `V`: a thin
 * volume, a thin snapshot included): only these can be snapshotted without
 * a copy (docs/DESIGN.md §5 "Restore and clone").
 */
export function isThinLv(lv: { readonly attr: string }): boolean {
  return lv.attr.startsWith('V');
}

/** A thin snapshot to make: `origin` and the new LV in `vgName`, with every tag at once. */
export interface ThinSnapshotRequest {
  readonly vgName: string;
  /** The LV snapshotted (a thin LV, or a thin snapshot). */
  readonly origin: string;
  readonly lvName: string;
  readonly tags: readonly string[];
}

/**
 * The argv of a read-only thin snapshot (lvcreate(8) `-s` without a size,
 * `-pr`): inactive with lvm's activation-skip flag `k`, every tag in the
 * same metadata commit (docs/DESIGN.md §5 "Snapshots").
 */
export function snapshotCreateArgv(request: ThinSnapshotRequest): string[] {
  return [
    'lvcreate',
    '--yes',
    '-s',
    '-pr',
    '-n',
    request.lvName,
    ...request.tags.flatMap((tag) => ['--addtag', tag]),
    `${request.vgName}/${request.origin}`,
  ];
}

/**
 * The argv of a restore or clone (docs/DESIGN.md §5 "Restore and clone"): a writable
 * (`-prw`) thin snapshot without the activation-skip flag (`-kn`), created
 * active (`-ay`), tagged in the same commit.
 */
export function copyCreateArgv(request: ThinSnapshotRequest): string[] {
  return [
    'lvcreate',
    '--yes',
    '-s',
    '-kn',
    '-ay',
    '-prw',
    '-n',
    request.lvName,
    ...request.tags.flatMap((tag) => ['--addtag', tag]),
    `${request.vgName}/${request.origin}`,
  ];
}

/**
 * Thin snapshots and copies through lvm (lvcreate(8), lvchange(8)); every
 * change under the host lock (LvmCommand.change).
 */
export class ThinSnapshots {
  readonly #lvm: LvmCommand;

  constructor(command: LvmCommand) {
    this.#lvm = command;
  }

  /**
   * Makes a read-only thin snapshot (snapshotCreateArgv).
   * @throws OutOfSpaceError when lvm refuses a full pool ("out of data
   *   space", "reached threshold"); VolumeGroupUnusableError;
   *   CommandFailedError, CommandTimeoutError, LockTimeoutError.
   */
  async createSnapshot(request: ThinSnapshotRequest): Promise<void> {
    await this.#change(request, snapshotCreateArgv(request));
  }

  /**
   * Makes an active writable thin snapshot (copyCreateArgv): the first step
   * of a restore or clone.
   * @throws as createSnapshot.
   */
  async createCopy(request: ThinSnapshotRequest): Promise<void> {
    await this.#change(request, copyCreateArgv(request));
  }

  /**
   * `lvchange -ay -K VG/LV` (lvchange(8) `--ignoreactivationskip`): a thin
   * snapshot carries the activation-skip flag, and a plain `-ay` exits 0
   * leaving it inactive (docs/SNAPSHOTS.md §1). Only this LV.
   * @throws CommandFailedError, CommandTimeoutError, LockTimeoutError.
   */
  async activate(vgName: string, lvName: string): Promise<void> {
    const target = `${vgName}/${lvName}`;
    await this.#lvm.change(`lvchange ${target}`, ['lvchange', '-ay', '-K', target]);
  }

  /**
   * `lvchange --activate n VG/LV` (lvchange(8)): puts a snapshot that
   * lvstamp activated back to rest (snapshots rest inactive, docs/DESIGN.md
   * §3). Only this LV; lvm refuses an open one.
   * @throws CommandFailedError, CommandTimeoutError, LockTimeoutError.
   */
  async deactivate(vgName: string, lvName: string): Promise<void> {
    const target = `${vgName}/${lvName}`;
    await this.#lvm.change(`lvchange ${target}`, ['lvchange', '--activate', 'n', target]);
  }

  async #change(request: ThinSnapshotRequest, argv: readonly string[]): Promise<void> {
    try {
      await this.#lvm.change(`lvcreate ${request.vgName}/${request.lvName}`, argv);
    } catch (error) {
      throw classifyThinFailure(request.vgName, error);
    }
  }
}

/**
 * lvm's refusal of a full thin pool ("… is out of data space.", "free space
 * in thin pool … reached threshold", docs/SNAPSHOTS.md §1) as
 * OutOfSpaceError; anything else as classifyChangeFailure.
 */
export function classifyThinFailure(vgName: string, error: unknown): unknown {
  if (
    error instanceof CommandFailedError &&
    /out of data space|reached threshold/i.test(error.stderr)
  ) {
    return new OutOfSpaceError(`volume group ${vgName}: ${CommandFailedError.describe(error)}`, {
      cause: error,
    });
  }
  return classifyChangeFailure(vgName, error);
}
