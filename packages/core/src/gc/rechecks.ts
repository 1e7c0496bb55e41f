/**
 * The executor's re-checks (DESIGN.md §6 "The executor"): what a volume or
 * snapshot entry relied on, read again under the host lock right before the
 * act. A removal and a quarantine share them.
 */
import type { DmMap } from '../device/types.js';
import type { LogicalVolume, UnusableGroup } from '../lvm/types.js';
import type { Volume } from '../volumes/types.js';
import { wipeApplies } from '../volumes/wipe.js';
import { unusableGroupText } from './plan-groups.js';
import { dmNameFor, dmUuidFor, parseFromTag, parseSnapshotTags } from '../naming.js';
import { readHeaderSafely, type HeaderReading } from '../volumes/header-reading.js';
import { failedHeaderCheck, failedTagCheck } from '../volumes/ownership.js';
import type { GcExecutorPorts } from './ports.js';
import type { GcOutcome, GcPlan, GcSnapshotEntry, GcVolumeEntry } from './types.js';
import { describeError, kernelNumber, numberKey } from './util.js';

/** What one entry's step did. */
export type Step = Pick<GcOutcome, 'outcome' | 'detail'>;

/** A `skipped` step: the re-check found a change. */
export function skipped(detail: string): Step {
  return { outcome: 'skipped', detail };
}

/**
 * The `skipped` step when `vgName` is one of the groups lvm refuses to
 * change (DESIGN.md §6 rule 1), from the re-check's own look-up; else null.
 * Checked before any map is removed or tag written.
 */
export function unusableGroupStep(
  vgName: string,
  unusableGroups: readonly UnusableGroup[] | undefined,
): Step | null {
  const group = (unusableGroups ?? []).find((g) => g.vgName === vgName);
  return group === undefined ? null : skipped(unusableGroupText(group));
}

/**
 * The planned LV found again by name in `lvs` (one look-up of its group),
 * with the planned `lv_uuid`; or the `skipped` step saying what changed.
 */
export function samePlannedLv<T extends LogicalVolume>(
  entry: {
    readonly device: string;
    readonly vgName: string;
    readonly lvName: string;
    readonly lvUuid: string;
  },
  found: readonly T[],
): Step | { readonly lv: T } {
  const lv = found.find((v) => v.vgName === entry.vgName && v.lvName === entry.lvName);
  if (lv === undefined) return skipped(`LV ${entry.device} no longer exists`);
  if (lv.lvUuid !== entry.lvUuid) {
    return skipped(
      `LV ${entry.device} was recreated: lv_uuid ${lv.lvUuid}, planned ${entry.lvUuid}`,
    );
  }
  return { lv };
}

/**
 * The re-checks of a volume entry (DESIGN.md §6 "The executor"), under the
 * host lock: the LV as planned, its evidence, active, not open besides its
 * own data device, which is not open either. Returns the LV and its data
 * device (or null), or the `skipped` step saying what changed.
 */
export async function recheckVolume(
  plan: GcPlan,
  entry: GcVolumeEntry,
  ports: GcExecutorPorts,
): Promise<Step | { readonly lv: Volume; readonly ownMap: DmMap | null }> {
  // The plan's own volume group is the whole scope of this re-check.
  const listed = await ports.volumes.listLogicalVolumes({ vgNames: [entry.vgName] }, [
    entry.lvName,
  ]);
  const unusable = unusableGroupStep(entry.vgName, listed.unusableGroups);
  if (unusable !== null) return unusable;
  const { volumes } = listed;
  const same = samePlannedLv(entry, volumes);
  if ('outcome' in same) return same;
  const { lv } = same;
  if (lv.volumeId !== entry.volumeId) {
    return skipped(
      `LV ${entry.device} now carries volume ID ${lv.volumeId}, planned ${entry.volumeId}`,
    );
  }

  const changed = changedSignal(plan, entry, lv, await readHeaderSafely(lv, ports.headers));
  if (changed !== null) return skipped(changed);

  const kernel = kernelNumber(lv);
  if (kernel === null) return skipped(`LV ${entry.device} is inactive now`);
  const dmMaps = await ports.devices.listAll();
  const lvDm = dmMaps.find((m) => m.major === kernel.major && m.minor === kernel.minor);
  if (lvDm === undefined)
    return skipped(
      `device ${numberKey(kernel)} of LV ${entry.device} is not in the device-mapper list`,
    );

  const ownMap = await dataDeviceOver(plan, entry.volumeId, numberKey(kernel), dmMaps, ports);
  const holders = lvDm.openCount - (ownMap === null ? 0 : 1);
  if (holders !== 0)
    return skipped(`LV ${entry.device} is open now (open count ${lvDm.openCount})`);
  if (ownMap !== null && ownMap.openCount > 0) {
    return skipped(`data device ${ownMap.name} is open now (${ownMap.openCount})`);
  }
  return { lv, ownMap };
}

/**
 * The re-checks of a snapshot entry (see removeSnapshot), under the host
 * lock. Returns the LV, or the `skipped` step saying what changed.
 */
export async function recheckSnapshot(
  plan: GcPlan,
  entry: GcSnapshotEntry,
  ports: GcExecutorPorts,
): Promise<Step | { readonly lv: LogicalVolume }> {
  const listed = await ports.volumes.listLogicalVolumes({ vgNames: [entry.vgName] }, [
    entry.lvName,
  ]);
  const unusable = unusableGroupStep(entry.vgName, listed.unusableGroups);
  if (unusable !== null) return unusable;
  const same = samePlannedLv(entry, listed.snapshots);
  if ('outcome' in same) return same;
  const { lv } = same;
  const tags = failedTagCheck(lv, plan.ownerId, plan.naming);
  if (tags !== null) return skipped(`LV no longer carries its tags: ${tags.detail}`);
  const planned = plannedSource(plan, lv, entry.sourceVolumeId);
  if ('outcome' in planned) return planned;
  const { source } = planned;
  const header = await readHeaderSafely(lv, ports.headers);
  if (header.status !== 'ok') return skipped(`sector 0 is ${header.status} now: ${header.reason}`);
  if (failedHeaderCheck(header, source, plan.ownerId) !== null) {
    return skipped(
      `sector 0 changed: volume ID ${header.header.volumeId}, owner ${header.header.ownerId}; planned ${source}, owner ${plan.ownerId}`,
    );
  }
  return (await recheckClosed(lv, entry.device, ports)) ?? { lv };
}

/**
 * The snapshot LV's `lvstamp.source` volume ID when it is still the planned
 * one; else the `skipped` step saying what it is now.
 */
export function plannedSource(
  plan: GcPlan,
  lv: LogicalVolume,
  planned: string | null | undefined,
): Step | { readonly source: string } {
  const source = parseSnapshotTags(lv.tags, plan.naming)?.sourceVolumeId ?? null;
  if (source === null || source !== planned) {
    return skipped(
      `${plan.naming.tag}.source tag is ${source ?? 'missing'} now, planned ${planned ?? '(none)'}`,
    );
  }
  return { source };
}

/**
 * An LV with no data device of its own (a snapshot, a quarantined LV) must
 * be active and not open right before it is removed: null when so, else
 * the `skipped` step saying why.
 */
export async function recheckClosed(
  lv: LogicalVolume,
  device: string,
  ports: GcExecutorPorts,
): Promise<Step | null> {
  const kernel = kernelNumber(lv);
  if (kernel === null) return skipped(`LV ${device} is inactive now`);
  const lvDm = (await ports.devices.listAll()).find(
    (m) => m.major === kernel.major && m.minor === kernel.minor,
  );
  if (lvDm === undefined) {
    return skipped(`device ${numberKey(kernel)} of LV ${device} is not in the device-mapper list`);
  }
  if (lvDm.openCount !== 0)
    return skipped(`LV ${device} is open now (open count ${lvDm.openCount})`);
  return null;
}

/**
 * The wipe right before a removal (DESIGN.md §5 "Wipe", §6 "The executor"),
 * under the host lock, after every re-check and after the LV's data device
 * map is gone: a thick LV that held a tenant's data is wiped with the
 * plan's policy. A thin LV (its pool zeroes chunks; a wipe would discard
 * chunks a snapshot shares), an `lvstamp_new_*` leftover (`heldData`
 * false: it never held data) and the policy `none` run no command.
 * @returns the words for the outcome (`wiped <path> (discard); ` or ''), or
 *   the `failed` step naming the wipe and why, which leaves the LV in place.
 */
export async function wipeBeforeRemoval(
  plan: GcPlan,
  lv: LogicalVolume,
  heldData: boolean,
  ports: GcExecutorPorts,
): Promise<Step | { readonly wiped: string }> {
  if (plan.wipe === 'none' || !wipeApplies(lv, heldData)) return { wiped: '' };
  const left = `LV ${lv.vgName}/${lv.lvName} left in place`;
  if (lv.dmPath === null) {
    return {
      outcome: 'failed',
      detail: `lvm reports no device path to wipe (${plan.wipe}); ${left}`,
    };
  }
  try {
    await ports.volumes.wipeLogicalVolume(plan.wipe, {
      dmPath: lv.dmPath,
      sizeBytes: lv.sizeBytes,
    });
  } catch (error) {
    return {
      outcome: 'failed',
      detail: `wipe (${plan.wipe}) of ${lv.dmPath} failed, ${left}: ${describeError(error)}`,
    };
  }
  return { wiped: `wiped ${lv.dmPath} (${plan.wipe}), ` };
}

/** `lvremove` of exactly this LV by `lv_uuid` (the remover checks name, open and tags once more). */
export async function removeByUuid(
  plan: GcPlan,
  lv: LogicalVolume,
  ports: GcExecutorPorts,
): Promise<void> {
  await ports.volumes.removeLogicalVolume({
    vgName: lv.vgName,
    lvName: lv.lvName,
    lvUuid: lv.lvUuid,
    ownerId: plan.ownerId,
  });
}

/**
 * Why the LV no longer carries the ownership the plan relied on, or null:
 * both tags (DESIGN.md §2.3), and the entry's evidence — its own header of
 * this owner, its source's header with a `lvstamp.from` tag, or still no
 * header at all (volumes/ownership.ts's checks, as the planner's).
 */
function changedSignal(
  plan: GcPlan,
  entry: GcVolumeEntry,
  lv: LogicalVolume,
  header: HeaderReading,
): string | null {
  const tags = failedTagCheck(lv, plan.ownerId, plan.naming);
  if (tags !== null) return `LV no longer carries its tags: ${tags.detail}`;
  const changedHeader = (volumeId: string, planned: string): string | null => {
    if (failedHeaderCheck(header, volumeId, plan.ownerId) === null) return null;
    return header.status === 'ok'
      ? `header changed: volume ID ${header.header.volumeId}, owner ${header.header.ownerId}; planned ${planned}, owner ${plan.ownerId}`
      : `header is ${header.status} now: ${header.reason}`;
  };
  switch (entry.evidence) {
    case 'header':
      return changedHeader(entry.volumeId, entry.volumeId);
    case 'source-header':
      return (
        changedHeader(
          entry.headerVolumeId ?? '',
          `the source's ${entry.headerVolumeId ?? '(none)'}`,
        ) ??
        (parseFromTag(lv.tags, plan.naming) === null
          ? `LV no longer carries a ${plan.naming.tag}.from tag`
          : null)
      );
    case 'owner-tag':
      return header.status === 'not-stamped'
        ? null
        : `header is ${header.status} now (planned: not stamped); the create may be in progress`;
    case null:
      return 'the entry records no ownership evidence';
  }
}

/** The data device `lvstamp-<id>` when it exists and its table targets `lvKey` (major:minor); else null. */
async function dataDeviceOver(
  plan: GcPlan,
  volumeId: string,
  lvKey: string,
  dmMaps: readonly DmMap[],
  ports: GcExecutorPorts,
): Promise<DmMap | null> {
  const name = dmNameFor(volumeId, plan.naming);
  const uuid = dmUuidFor(volumeId, plan.naming);
  const map = dmMaps.find((m) => m.name === name && m.uuid === uuid);
  if (map === undefined) return null;
  const table = await ports.devices.table(volumeId);
  return table !== null && numberKey(table) === lvKey ? map : null;
}
