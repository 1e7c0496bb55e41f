import type { Logger } from 'pino';
import type { ClusterConfig } from './config.js';
import { KubeApiError } from './errors.js';
import type { KubeApi } from './kube/api.js';
import { buildNodeJob, nodeJobName } from './jobs.js';
import { listAll } from './live-set.js';
import { REPORT_ANNOTATION, type NodeSummary } from './node-run.js';

/** One node's line in the cluster summary. */
export interface ClusterNodeResult {
  readonly node: string;
  readonly job: string;
  /** `ok`: the Job succeeded and reported; anything else counts as a failed node. */
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
    skipped: number;
    errors: number;
  };
  readonly failedNodes: number;
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
 * `lvstamp-gc cluster` (issue 4 §1): lists the CSINodes that list the
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

  const started: { node: string; job: string }[] = [];
  const results = new Map<string, ClusterNodeResult>();
  for (const node of nodes) {
    const job = nodeJobName(config, node);
    try {
      await deps.kube.createJob(config.namespace, buildNodeJob(config, node));
      logger.info({ node, job }, 'per-node job created');
      started.push({ node, job });
    } catch (error) {
      if (error instanceof KubeApiError && error.kind === 'conflict') {
        logger.info({ node, job }, 'per-node job exists already (a retried run); waiting for it');
        started.push({ node, job });
        continue;
      }
      const message = error instanceof Error ? error.message : String(error);
      logger.error({ node, job, error: message }, 'cannot create the per-node job');
      results.set(node, { node, job, status: 'not-started', summary: null, error: message });
    }
  }

  const deadline = deps.now() + config.waitTimeoutMs;
  let pending = started;
  for (;;) {
    const still: typeof pending = [];
    for (const s of pending) {
      let done: ClusterNodeResult | null;
      try {
        done = await checkJob(config, deps, s.node, s.job);
      } catch (error) {
        // A failed poll is not a failed node: poll again until the deadline.
        logger.warn(
          { job: s.job, error: error instanceof Error ? error.message : String(error) },
          'cannot read per-node job',
        );
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
      for (const s of pending) {
        results.set(s.node, {
          node: s.node,
          job: s.job,
          status: 'timed-out',
          summary: null,
          error: `job ${s.job} did not finish within ${Math.round(config.waitTimeoutMs / 1000)} s`,
        });
      }
      break;
    }
    await deps.sleep(Math.min(config.pollIntervalMs, Math.max(0, deadline - deps.now())));
  }

  const list = nodes
    .map((n) => results.get(n))
    .filter((r): r is ClusterNodeResult => r !== undefined);
  const totals = { kept: 0, warnings: 0, planned: 0, removed: 0, skipped: 0, errors: 0 };
  for (const r of list) {
    if (r.summary !== null) {
      for (const k of Object.keys(totals) as (keyof typeof totals)[]) totals[k] += r.summary[k];
    } else totals.errors += 1;
  }
  const failedNodes = list.filter((r) => r.status !== 'ok').length;
  const report: ClusterReport = {
    driverName: config.driverName,
    dryRun: !config.apply,
    nodes: list,
    totals,
    failedNodes,
  };
  logger.info(
    { nodes: list.length, failedNodes, ...totals, dryRun: report.dryRun },
    'cluster summary',
  );
  return report;
}

/** The node's result when its Job has finished, else null. */
async function checkJob(
  config: ClusterConfig,
  deps: ClusterRunDeps,
  node: string,
  job: string,
): Promise<ClusterNodeResult | null> {
  const status = await deps.kube.readJob(config.namespace, job);
  if (!status.complete && !status.failed) return null;
  const summary = parseSummary(status.annotations[REPORT_ANNOTATION]);
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
