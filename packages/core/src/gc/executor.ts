import { dmUuidFor } from '../naming.js';
import type { GcExecutorPorts } from './ports.js';
import type {
  GcMapEntry,
  GcOutcome,
  GcPlan,
  GcPlanEntry,
  GcQuarantinedEntry,
  GcSnapshotEntry,
  GcVolumeEntry,
} from './types.js';
import { quarantineSnapshot, quarantineVolume, removeQuarantined } from './quarantine-executor.js';
import {
  recheckSnapshot,
  recheckVolume,
  removeByUuid,
  skipped,
  wipeBeforeRemoval,
  type Step,
} from './rechecks.js';
import { describeError } from './util.js';

/** Options of `applyGcPlan`. */
export interface GcApplyOptions {
  /** Called after each removal entry with its outcome (progress reporting). */
  readonly onOutcome?: (outcome: GcOutcome) => void;
}

/**
 * Applies a GC plan (DESIGN.md §6 "The executor"): every `remove-map`, then
 * every `remove-volume` and `quarantine-volume`, then every `remove-snapshot`
 * and `quarantine-snapshot`, then every `remove-quarantined` (DESIGN.md §6
 * "Quarantine"), each re-checked and acted on under the host lock; a thick
 * volume LV is wiped with `plan.wipe` right before its `lvremove` (DESIGN.md
 * §5 "Wipe"). A changed device is `skipped`, a failure (a failed wipe
 * included, which leaves the LV) `failed` (the rest still run), and
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
    (e): e is GcVolumeEntry => e.action === 'remove-volume' || e.action === 'quarantine-volume',
  );
  const snapshotEntries = plan.entries.filter(
    (e): e is GcSnapshotEntry =>
      e.action === 'remove-snapshot' || e.action === 'quarantine-snapshot',
  );
  const expiryEntries = plan.entries.filter(
    (e): e is GcQuarantinedEntry => e.action === 'remove-quarantined',
  );
  const outcomes: GcOutcome[] = [];
  const report = (outcome: GcOutcome) => {
    outcomes.push(outcome);
    options.onOutcome?.(outcome);
  };

  for (const entry of [...mapEntries, ...volumeEntries, ...snapshotEntries, ...expiryEntries]) {
    if (plan.dryRun) {
      report({ entry, outcome: 'skipped', detail: 'dry run' });
      continue;
    }
    try {
      const step = await ports.hostLock.withLock(
        `gc: ${LOCK_REASONS[entry.action]} ${entry.device}`,
        () => act(plan, entry, ports),
      );
      report({ entry, ...step });
    } catch (error) {
      report({ entry, outcome: 'failed', detail: describeError(error) });
    }
  }
  return outcomes;
}

/** What the host lock records for each act, for whoever waits. */
const LOCK_REASONS: Readonly<Record<GcPlanEntry['action'], string>> = {
  keep: 'keep',
  'remove-map': 'remove data device',
  'remove-volume': 'remove volume',
  'remove-snapshot': 'remove snapshot',
  'quarantine-volume': 'quarantine volume',
  'quarantine-snapshot': 'quarantine snapshot',
  'remove-quarantined': 'remove quarantined',
};

/** The step of one entry, run under the host lock. */
function act(
  plan: GcPlan,
  entry: GcMapEntry | GcVolumeEntry | GcSnapshotEntry | GcQuarantinedEntry,
  ports: GcExecutorPorts,
): Promise<Step> {
  switch (entry.target) {
    case 'map':
      return removeMap(plan, entry, ports);
    case 'volume':
      return entry.action === 'quarantine-volume'
        ? quarantineVolume(plan, entry, ports)
        : removeVolume(plan, entry, ports);
    case 'snapshot':
      return entry.action === 'quarantine-snapshot'
        ? quarantineSnapshot(plan, entry, ports)
        : removeSnapshot(plan, entry, ports);
    case 'quarantined':
      return removeQuarantined(plan, entry, ports);
  }
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
  const checked = await recheckVolume(plan, entry, ports);
  if ('outcome' in checked) return checked;
  const { lv, ownMap } = checked;
  if (ownMap !== null) await ports.devices.remove(entry.volumeId);
  const unmapped = ownMap === null ? '' : `removed data device ${ownMap.name}, `;
  const wipe = await wipeBeforeRemoval(plan, lv, !lv.creating, ports);
  if ('outcome' in wipe) return { ...wipe, detail: `${unmapped}${wipe.detail}` };
  await removeByUuid(plan, lv, ports);
  return { outcome: 'removed', detail: `${unmapped}${wipe.wiped}removed LV ${entry.device}` };
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
  const checked = await recheckSnapshot(plan, entry, ports);
  if ('outcome' in checked) return checked;
  const lv = checked.lv;
  await removeByUuid(plan, lv, ports);
  return { outcome: 'removed', detail: `removed snapshot LV ${entry.device}` };
}
