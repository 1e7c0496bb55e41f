/**
 * The executor's quarantine steps (DESIGN.md §6 "Quarantine"): put an
 * orphan in quarantine, and remove a quarantined LV whose window passed.
 * Each runs under the host lock that applyGcPlan holds across "re-check,
 * then act".
 */
import { parseQuarantineTag, quarantineTagFor, quarantinedLvNameFor } from '../naming.js';
import { readHeaderSafely } from '../volumes/header-reading.js';
import { failedHeaderCheck, failedTagCheck } from '../volumes/ownership.js';
import type { LogicalVolume } from '../lvm/types.js';
import {
  plannedSource,
  recheckClosed,
  recheckSnapshot,
  recheckVolume,
  removeByUuid,
  samePlannedLv,
  skipped,
  wipeBeforeRemoval,
  unusableGroupStep,
  type Step,
} from './rechecks.js';
import type { GcExecutorPorts, GcQuarantinePort, QuarantineRef } from './ports.js';
import type { GcPlan, GcQuarantinedEntry, GcSnapshotEntry, GcVolumeEntry } from './types.js';

function portOf(ports: GcExecutorPorts): GcQuarantinePort {
  if (ports.quarantine === undefined) {
    throw new Error('this GC was built without a quarantine port; nothing was changed');
  }
  return ports.quarantine;
}

/**
 * Steps 2 and 3: tag with the plan time and deactivate, then rename into
 * quarantine.
 * @returns what was done, naming the tag and the new LV, for the outcome:
 *   `tagged lvstamp.quarantined=<s>, deactivated and renamed <vg>/<lv> to <vg>/lvstamp_q_<id>`.
 */
async function markAndRename(
  port: GcQuarantinePort,
  plan: GcPlan,
  lv: LogicalVolume,
  kind: QuarantineRef['kind'],
  id: string,
): Promise<string> {
  const ref: QuarantineRef = {
    kind,
    id,
    vgName: lv.vgName,
    lvName: lv.lvName,
    lvUuid: lv.lvUuid,
    ownerId: plan.ownerId,
  };
  const atSeconds = Math.floor(plan.plannedAtMs / 1000);
  await port.markQuarantined(ref, atSeconds);
  await port.renameQuarantined(ref);
  const to = quarantinedLvNameFor(kind, id, plan.naming);
  return `tagged ${quarantineTagFor(atSeconds, plan.naming)}, deactivated and renamed ${lv.vgName}/${lv.lvName} to ${lv.vgName}/${to}`;
}

/**
 * Quarantines an orphan volume: the volume entry's re-checks (as for a
 * removal), then (1) its data device map is removed, (2) one `lvchange`
 * tags it `lvstamp.quarantined=<plan time, s>` and deactivates it, (3)
 * `lvrename` to `lvstamp_q_<id>`. Its header is never written. A crash after
 * any step leaves a state the next run finishes: no map yet (1), or a
 * tagged `lvstamp_<id>` that the planner quarantines again with a fresh
 * time (2), or a finished quarantine (3).
 */
export async function quarantineVolume(
  plan: GcPlan,
  entry: GcVolumeEntry,
  ports: GcExecutorPorts,
): Promise<Step> {
  const port = portOf(ports);
  const checked = await recheckVolume(plan, entry, ports);
  if ('outcome' in checked) return checked;
  const { lv, ownMap } = checked;
  if (ownMap !== null) await ports.devices.remove(entry.volumeId);
  const done = await markAndRename(port, plan, lv, 'volume', entry.volumeId);
  return {
    outcome: 'quarantined',
    detail: `${ownMap === null ? '' : `removed data device ${ownMap.name}, `}${done}`,
  };
}

/**
 * Quarantines an orphan snapshot: the snapshot entry's re-checks, then one
 * `lvchange` (tag, deactivate) and `lvrename` to `lvstamp_qs_<id>`.
 */
export async function quarantineSnapshot(
  plan: GcPlan,
  entry: GcSnapshotEntry,
  ports: GcExecutorPorts,
): Promise<Step> {
  const port = portOf(ports);
  const checked = await recheckSnapshot(plan, entry, ports);
  if ('outcome' in checked) return checked;
  const { lv } = checked;
  const done = await markAndRename(port, plan, lv, 'snapshot', entry.snapshotId);
  return { outcome: 'quarantined', detail: `snapshot: ${done}` };
}

/**
 * Removes a quarantined LV whose window passed, after re-checking under
 * the host lock: its group one lvm can change (unusableGroupStep), same name and `lv_uuid`, the tags `lvstamp` and the
 * owner's, the planned quarantine time, (a snapshot) the planned
 * `lvstamp.source`, sector 0 an `ok` header of this owner with the planned
 * volume ID, active and not open; then a thick volume is wiped with the
 * plan's policy (wipeBeforeRemoval) and `lvremove` by `lv_uuid` runs (which
 * checks name, open and tags once more).
 */
export async function removeQuarantined(
  plan: GcPlan,
  entry: GcQuarantinedEntry,
  ports: GcExecutorPorts,
): Promise<Step> {
  const port = portOf(ports);
  // The LV and its group's state from one look-up of the group.
  const found = await port.listQuarantined({ vgNames: [entry.vgName] }, [entry.lvName]);
  const unusable = unusableGroupStep(entry.vgName, found.unusableGroups);
  if (unusable !== null) return unusable;
  const same = samePlannedLv(entry, found.lvs);
  if ('outcome' in same) return same;
  const { lv } = same;
  const tags = failedTagCheck(lv, plan.ownerId, plan.naming);
  if (tags !== null) return skipped(`LV no longer carries its tags: ${tags.detail}`);
  const at = parseQuarantineTag(lv.tags, plan.naming);
  if (at === null || at * 1000 !== entry.quarantinedAtMs) {
    return skipped(
      `quarantine tag is ${at === null ? 'missing or malformed' : String(at)} now, planned ${String((entry.quarantinedAtMs ?? 0) / 1000)}`,
    );
  }
  if (entry.kind === 'snapshot') {
    const source = plannedSource(plan, lv, entry.headerVolumeId);
    if ('outcome' in source) return source;
  }
  const header = await readHeaderSafely(lv, ports.headers);
  const failed = failedHeaderCheck(header, entry.headerVolumeId ?? '', plan.ownerId);
  if (failed !== null) return skipped(`sector 0 changed: ${failed.detail}`);
  const closed = await recheckClosed(lv, entry.device, ports);
  if (closed !== null) return closed;
  // A quarantined snapshot is a thin LV and never wiped; a thick volume held a tenant's data.
  const wipe = await wipeBeforeRemoval(plan, lv, entry.kind === 'volume', ports);
  if ('outcome' in wipe) return wipe;
  await removeByUuid(plan, lv, ports);
  return { outcome: 'removed', detail: `${wipe.wiped}removed quarantined LV ${entry.device}` };
}
