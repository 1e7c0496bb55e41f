import type { DmMap } from '../device/types.js';
import type { LogicalVolume } from '../lvm/types.js';
import { dmNameFor, dmUuidFor, parseFromTag, parseSnapshotTags } from '../naming.js';
import { readHeaderSafely, type HeaderReading } from '../volumes/header-reading.js';
import { failedHeaderCheck, failedTagCheck } from '../volumes/ownership.js';
import type { GcExecutorPorts } from './ports.js';
import type { GcMapEntry, GcOutcome, GcPlan, GcSnapshotEntry, GcVolumeEntry } from './types.js';
import { describeError, kernelNumber, numberKey } from './util.js';

/** Options of `applyGcPlan`. */
export interface GcApplyOptions {
  /** Called after each removal entry with its outcome (progress reporting). */
  readonly onOutcome?: (outcome: GcOutcome) => void;
}

/**
 * Applies a GC plan (DESIGN.md §6 "The executor"): every `remove-map`, then
 * every `remove-volume`, then every `remove-snapshot`, each re-checked and acted on under the host lock; a
 * changed device is `skipped`, a failure `failed` (the rest still run), and
 * nothing is retried. A dry run calls no port and skips every removal.
 * @returns one outcome per removal entry, in the order acted on.
 * @throws only what `onOutcome` throws.
 */
export async function applyGcPlan(
  plan: GcPlan,
  ports: GcExecutorPorts,
  options: GcApplyOptions = {},
): Promise<GcOutcome[]> {
  const mapEntries = plan.entries.filter((e): e is GcMapEntry => e.action === 'remove-map');
  const volumeEntries = plan.entries.filter(
    (e): e is GcVolumeEntry => e.action === 'remove-volume',
  );
  const snapshotEntries = plan.entries.filter(
    (e): e is GcSnapshotEntry => e.action === 'remove-snapshot',
  );
  const outcomes: GcOutcome[] = [];
  const report = (outcome: GcOutcome) => {
    outcomes.push(outcome);
    options.onOutcome?.(outcome);
  };

  for (const entry of [...mapEntries, ...volumeEntries, ...snapshotEntries]) {
    if (plan.dryRun) {
      report({ entry, outcome: 'skipped', detail: 'dry run' });
      continue;
    }
    try {
      const step =
        entry.target === 'map'
          ? await ports.hostLock.withLock(`gc: remove data device ${entry.device}`, () =>
              removeMap(plan, entry, ports),
            )
          : entry.target === 'volume'
            ? await ports.hostLock.withLock(`gc: remove volume ${entry.device}`, () =>
                removeVolume(plan, entry, ports),
              )
            : await ports.hostLock.withLock(`gc: remove snapshot ${entry.device}`, () =>
                removeSnapshot(plan, entry, ports),
              );
      report({ entry, ...step });
    } catch (error) {
      report({ entry, outcome: 'failed', detail: describeError(error) });
    }
  }
  return outcomes;
}

type Step = Pick<GcOutcome, 'outcome' | 'detail'>;

function skipped(detail: string): Step {
  return { outcome: 'skipped', detail };
}

async function removeMap(plan: GcPlan, entry: GcMapEntry, ports: GcExecutorPorts): Promise<Step> {
  const volumeId = entry.volumeId;
  if (volumeId === null) return skipped('the entry names no volume ID');
  const uuid = dmUuidFor(volumeId, plan.naming);
  const map = (await ports.devices.listAll()).find((m) => m.name === entry.device);
  if (map === undefined) return skipped(`map ${entry.device} no longer exists`);
  if (map.uuid !== uuid)
    return skipped(`map ${entry.device} now has UUID ${map.uuid}, planned ${uuid}`);
  if (map.openCount > 0) return skipped(`map ${entry.device} is open now (${map.openCount})`);
  await ports.devices.remove(volumeId);
  return { outcome: 'removed', detail: `removed data device ${entry.device}; data untouched` };
}

async function removeVolume(
  plan: GcPlan,
  entry: GcVolumeEntry,
  ports: GcExecutorPorts,
): Promise<Step> {
  // The plan's own volume group is the whole scope of this re-check.
  const { volumes } = await ports.volumes.listLogicalVolumes({ vgNames: [entry.vgName] }, [
    entry.lvName,
  ]);
  const lv = volumes.find((v) => v.vgName === entry.vgName && v.lvName === entry.lvName);
  if (lv === undefined) return skipped(`LV ${entry.device} no longer exists`);
  if (lv.lvUuid !== entry.lvUuid) {
    return skipped(
      `LV ${entry.device} was recreated: lv_uuid ${lv.lvUuid}, planned ${entry.lvUuid}`,
    );
  }
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

  if (ownMap !== null) await ports.devices.remove(entry.volumeId);
  await ports.volumes.removeLogicalVolume({
    vgName: lv.vgName,
    lvName: lv.lvName,
    lvUuid: lv.lvUuid,
    ownerId: plan.ownerId,
  });
  return {
    outcome: 'removed',
    detail:
      ownMap === null
        ? `removed LV ${entry.device}`
        : `removed data device ${ownMap.name}, then LV ${entry.device}`,
  };
}

/**
 * Re-checks a snapshot LV under the host lock (DESIGN.md §6 "Snapshots"):
 * same name and `lv_uuid`, active, the tags (`lvstamp`, owner, the planned
 * `lvstamp.source`), sector 0 still the source's header of this owner, not
 * open; then `lvremove` by uuid (which checks uuid, name, open and tags once more).
 */
async function removeSnapshot(
  plan: GcPlan,
  entry: GcSnapshotEntry,
  ports: GcExecutorPorts,
): Promise<Step> {
  const { snapshots } = await ports.volumes.listLogicalVolumes({ vgNames: [entry.vgName] }, [
    entry.lvName,
  ]);
  const lv = snapshots.find((v) => v.vgName === entry.vgName && v.lvName === entry.lvName);
  if (lv === undefined) return skipped(`LV ${entry.device} no longer exists`);
  if (lv.lvUuid !== entry.lvUuid) {
    return skipped(
      `LV ${entry.device} was recreated: lv_uuid ${lv.lvUuid}, planned ${entry.lvUuid}`,
    );
  }
  const tags = failedTagCheck(lv, plan.ownerId, plan.naming);
  if (tags !== null) return skipped(`LV no longer carries its tags: ${tags.detail}`);
  const source = parseSnapshotTags(lv.tags, plan.naming)?.sourceVolumeId ?? null;
  if (source === null || source !== entry.sourceVolumeId) {
    return skipped(
      `${plan.naming.tag}.source tag is ${source ?? 'missing'} now, planned ${entry.sourceVolumeId ?? '(none)'}`,
    );
  }
  const header = await readHeaderSafely(lv, ports.headers);
  if (header.status !== 'ok') return skipped(`sector 0 is ${header.status} now: ${header.reason}`);
  if (failedHeaderCheck(header, source, plan.ownerId) !== null) {
    return skipped(
      `sector 0 changed: volume ID ${header.header.volumeId}, owner ${header.header.ownerId}; planned ${source}, owner ${plan.ownerId}`,
    );
  }
  const kernel = kernelNumber(lv);
  if (kernel === null) return skipped(`LV ${entry.device} is inactive now`);
  const lvDm = (await ports.devices.listAll()).find(
    (m) => m.major === kernel.major && m.minor === kernel.minor,
  );
  if (lvDm === undefined) {
    return skipped(
      `device ${numberKey(kernel)} of LV ${entry.device} is not in the device-mapper list`,
    );
  }
  if (lvDm.openCount !== 0)
    return skipped(`LV ${entry.device} is open now (open count ${lvDm.openCount})`);
  await ports.volumes.removeLogicalVolume({
    vgName: lv.vgName,
    lvName: lv.lvName,
    lvUuid: lv.lvUuid,
    ownerId: plan.ownerId,
  });
  return { outcome: 'removed', detail: `removed snapshot LV ${entry.device}` };
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
