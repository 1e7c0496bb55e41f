import { DEFAULT_NAMING, type Naming } from '../naming.js';
import { applyGcPlan, type GcApplyOptions } from './executor.js';
import { failedTagCheck } from '../volumes/ownership.js';
import { takeInventory } from './inventory.js';
import { planGc } from './planner.js';
import type { GcExecutorPorts } from './ports.js';
import type { GcOutcome, GcPlan, GcPolicy, Inventory } from './types.js';
import { quarantinedToActivate } from './quarantine.js';
import { refuseEmptyLiveSet, refuseEmptySnapshotLiveSet, type GcLiveSets } from './live-set.js';
import { namedQuarantined, purgePlan, type PurgeRequest } from './purge.js';

/** A GC run's input (DESIGN.md §6): its live sets, the policy, the time and the scope. */
export interface GcPlanRequest extends GcLiveSets {
  readonly policy: GcPolicy;
  /** Unix milliseconds. */
  readonly nowMs: number;
  /**
   * The volume groups to scan (DESIGN.md §2.3); default: those tagged
   * `lvstamp` or holding lvstamp-tagged LVs (`discoverVolumeGroups`).
   */
  readonly vgNames?: readonly string[];
}

/**
 * Inventory → plan → apply, shared by `lvstamp gc` and `lvstamp-gc node`.
 * The plan is pure (`planGc`); applying re-checks each device under the host
 * lock right before acting (`applyGcPlan`).
 */
export class GcService {
  readonly #ports: GcExecutorPorts;
  readonly #naming: Naming;
  readonly #clock: () => number;
  /** Snapshot LVs `plan()` activated and left active for the removals of that plan (`vg/lv`). */
  readonly #heldForRemoval = new WeakMap<GcPlan, readonly string[]>();
  /** Quarantined LVs `plan()` activated and left active for that plan's expiries (`vg/lv`). */
  readonly #quarantinedHeld = new WeakMap<GcPlan, readonly string[]>();

  constructor(options: { ports: GcExecutorPorts; naming?: Naming; clock?: () => number }) {
    this.#ports = options.ports;
    this.#naming = options.naming ?? DEFAULT_NAMING;
    this.#clock = options.clock ?? Date.now;
  }

  /**
   * Takes the inventory and plans; when it shows inactive LVs with this
   * owner's tags, activates them first (their headers must be read;
   * `activateOwnedVolumes`) and takes it again. Removes nothing. Snapshots
   * rest inactive (DESIGN.md §3): the ones activated here are deactivated
   * before it returns or throws, except those an applied plan removes, which
   * `apply` deactivates when it does not remove them. lvm processes on a
   * node with nothing inactive: the inventory's listing only.
   * @returns also the volume groups scanned and the LVs activated.
   * @throws FailedPreconditionError for an empty live set while stamped
   *   volumes exist (unless allowed); InvalidArgumentError for a bad policy;
   *   any inventory failure (an lvm or dmsetup error aborts the run).
   */
  async plan(request: GcPlanRequest): Promise<{
    inventory: Inventory;
    plan: GcPlan;
    vgNames: readonly string[];
    activated: readonly string[];
  }> {
    const vgNames = request.vgNames ?? (await this.#ports.volumes.discoverVolumeGroups());
    let inventory = await takeInventory(this.#ports, { vgNames }, this.#naming, this.#clock);
    // Only when the inventory shows an inactive LV with this owner's tags: activate (one lvchange
    // each, the volumes re-listed under the host lock) and take the inventory again.
    // Nothing is activated in a group lvm refuses to change (a PV missing or seen twice...):
    // there the planner keeps every entry with the group's warning (DESIGN.md §6 rule 1), and an
    // activation that lvm refuses would end the run for every other group too.
    const scope = usableScope(inventory, { vgNames, ownerId: request.policy.ownerId });
    const inactiveOwned = (
      lvs: readonly { vgName: string; kernel: unknown; tags: readonly string[] }[],
    ) =>
      scope.vgNames.length > 0 &&
      lvs.some(
        (v) =>
          v.kernel === null &&
          scope.vgNames.includes(v.vgName) &&
          failedTagCheck(v, request.policy.ownerId, this.#naming) === null,
      );
    const volumesActivated = inactiveOwned(inventory.volumes)
      ? await this.#ports.volumes.activateOwnedVolumes(scope)
      : [];
    // Snapshots rest inactive with the activation-skip flag: `lvchange -ay -K`, exactly each LV.
    const snapshotsActivated = inactiveOwned(inventory.snapshots ?? [])
      ? await this.#ports.volumes.activateOwnedSnapshots(scope)
      : [];
    // Quarantined LVs rest inactive: those with this owner's tags and a quarantine time are
    // activated for the run (DESIGN.md §6 "Quarantine"), so that the expiry can read their
    // sector 0 and a header that fails the check is a warning before the window passes.
    const quarantinedActivated = await this.#activateQuarantined(
      inventory,
      scope,
      windowOf(request.policy),
    );
    const activated = [...volumesActivated, ...snapshotsActivated, ...quarantinedActivated];
    let plan: GcPlan;
    try {
      if (activated.length > 0) {
        inventory = await takeInventory(this.#ports, { vgNames }, this.#naming, this.#clock);
      }
      const stamped = inventory.volumes.filter((v) => v.header.status === 'ok').length;
      refuseEmptyLiveSet(request, stamped);
      refuseEmptySnapshotLiveSet(request, inventory, request.policy.ownerId);
      plan = planGc(
        inventory,
        request.liveSet,
        request.policy,
        request.nowMs,
        request.snapshotLiveSet === undefined ? {} : { snapshotLiveSet: request.snapshotLiveSet },
      );
    } catch (error) {
      await this.#rest(snapshotsActivated);
      await this.#restQuarantined(quarantinedActivated);
      throw error;
    }
    await this.#holdExpiring(plan, quarantinedActivated);
    // Back to rest now, except the snapshots an applied plan removes or quarantines: the
    // executor's re-check reads their sector 0 again (an inactive LV has none to read, so the
    // act would be skipped), and apply() deactivates any of them it did not remove or
    // quarantine (the quarantine's own lvchange deactivates the others).
    const removing = new Set(
      plan.dryRun
        ? []
        : plan.entries
            .filter((e) => e.action === 'remove-snapshot' || e.action === 'quarantine-snapshot')
            .map((e) => e.device),
    );
    await this.#rest(snapshotsActivated.filter((lv) => !removing.has(lv)));
    const held = snapshotsActivated.filter((lv) => removing.has(lv));
    if (held.length > 0) this.#heldForRemoval.set(plan, held);
    return { inventory, plan, vgNames, activated };
  }

  /**
   * Applies a plan (nothing when it is a dry run); one outcome per removal
   * or quarantine. Then deactivates the snapshots `plan()` activated for this
   * plan's removals and quarantines that were neither removed nor
   * quarantined (skipped or failed), also when a callback throws.
   */
  async apply(plan: GcPlan, options: GcApplyOptions = {}): Promise<GcOutcome[]> {
    const held = this.#heldForRemoval.get(plan) ?? [];
    this.#heldForRemoval.delete(plan);
    const heldQuarantined = this.#quarantinedHeld.get(plan) ?? [];
    this.#quarantinedHeld.delete(plan);
    const removed = new Set<string>();
    try {
      return await applyGcPlan(plan, this.#ports, {
        onOutcome: (outcome) => {
          // a quarantined snapshot is inactive under its new name: nothing left to deactivate
          if (outcome.outcome === 'removed' || outcome.outcome === 'quarantined') {
            removed.add(outcome.entry.device);
          }
          options.onOutcome?.(outcome);
        },
      });
    } finally {
      await this.#rest(held.filter((lv) => !removed.has(lv)));
      await this.#restQuarantined(heldQuarantined.filter((lv) => !removed.has(lv)));
    }
  }

  /**
   * `lvstamp quarantine purge` (DESIGN.md §6 "Quarantine"): plans the removal of every
   * quarantined LV of this owner that has been in quarantine at least
   * `olderThanMs` (0: all), under the same two signals as an expiry (tags of
   * this owner, an `ok` header of this owner with the name's ID, not open)
   * and without a live set or cap: a person asks for it. Returns a plan of
   * quarantined entries only, for `apply`. Dry or not, the LVs it must read
   * are activated under the host lock, as `plan` does, so both plan the
   * same; a dry run deactivates every one again, an applied one those it
   * will not remove (`apply` the rest that it did not remove).
   * With `lvs`, only those quarantined LVs, each named `vg/lv` or, when one
   * group holds it, `lv` (e.g. the quarantined copy of an ID that exists again).
   * @throws InvalidArgumentError for a bad owner ID or age, or an `lv` that
   *   several groups hold; NotFoundError for an `lvs` entry that names no
   *   quarantined LV in the scope; any inventory failure.
   */
  async planPurge(
    request: PurgeRequest & {
      readonly vgNames?: readonly string[];
      readonly lvs?: readonly string[];
    },
  ): Promise<{ plan: GcPlan; vgNames: readonly string[]; activated: readonly string[] }> {
    const vgNames = request.vgNames ?? (await this.#ports.volumes.discoverVolumeGroups());
    const scope = { vgNames, ownerId: request.ownerId };
    const inventoryOf = async (): Promise<Inventory> => {
      const taken = await takeInventory(this.#ports, { vgNames }, this.#naming, this.#clock);
      return request.lvs === undefined
        ? taken
        : {
            ...taken,
            quarantined: namedQuarantined(taken.quarantined ?? [], request.lvs, vgNames),
          };
    };
    let inventory = await inventoryOf();
    // A dry run activates as apply does (and rests them after), so that both read the same
    // sector 0 and plan the same (DESIGN.md §6 "Quarantine", purge); never in a group lvm
    // refuses to change, whose entries the plan keeps (rule 1).
    const activated = await this.#activateQuarantined(
      inventory,
      usableScope(inventory, scope),
      request.olderThanMs,
    );
    let plan: GcPlan;
    try {
      if (activated.length > 0) inventory = await inventoryOf();
      plan = purgePlan(inventory, request, this.#naming);
    } catch (error) {
      await this.#restQuarantined(activated);
      throw error;
    }
    await this.#holdExpiring(plan, activated);
    return { plan, vgNames, activated };
  }

  /** Activates the inactive, owned, quarantine-tagged LVs (quarantinedToActivate; none: no call). */
  async #activateQuarantined(
    inventory: Inventory,
    scope: { readonly vgNames: readonly string[]; readonly ownerId: string },
    windowMs: number | null,
  ): Promise<readonly string[]> {
    const port = this.#ports.quarantine;
    if (port === undefined) return [];
    const wanted = quarantinedToActivate(
      (inventory.quarantined ?? []).filter((q) => scope.vgNames.includes(q.vgName)),
      { ownerId: scope.ownerId, naming: this.#naming, windowMs },
    );
    if (wanted.length === 0) return [];
    return port.activateQuarantined(
      scope,
      wanted.map((device) => device.slice(device.indexOf('/') + 1)),
    );
  }

  /**
   * Of the quarantined LVs activated for `plan`, deactivates those it will
   * not remove (all of a dry run's) and holds the rest for `apply`.
   */
  async #holdExpiring(plan: GcPlan, activated: readonly string[]): Promise<void> {
    const expiring = new Set(
      plan.dryRun
        ? []
        : plan.entries.filter((e) => e.action === 'remove-quarantined').map((e) => e.device),
    );
    await this.#restQuarantined(activated.filter((lv) => !expiring.has(lv)));
    const held = activated.filter((lv) => expiring.has(lv));
    if (held.length > 0) this.#quarantinedHeld.set(plan, held);
  }

  /** Deactivates quarantined LVs this service activated (none: no call). */
  async #restQuarantined(lvs: readonly string[]): Promise<void> {
    if (lvs.length > 0) await this.#ports.quarantine?.deactivateQuarantined(lvs);
  }

  /** Deactivates snapshot LVs this service activated (none: no call). */
  async #rest(lvs: readonly string[]): Promise<void> {
    if (lvs.length > 0) await this.#ports.volumes.deactivateSnapshots(lvs);
  }
}

/** The quarantine window of a policy, or null when quarantine is off (DESIGN.md §6 "Quarantine"). */
function windowOf(policy: GcPolicy): number | null {
  const window = policy.quarantineMs ?? 0;
  return window > 0 ? window : null;
}

/**
 * `scope` without the groups the inventory found unusable (a PV missing or
 * seen twice...: VolumeGroups.unusableIn), in which nothing may be activated
 * or changed (DESIGN.md §6 rule 1).
 */
function usableScope<S extends { readonly vgNames: readonly string[] }>(
  inventory: Inventory,
  scope: S,
): S {
  const unusable = new Set((inventory.unusableGroups ?? []).map((g) => g.vgName));
  if (unusable.size === 0) return scope;
  return { ...scope, vgNames: scope.vgNames.filter((name) => !unusable.has(name)) };
}
