import { messageOf } from '@lvstamp/app-kit';
import type { Logger } from 'pino';
import type { ClusterConfig } from './config.js';
import { KubeApiError } from './errors.js';
import type { KubeApi } from './kube/api.js';
import { boundText } from '@lvstamp/core';
import type { PodInfo } from './kube/api.js';
import {
  buildNodeJob,
  JOB_NAME_LABEL,
  NODE_JOB_LABEL,
  NODE_JOB_LABEL_VALUE,
  nodeJobName,
} from './jobs.js';
import { listAll } from './live-set.js';
import { REPORT_ANNOTATION, type NodeSummary } from './node-run.js';

/** One node's line in the cluster summary. */
export interface ClusterNodeResult {
  readonly node: string;
  readonly job: string;
  /**
   * `ok`: the Job succeeded and reported. `not-started`: no pod of the Job
   * ever ran on the node (not created, unschedulable, image not pulled,
   * rejected by the kubelet) before the Job failed or the wait ended;
   * nothing was collected there. `failed` / `timed-out`: it ran and did not
   * finish well or in time. Anything but `ok` counts as a failed node.
   */
  readonly status: 'ok' | 'failed' | 'timed-out' | 'not-started';
  /** The node's own summary from its Job's report annotation, when it left one. */
  readonly summary: NodeSummary | null;
  /** Why the node failed, when it did. */
  readonly error: string | null;
}

/** The result of `lvstamp-gc cluster`. */
export interface ClusterReport {
  readonly driverName: string;
  readonly dryRun: boolean;
  readonly nodes: readonly ClusterNodeResult[];
  /** Sums over the nodes' summaries. */
  readonly totals: {
    kept: number;
    warnings: number;
    planned: number;
    removed: number;
    /** Orphans put in quarantine (DESIGN.md §6 "Quarantine"). */
    quarantined: number;
    skipped: number;
    errors: number;
  };
  /** Nodes whose status is not `ok` (not-started included). */
  readonly failedNodes: number;
  /** Of those, nodes that never ran their Job (`not-started`). */
  readonly notStartedNodes: number;
}

/** What `runCluster` needs. */
export interface ClusterRunDeps {
  readonly kube: KubeApi;
  readonly logger: Logger;
  /** Unix milliseconds. */
  readonly now: () => number;
  /** Waits `ms` milliseconds. */
  readonly sleep: (ms: number) => Promise<void>;
}

/**
 * `lvstamp-gc cluster` (DESIGN.md §6): lists the CSINodes that list the
 * driver, creates one per-node Job for each (`buildNodeJob`; an existing
 * Job of the same name, from a retried run, is adopted), polls them until
 * each succeeded or failed or `waitTimeoutMs` passed, and summarises per
 * node from the report annotation each node Job leaves.
 * @throws KubeApiError when the CSINode list cannot be read (nothing was started).
 */
export async function runCluster(
  config: ClusterConfig,
  deps: ClusterRunDeps,
): Promise<ClusterReport> {
  const { logger } = deps;
  const csiNodes = await listAll((p) => deps.kube.listCsiNodes(p), config.pageSize, 'csinodes');
  const nodes = csiNodes.items
    .filter((n) => n.drivers.includes(config.driverName))
    .map((n) => n.name)
    .sort();
  logger.info({ driver: config.driverName, nodes }, 'nodes that run the driver');
  if (config.ownerJob === null) {
    logger.warn(
      'no owner Job given (--owner-job-name/--owner-job-uid): the per-node Jobs will not be garbage-collected with this run',
    );
  }

  const started: Started[] = [];
  const results = new Map<string, ClusterNodeResult>();
  for (const node of nodes) {
    const job = nodeJobName(config, node);
    try {
      await deps.kube.createJob(config.namespace, buildNodeJob(config, node));
      logger.info({ node, job }, 'per-node job created');
      started.push(newStarted(node, job));
    } catch (error) {
      if (error instanceof KubeApiError && error.kind === 'conflict') {
        logger.info({ node, job }, 'per-node job exists already (a retried run); waiting for it');
        started.push(newStarted(node, job));
        continue;
      }
      const message = messageOf(error);
      logger.error({ node, job, error: message }, 'cannot create the per-node job');
      results.set(node, { node, job, status: 'not-started', summary: null, error: message });
    }
  }

  const deadline = deps.now() + config.waitTimeoutMs;
  let pending = started;
  for (;;) {
    try {
      await observePods(config, deps, pending);
    } catch (error) {
      // Pods and events only explain a node that does not start; the Job's status decides.
      logger.warn({ error: messageOf(error) }, 'cannot read the per-node pods or their events');
    }
    const still: typeof pending = [];
    for (const s of pending) {
      let done: ClusterNodeResult | null;
      try {
        done = await checkJob(config, deps, s);
      } catch (error) {
        // A failed poll is not a failed node: poll again until the deadline.
        logger.warn({ job: s.job, error: messageOf(error) }, 'cannot read per-node job');
        done = null;
      }
      if (done === null) still.push(s);
      else {
        results.set(s.node, done);
        logger.info(
          { ...done.summary, node: s.node, job: s.job, status: done.status, error: done.error },
          'node finished',
        );
      }
    }
    pending = still;
    if (pending.length === 0) break;
    if (deps.now() >= deadline) {
      const seconds = Math.round(config.waitTimeoutMs / 1000);
      for (const s of pending) {
        results.set(
          s.node,
          s.started || s.podState === null
            ? {
                node: s.node,
                job: s.job,
                status: 'timed-out',
                summary: null,
                error: `job ${s.job} did not finish within ${seconds} s`,
              }
            : {
                node: s.node,
                job: s.job,
                status: 'not-started',
                summary: null,
                error: `job ${s.job} did not start within ${seconds} s: ${whyNotStarted(s)}`,
              },
        );
      }
      break;
    }
    await deps.sleep(Math.min(config.pollIntervalMs, Math.max(0, deadline - deps.now())));
  }

  const list = nodes
    .map((n) => results.get(n))
    .filter((r): r is ClusterNodeResult => r !== undefined);
  const totals = {
    kept: 0,
    warnings: 0,
    planned: 0,
    removed: 0,
    quarantined: 0,
    skipped: 0,
    errors: 0,
  };
  for (const r of list) {
    if (r.summary !== null) {
      for (const k of Object.keys(totals) as (keyof typeof totals)[])
        totals[k] += r.summary[k] ?? 0;
    } else totals.errors += 1;
  }
  const failedNodes = list.filter((r) => r.status !== 'ok').length;
  const notStartedNodes = list.filter((r) => r.status === 'not-started').length;
  const report: ClusterReport = {
    driverName: config.driverName,
    dryRun: !config.apply,
    nodes: list,
    totals,
    failedNodes,
    notStartedNodes,
  };
  logger.info(
    { nodes: list.length, failedNodes, notStartedNodes, ...totals, dryRun: report.dryRun },
    'cluster summary',
  );
  return report;
}

/** A per-node Job being waited for, with what its pods showed so far. */
interface Started {
  readonly node: string;
  readonly job: string;
  /** A pod of the Job ran (a container running or terminated, or phase Running/Succeeded). */
  started: boolean;
  /** Why its pod is not running, from the last look at it; null before any look. */
  podState: string | null;
  /** Names of the Job's pods seen so far (events of deleted pods still count). */
  readonly pods: Set<string>;
  /** Warning events of the Job and its pods, `reason: message` (latest look). */
  events: string[];
}

function newStarted(node: string, job: string): Started {
  return { node, job, started: false, podState: null, pods: new Set(), events: [] };
}

/** Most bytes of a not-started reason in the report. */
const REASON_BYTES = 1024;

/** The report's text for a Job that never ran: its pods' state and their warning events. */
function whyNotStarted(s: Started): string {
  const parts = [s.podState ?? 'no pod of the job was seen'];
  if (s.events.length > 0) parts.push(`events: ${s.events.join('; ')}`);
  return boundText(parts.join('; '), REASON_BYTES);
}

/**
 * Looks at the pods of the Jobs not yet known to have started (one list of
 * the per-node pods in the namespace, by label) and, when some did not
 * start, at the namespace's Warning events (one list), and records on each
 * `Started` whether a pod ran and, if not, why not (`podState`, `events`).
 * @throws KubeApiError when a list fails.
 */
async function observePods(
  config: ClusterConfig,
  deps: ClusterRunDeps,
  pending: readonly Started[],
): Promise<void> {
  const waiting = pending.filter((s) => !s.started);
  if (waiting.length === 0) return;
  const { items: pods } = await listAll(
    (p) => deps.kube.listPods(config.namespace, `${NODE_JOB_LABEL}=${NODE_JOB_LABEL_VALUE}`, p),
    config.pageSize,
    'pods',
  );
  const notRunning: Started[] = [];
  for (const s of waiting) {
    const mine = pods.filter((p) => p.labels[JOB_NAME_LABEL] === s.job);
    for (const p of mine) s.pods.add(p.name);
    if (mine.some(podStarted)) {
      s.started = true;
      continue;
    }
    s.podState = mine.length === 0 ? 'no pod created' : mine.map(podState).join('; ');
    notRunning.push(s);
  }
  if (notRunning.length === 0) return;
  const { items: events } = await listAll(
    (p) => deps.kube.listWarningEvents(config.namespace, p),
    config.pageSize,
    'events',
  );
  for (const s of notRunning) {
    const about = events.filter(
      (e) =>
        (e.involvedKind === 'Job' && e.involvedName === s.job) ||
        (e.involvedKind === 'Pod' && s.pods.has(e.involvedName)),
    );
    if (about.length > 0) {
      s.events = [
        ...new Set(
          about.map((e) => `${e.reason}${e.count > 1 ? ` (x${e.count})` : ''}: ${e.message}`),
        ),
      ];
    }
  }
}

/** True once a container of the pod ran (running or terminated) or the pod is Running/Succeeded. */
function podStarted(pod: PodInfo): boolean {
  return (
    pod.phase === 'Running' ||
    pod.phase === 'Succeeded' ||
    pod.containers.some((c) => c.state === 'running' || c.state === 'terminated')
  );
}

/** Why a pod is not running, in the words of its status (scheduler, kubelet, container runtime). */
function podState(pod: PodInfo): string {
  const why: string[] = [];
  const join = (reason: string | null, message: string | null) =>
    [reason, message].filter((t) => t !== null && t !== '').join(': ');
  if (pod.unscheduled !== null) {
    why.push(
      `not scheduled: ${join(pod.unscheduled.reason, pod.unscheduled.message) || 'no reason given'}`,
    );
  }
  if (pod.reason !== null || pod.message !== null) why.push(join(pod.reason, pod.message));
  for (const c of pod.containers) {
    if (c.state === 'waiting' && (c.reason !== null || c.message !== null)) {
      why.push(join(c.reason, c.message));
    }
  }
  const where = pod.nodeName === null ? '' : ` on ${pod.nodeName}`;
  return `pod ${pod.name} ${pod.phase ?? 'Pending'}${where}${why.length > 0 ? `: ${why.join('; ')}` : ''}`;
}

/** The node's result when its Job has finished, else null. */
async function checkJob(
  config: ClusterConfig,
  deps: ClusterRunDeps,
  s: Started,
): Promise<ClusterNodeResult | null> {
  const { node, job } = s;
  const status = await deps.kube.readJob(config.namespace, job);
  if (!status.complete && !status.failed) return null;
  const summary = parseSummary(status.annotations[REPORT_ANNOTATION]);
  // Not-started needs a look at the pods that found none running (podState set).
  if (status.failed && !s.started && s.podState !== null && summary === null) {
    return {
      node,
      job,
      status: 'not-started',
      summary: null,
      error: `job failed before it ran: ${status.failureReason ?? 'no reason given'}; ${whyNotStarted(s)}`,
    };
  }
  if (status.failed) {
    return {
      node,
      job,
      status: 'failed',
      summary,
      error: summary?.error ?? `job failed: ${status.failureReason ?? 'no reason given'}`,
    };
  }
  if (summary === null) {
    return {
      node,
      job,
      status: 'failed',
      summary: null,
      error: `job ${job} succeeded but left no report (annotation ${REPORT_ANNOTATION})`,
    };
  }
  return {
    node,
    job,
    status: summary.status === 'ok' ? 'ok' : 'failed',
    summary,
    error: summary.status === 'ok' ? null : (summary.error ?? summary.status),
  };
}

function parseSummary(text: string | undefined): NodeSummary | null {
  if (text === undefined) return null;
  try {
    const value = JSON.parse(text) as unknown;
    if (typeof value === 'object' && value !== null && 'node' in value && 'status' in value) {
      return value as NodeSummary;
    }
  } catch {
    // An unreadable report counts as none.
  }
  return null;
}
