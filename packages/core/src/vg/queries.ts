/**
 * Read-only questions about volume groups that the volume module, the CLI
 * and the GC ask (DESIGN.md §2.3 "Scope"): which groups are lvstamp's,
 * which are nested in a volume, the default group and a group's free space.
 */
import { restsOnDataDevice, type PvStack } from '../device/stack.js';
import { FailedPreconditionError, InvalidArgumentError } from '../errors.js';
import type { WarnLogger } from '../exec/runner.js';
import type { Lvm } from '../lvm/lvm.js';
import type { VolumeGroup } from '../lvm/types.js';
import { commonLvPrefix, DEFAULT_NAMING, type Naming } from '../naming.js';

/** The `pv_name` lvm reports for a PV whose device is missing (pvs(8)). */
const MISSING_PV_NAME = '[unknown]';

/** Free space of one volume group, in bytes. */
export interface VolumeGroupCapacity {
  readonly vgName: string;
  readonly totalBytes: number;
  readonly freeBytes: number;
  /** Largest capacity a new volume can have: whole free extents minus the data offset, in whole 4 KiB blocks. */
  readonly maximumVolumeBytes: number;
}

/** What VolumeGroupQueries runs on. */
export interface VolumeGroupQueriesOptions {
  readonly lvm: Lvm;
  readonly naming?: Naming;
  readonly logger?: WarnLogger | undefined;
  /** Where `sys/` is read to follow a PV's device stack; default `/`. */
  readonly hostRoot?: string | undefined;
  /** Whether a PV (its path) rests on an lvstamp data device; default restsOnDataDevice. */
  readonly pvStack?: ((pvPath: string) => Promise<PvStack>) | undefined;
}

/** Volume-group look-ups; keeps no state, every call asks lvm and sysfs. */
export class VolumeGroupQueries {
  readonly #lvm: Lvm;
  readonly #naming: Naming;
  readonly #logger: WarnLogger | undefined;
  readonly #pvStack: (pvPath: string) => Promise<PvStack>;

  constructor(options: VolumeGroupQueriesOptions) {
    this.#lvm = options.lvm;
    this.#naming = options.naming ?? DEFAULT_NAMING;
    this.#logger = options.logger;
    const { hostRoot } = options;
    this.#pvStack =
      options.pvStack ??
      ((pvPath) => restsOnDataDevice(pvPath, { hostRoot, naming: this.#naming }));
  }

  /**
   * Every volume group on the host (`vgs`), sizes in bytes.
   * @throws CommandFailedError, CommandTimeoutError, UnparseableOutputError.
   */
  async list(): Promise<VolumeGroup[]> {
    return this.#lvm.volumeGroups.list();
  }

  /**
   * The groups the CLI and the GC job look in when none is named (DESIGN.md
   * §2.3): tagged `lvstamp`, or holding an LV with the lvstamp tag and name
   * prefix; sorted, each once; minus the nested ones (nested), each left out
   * with a warning. One `vgs`, one `lvs`, one `pvs`, then sysfs.
   * @throws CommandFailedError, CommandTimeoutError, UnparseableOutputError.
   */
  async discover(): Promise<string[]> {
    const [vgs, lvs, nested] = await Promise.all([
      this.#lvm.volumeGroups.list(),
      this.#lvm.logicalVolumes.everywhere({ prefix: commonLvPrefix(this.#naming) }),
      this.nested(),
    ]);
    const tag = this.#naming.tag;
    const names = new Set([
      ...vgs.filter((vg) => vg.tags.includes(tag)).map((vg) => vg.name),
      ...lvs.filter((lv) => lv.tags.includes(tag)).map((lv) => lv.vgName),
    ]);
    for (const name of [...names].sort()) {
      const reason = nested.get(name);
      if (reason === undefined) continue;
      names.delete(name);
      this.#logger?.warn('volume group left out: nested in a volume', { vgName: name, reason });
    }
    return [...names].sort();
  }

  /**
   * The groups with a PV whose device stack rests on an lvstamp data device
   * or cannot be followed (restsOnDataDevice): a tenant's LVM inside a
   * volume, never listed, counted, activated or removed (DESIGN.md §2.3
   * "Scope"). One `pvs`, then sysfs per PV. A missing PV (lvm names it
   * `[unknown]`) has no device to follow: its group is not called nested
   * for it (its other PVs still are checked), and lvm refuses to change the
   * group until the PV is back (docs/LVM-CONFIG.md §2).
   * @returns group name → why (the first such PV's reason).
   * @throws CommandFailedError, CommandTimeoutError, UnparseableOutputError.
   */
  async nested(): Promise<Map<string, string>> {
    const pvs = (await this.#lvm.volumeGroups.physicalVolumes()).flatMap(({ pvName, vgName }) =>
      vgName === null || vgName === '' || pvName === MISSING_PV_NAME ? [] : [{ pvName, vgName }],
    );
    const stacks = await Promise.all(pvs.map((pv) => this.#pvStack(pv.pvName)));
    const nested = new Map<string, string>();
    pvs.forEach((pv, i) => {
      const stack = stacks[i];
      if (stack?.nested === true && !nested.has(pv.vgName)) nested.set(pv.vgName, stack.reason);
    });
    return nested;
  }

  /**
   * Where new volumes go when no group is named: the one group tagged
   * `lvstamp` that is not nested (DESIGN.md §2.3). One `vgs`, one `pvs`.
   * @throws FailedPreconditionError when there is none (naming the nested
   *   tagged groups and why); InvalidArgumentError when there are several.
   */
  async defaultGroup(): Promise<string> {
    const [groups, nested] = await Promise.all([this.#lvm.volumeGroups.list(), this.nested()]);
    const tag = this.#naming.tag;
    const tagged = groups.filter((g) => g.tags.includes(tag));
    const candidates = tagged.filter((g) => !nested.has(g.name));
    const [only, ...more] = candidates;
    if (only === undefined) {
      const left = tagged.map((g) => `${g.name}: ${nested.get(g.name) ?? ''}`);
      throw new FailedPreconditionError(
        left.length === 0
          ? `no volume group is tagged "${tag}"; create one with "lvstamp vg create" or name one with --vg`
          : `no volume group tagged "${tag}" is the node's: ${left.join('; ')} (nested in a volume, docs/DESIGN.md §2.3); create one with "lvstamp vg create" or name one with --vg`,
      );
    }
    if (more.length > 0) {
      throw new InvalidArgumentError(
        `several volume groups are tagged "${tag}" (${candidates.map((g) => g.name).join(', ')}); name one with --vg`,
      );
    }
    return only.name;
  }
}
