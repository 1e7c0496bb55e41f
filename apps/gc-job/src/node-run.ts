import { messageOf } from '@lvstamp/app-kit';
import type { GcOutcome, GcPlan, GcPlanEntry, GcService } from '@lvstamp/core';
import type { Logger } from 'pino';
import type { NodeConfig } from './config.js';
import type { EventSpec, KubeApi } from './kube/api.js';
import { buildLiveSet, buildSnapshotLiveSet, type LiveSet } from './live-set.js';

/** Annotation on a per-node Job that carries the node's summary (JSON of `NodeSummary`). */
export const REPORT_ANNOTATION = 'lvstamp.io/gc-report';
/** `source.component` of the Events this job records. */
export const EVENT_COMPONENT = 'lvstamp-gc';

/** Counts of one node's run: the line `lvstamp-gc cluster` shows per node. */
export interface NodeSummary {
  readonly node: string;
  readonly dryRun: boolean;
  /** `ok`: the run finished; `failed`: some removal or event failed; `aborted`: nothing was applied. */
  readonly status: 'ok' | 'failed' | 'aborted';
  /** Devices (LVs and maps) in the inventory. */
  readonly devices: number;
  /** Kept without a warning (live, young, …). */
  readonly kept: number;
  /** Kept with a warning (foreign, corrupt, open, future creation time, cap, …): someone should look. */
  readonly warnings: number;
  /** Planned acts: removals of volumes, snapshots and maps, quarantines and expiries. */
  readonly planned: number;
  readonly removed: number;
  /** Orphans put in quarantine instead of removed (DESIGN.md §6 "Quarantine"); absent when none. */
  readonly quarantined?: number;
  /** Planned removals not done: dry run, or the re-check found a change. */
  readonly skipped: number;
  /** Removals that failed plus Events that could not be recorded. */
  readonly errors: number;
  readonly capped: boolean;
  /** Why the run aborted or failed, when it did. */
  readonly error?: string;
}

/** The full result of one node's run (`--json` prints it). */
export interface NodeReport {
  readonly summary: NodeSummary;
  readonly liveSet: {
    readonly ids: number;
    readonly driverPvs: number;
    readonly pvcs: number;
    readonly pages: number;
    /** Snapshot IDs from VolumeSnapshotContents of this driver. */
    readonly snapshotIds: number;
    readonly snapshotContents: number;
    /** Why the snapshot live set could not be read (the CRD absent), or null. */
    readonly snapshotsUnavailable: string | null;
  };
  readonly plan: GcPlan;
  readonly outcomes: readonly GcOutcome[];
  /** Events that could not be recorded, with why. */
  readonly eventErrors: readonly string[];
}

/** What `runNode` needs. */
export interface NodeRunDeps {
  readonly kube: KubeApi;
  readonly gc: Pick<GcService, 'plan' | 'apply'>;
  readonly logger: Logger;
  /** Unix milliseconds. */
  readonly now: () => number;
}

/**
 * One node's GC run (`lvstamp-gc node`, DESIGN.md §6):
 *
 * 1. the live set from the API server (`buildLiveSet`) and the snapshot
 *    live set (`buildSnapshotLiveSet`): any failed page aborts here, before
 *    the inventory and before anything is deleted; the VolumeSnapshotContent
 *    CRD absent aborts in step 2 when snapshot LVs of this owner exist;
 * 2. inventory and plan on this node (core `GcService.plan`, pure planner
 *    of DESIGN.md §6 with owner, grace period and both caps), which refuses
 *    when no PV of this driver exists while stamped volumes do, unless
 *    `allowEmptyLiveSet` (DESIGN.md §2.4 "Refuse rather than guess");
 * 3. with `apply`: the core executor, which re-checks each device under the
 *    host lock right before acting;
 * 4. a Kubernetes Event per removed, failed or suspicious (warn) volume,
 *    about the volume's PV when it has one, else about the Node.
 *
 * @throws KubeApiError when the live set cannot be read completely;
 *   FailedPreconditionError for the refusal above; any core error from the
 *   inventory. Nothing is removed in these cases.
 */
export async function runNode(config: NodeConfig, deps: NodeRunDeps): Promise<NodeReport> {
  const { logger } = deps;
  const liveSet = await buildLiveSet(deps.kube, {
    driverName: config.driverName,
    pageSize: config.pageSize,
  });
  logger.info(
    {
      node: config.nodeName,
      liveIds: liveSet.ids.size,
      driverPvs: liveSet.driverPvCount,
      pvcs: liveSet.pvcCount,
      pages: liveSet.pages,
    },
    'live set read',
  );
  for (const odd of liveSet.oddHandles) {
    logger.warn(
      { pv: odd },
      'PV of this driver whose volume handle is not a volume ID; kept by name',
    );
  }
  const snapshots = await buildSnapshotLiveSet(deps.kube, {
    driverName: config.driverName,
    pageSize: config.pageSize,
  });
  logger.info(
    {
      node: config.nodeName,
      snapshotIds: snapshots.ids.size,
      snapshotContents: snapshots.contentCount,
      pages: snapshots.pages,
      ...(snapshots.unavailable === null ? {} : { unavailable: snapshots.unavailable }),
    },
    'snapshot live set read',
  );
  for (const odd of snapshots.oddHandles) {
    logger.warn(
      { volumeSnapshotContent: odd },
      'VolumeSnapshotContent of this driver whose snapshot handle is not a snapshot ID; it names no lvstamp snapshot',
    );
  }

  const { plan } = await deps.gc.plan({
    liveSet: liveSet.ids,
    allowEmptyLiveSet: config.allowEmptyLiveSet,
    allowEmptyLiveSetWith: '--allow-empty-live-set (LVSTAMP_GC_ALLOW_EMPTY_LIVE_SET=true)',
    liveSetSource: {
      what: `the list of PersistentVolumes of driver ${config.driverName}`,
      count: liveSet.driverPvCount,
    },
    snapshotLiveSet: snapshots.ids,
    ...(snapshots.unavailable === null
      ? {}
      : { snapshotLiveSetUnavailable: snapshots.unavailable }),
    policy: {
      ownerId: config.ownerId,
      minAgeMs: config.minAgeMs,
      quarantineMs: config.quarantineMs,
      wipe: config.wipe,
      maxDeletions: config.maxDeletions,
      maxDeletionPercent: config.maxDeletionPercent,
      dryRun: !config.apply,
    },
    nowMs: deps.now(),
  });
  for (const e of plan.entries) {
    if (e.severity === 'warn')
      logger.warn({ device: e.device, rule: e.rule, reason: e.reason }, 'kept: needs a look');
  }
  if (plan.capped)
    logger.warn({ cap: plan.deletionCap }, 'deletion cap reached; the rest waits for the next run');

  let outcomes: readonly GcOutcome[] = [];
  if (config.apply && plan.entries.some((e) => e.action !== 'keep')) {
    outcomes = await deps.gc.apply(plan, {
      onOutcome: (o) => {
        logger.info(
          { device: o.entry.device, action: o.entry.action, outcome: o.outcome, detail: o.detail },
          'applied',
        );
      },
    });
  }

  const eventErrors = await recordEvents(config, deps, plan, outcomes, liveSet);
  const summary = summarize(config, plan, outcomes, eventErrors);
  logger.info({ ...summary }, 'node summary');
  return {
    summary,
    liveSet: {
      ids: liveSet.ids.size,
      driverPvs: liveSet.driverPvCount,
      pvcs: liveSet.pvcCount,
      pages: liveSet.pages,
      snapshotIds: snapshots.ids.size,
      snapshotContents: snapshots.contentCount,
      snapshotsUnavailable: snapshots.unavailable,
    },
    plan,
    outcomes,
    eventErrors,
  };
}

/** The summary of a run that stopped before planning or applying. */
export function abortedSummary(config: NodeConfig, error: unknown): NodeSummary {
  return {
    node: config.nodeName,
    dryRun: !config.apply,
    status: 'aborted',
    devices: 0,
    kept: 0,
    warnings: 0,
    planned: 0,
    removed: 0,
    skipped: 0,
    errors: 1,
    capped: false,
    error: messageOf(error),
  };
}

function summarize(
  config: NodeConfig,
  plan: GcPlan,
  outcomes: readonly GcOutcome[],
  eventErrors: readonly string[],
): NodeSummary {
  const count = (o: GcOutcome['outcome']) => outcomes.filter((x) => x.outcome === o).length;
  const planned = plan.entries.filter((e) => e.action !== 'keep').length;
  const failed = count('failed');
  const errors = failed + eventErrors.length;
  return {
    node: config.nodeName,
    dryRun: plan.dryRun,
    status: errors > 0 ? 'failed' : 'ok',
    devices: plan.entries.length,
    kept: plan.entries.filter((e) => e.action === 'keep' && e.severity === 'info').length,
    warnings: plan.entries.filter((e) => e.action === 'keep' && e.severity === 'warn').length,
    planned,
    removed: count('removed'),
    ...(count('quarantined') > 0 ? { quarantined: count('quarantined') } : {}),
    skipped: config.apply ? count('skipped') : planned,
    errors,
    capped: plan.capped,
    ...(errors > 0
      ? { error: `${failed} removal(s) failed, ${eventErrors.length} event(s) not recorded` }
      : {}),
  };
}

/**
 * The Event reason of each act (DESIGN.md §6; "Quarantine": a quarantined
 * volume or snapshot, and the removal of one whose window passed).
 */
const EVENT_REASONS: Readonly<Record<GcPlanEntry['action'], string>> = {
  keep: 'VolumeKept',
  'remove-map': 'StaleDataDeviceRemoved',
  'remove-volume': 'LeakedVolumeRemoved',
  'remove-snapshot': 'LeakedSnapshotRemoved',
  'quarantine-volume': 'LeakedVolumeQuarantined',
  'quarantine-snapshot': 'LeakedSnapshotQuarantined',
  'remove-quarantined': 'QuarantinedVolumeRemoved',
};

/** Records one Event per removed, failed or suspicious entry; returns the failures (never throws). */
async function recordEvents(
  config: NodeConfig,
  deps: NodeRunDeps,
  plan: GcPlan,
  outcomes: readonly GcOutcome[],
  liveSet: LiveSet,
): Promise<string[]> {
  const events: EventSpec[] = [];
  const timeMs = deps.now();
  const about = (entry: GcPlanEntry): EventSpec['involvedObject'] => {
    const volumeId =
      entry.target === 'snapshot'
        ? null
        : entry.target === 'quarantined'
          ? entry.kind === 'volume'
            ? entry.id
            : null
          : entry.volumeId;
    const pv = volumeId === null ? undefined : liveSet.pvByVolumeId.get(volumeId);
    return pv === undefined
      ? { apiVersion: 'v1', kind: 'Node', name: config.nodeName }
      : { apiVersion: 'v1', kind: 'PersistentVolume', name: pv.name, uid: pv.uid };
  };
  const event = (entry: GcPlanEntry, reason: string, type: EventSpec['type'], message: string) =>
    events.push({
      namespace: config.eventsNamespace,
      involvedObject: about(entry),
      reason,
      type,
      message: `${entry.device} on node ${config.nodeName}: ${message}`.slice(0, 1024),
      component: EVENT_COMPONENT,
      host: config.nodeName,
      timeMs,
    });
  for (const o of outcomes) {
    if (o.outcome === 'removed' || o.outcome === 'quarantined') {
      event(o.entry, EVENT_REASONS[o.entry.action], 'Normal', `${o.detail} (${o.entry.reason})`);
    } else if (o.outcome === 'failed') {
      event(o.entry, 'LeakedVolumeRemovalFailed', 'Warning', o.detail);
    }
  }
  for (const e of plan.entries) {
    if (e.severity !== 'warn') continue;
    event(e, 'SuspiciousVolumeKept', 'Warning', `kept (rule ${e.rule}): ${e.reason}`);
  }
  const errors: string[] = [];
  for (const e of events) {
    try {
      await deps.kube.createEvent(e);
    } catch (error) {
      const message = messageOf(error);
      errors.push(message);
      deps.logger.error({ reason: e.reason, error: message }, 'cannot record event');
    }
  }
  return errors;
}
