import { DURATION_SYNTAX, EXIT_OK, EXIT_USAGE, messageOf, ReportedFailure } from '@lvstamp/app-kit';
import { Command, CommanderError, Option } from 'commander';
import type { GcService } from '@lvstamp/core';
import { runCluster } from './cluster-run.js';
import {
  DEFAULTS,
  resolveClusterConfig,
  resolveLiveSetConfig,
  resolveNodeConfig,
  withEnvironment,
  type RawClusterOptions,
  type RawCommonOptions,
  type RawNodeOptions,
} from './config.js';
import { describeFailure, EXIT_NOT_STARTED } from './errors.js';
import type { KubeApi } from './kube/api.js';
import type { KubeCredentials } from './kube/client.js';
import type { Logger } from './log.js';
import { buildLiveSet, buildSnapshotLiveSet } from './live-set.js';
import { abortedSummary, REPORT_ANNOTATION, runNode, type NodeSummary } from './node-run.js';
import { renderClusterReport, renderNodeReport } from './report.js';

/** A place to write text (process.stdout in production). */
export interface Output {
  write(text: string): unknown;
}

/** What the program needs from the outside world; tests pass fakes. */
export interface GcJobDeps {
  readonly stdout: Output;
  readonly stderr: Output;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly version: string;
  /** Builds the Kubernetes client (production: @kubernetes/client-node). */
  readonly createKubeApi: (credentials: KubeCredentials, requestTimeoutMs: number) => KubeApi;
  /** Builds the core GC of this host (production: createNodeServices().gc with the host lock file). */
  readonly createGc: (options: {
    lockFile: string;
    logger: Logger;
  }) => Pick<GcService, 'plan' | 'apply'>;
  readonly createLogger: (level: string) => Logger;
  /** Unix milliseconds. */
  readonly now: () => number;
  readonly sleep: (ms: number) => Promise<void>;
}

/**
 * An option that may also come from an environment variable. The variable
 * and the default are applied by `withEnvironment` (config.ts) from
 * `deps.env`, so that tests and production read the same table.
 */
const envOption = (flags: string, description: string, env: string, fallback?: string) =>
  new Option(
    flags,
    `${description} [env: ${env}]${fallback === undefined ? '' : ` (default: ${fallback})`}`,
  );

/** How the program reaches the Kubernetes API: list page size, request deadline, kubeconfig. */
function addKubeOptions(command: Command): Command {
  return command
    .addOption(
      new Option('--page-size <n>', 'items per list page (limit + continue)').default(
        DEFAULTS.pageSize,
      ),
    )
    .addOption(
      new Option('--request-timeout <duration>', 'deadline of each Kubernetes API request').default(
        DEFAULTS.requestTimeout,
      ),
    )
    .addOption(
      envOption(
        '--kubeconfig <file>',
        'kubeconfig outside a pod (default: in-cluster credentials in a pod, else ~/.kube/config)',
        'KUBECONFIG',
      ),
    );
}

/** Options of both modes. */
function addCommonOptions(command: Command): Command {
  return addKubeOptions(
    command
      .addOption(
        envOption(
          '--driver-name <name>',
          'CSI driver name of the PVs and CSINodes',
          'LVSTAMP_DRIVER_NAME',
          DEFAULTS.driverName,
        ),
      )
      .addOption(
        envOption(
          '--owner-id <hex>',
          "this installation's owner ID (32 hex digits); other owners' volumes are never touched",
          'LVSTAMP_OWNER_ID',
          DEFAULTS.ownerId,
        ),
      )
      .addOption(
        envOption(
          '--min-age <duration>',
          'grace period from the header creation time: younger volumes are kept',
          'LVSTAMP_GC_MIN_AGE',
          DEFAULTS.minAge,
        ),
      )
      .addOption(
        envOption(
          '--quarantine <duration>',
          'quarantine orphans this long before removal (lvstamp_q_<id>, restorable with `lvstamp quarantine restore`); 0: remove at once',
          'LVSTAMP_GC_QUARANTINE',
          DEFAULTS.quarantine,
        ),
      )
      .addOption(
        envOption(
          '--wipe <policy>',
          'before removing a thick volume (at once or at expiry): discard or zero make its blocks read zeros (docs/DESIGN.md §5 "Wipe"); none leaves them',
          'LVSTAMP_GC_WIPE',
          DEFAULTS.wipe,
        ),
      )
      .addOption(
        envOption(
          '--max-delete <n>',
          'remove at most N volumes per node and run',
          'LVSTAMP_GC_MAX_DELETE',
          DEFAULTS.maxDelete,
        ),
      )
      .addOption(
        envOption(
          '--max-delete-percent <p>',
          "remove at most P % of the node's stamped volumes per run (rounded down)",
          'LVSTAMP_GC_MAX_DELETE_PERCENT',
          DEFAULTS.maxDeletePercent,
        ),
      )
      .addOption(
        envOption(
          '--apply',
          'delete what the plan says (default: dry run, report only)',
          'LVSTAMP_GC_APPLY',
        ),
      )
      .addOption(
        envOption(
          '--allow-empty-live-set',
          'accept that no PV of the driver exists while stamped volumes do',
          'LVSTAMP_GC_ALLOW_EMPTY_LIVE_SET',
        ),
      ),
  )
    .addOption(new Option('--json', 'print the report as JSON').default(false))
    .addOption(
      envOption(
        '--log-level <level>',
        'pino log level (logs go to standard error)',
        'LVSTAMP_LOG_LEVEL',
        DEFAULTS.logLevel,
      ),
    );
}

/** Builds the `lvstamp-gc` program (commander); each action sets `state.exitCode`. */
export function buildProgram(
  deps: GcJobDeps,
  state: { exitCode: number } = { exitCode: EXIT_OK },
): Command {
  const program = new Command('lvstamp-gc')
    .description(
      'Finds and removes leaked lvstamp volumes in a Kubernetes cluster; dry run unless --apply.',
    )
    .version(deps.version)
    .exitOverride()
    .configureOutput({
      writeOut: (text) => deps.stdout.write(text),
      writeErr: (text) => deps.stderr.write(text),
    })
    .addHelpText(
      'after',
      '\nA volume is removed only when its LV name has the lvstamp prefix AND its sector-0 header is valid,\n' +
        "matches the name and carries this installation's owner ID; no PV of the driver and no PVC names it;\n" +
        'it is not open or mounted; and it is older than the grace period. Everything else is kept, with the reason.\n' +
        `Durations: ${DURATION_SYNTAX}.\n` +
        'Exit codes: 0 ok, 1 a node or removal failed or the run was refused, 2 bad usage,\n' +
        '3 (cluster) the only failures are nodes that never ran their Job (not-started: unschedulable, image not pulled, ...).',
    );

  addCommonOptions(
    program
      .command('node')
      .description(
        'GC this node: live set from the API server, plan, apply with --apply, Events, report (what each per-node Job runs)',
      ),
  )
    .addOption(
      envOption(
        '--node-name <name>',
        'this Node (Events are about it); default the host name',
        'NODE_NAME',
      ),
    )
    .addOption(
      envOption(
        '--lock-file <path>',
        'host lock shared with the CSI driver and the CLI',
        'LVSTAMP_LOCK_FILE',
        DEFAULTS.lockFile,
      ),
    )
    .addOption(
      envOption(
        '--events-namespace <ns>',
        'namespace of the Events about Nodes and PVs (cluster-scoped objects: "default")',
        'LVSTAMP_GC_EVENTS_NAMESPACE',
        DEFAULTS.eventsNamespace,
      ),
    )
    .addOption(
      envOption(
        '--report-job <ns/name>',
        'annotate this Job with the summary (set by `lvstamp-gc cluster`)',
        'LVSTAMP_GC_REPORT_JOB',
      ),
    )
    .action(async (raw: RawNodeOptions) => {
      state.exitCode = await nodeAction(raw, deps);
    });

  addKubeOptions(
    program
      .command('live-set')
      .description(
        'print the live set, one volume ID per line: what `lvstamp gc --live FILE` needs, built exactly as the node runs build it ' +
          '(every PV of the driver in any phase, by handle and name, and pvc-<uid> of every PVC); exit 1 and nothing on ' +
          'standard output when any list page fails',
      )
      .addOption(
        envOption(
          '--driver-name <name>',
          'CSI driver name of the PVs',
          'LVSTAMP_DRIVER_NAME',
          DEFAULTS.driverName,
        ),
      ),
  )
    .addOption(
      new Option(
        '--snapshots',
        'print the snapshot live set instead, one snapshot ID per line: what `lvstamp gc --live-snapshots FILE` needs ' +
          '(status.snapshotHandle and spec.source.snapshotHandle of every VolumeSnapshotContent of the driver); ' +
          'exit 1 when the VolumeSnapshotContent CRD is not installed',
      ).default(false),
    )
    .action(async (raw: Partial<RawCommonOptions> & { snapshots?: boolean }) => {
      const { snapshots, ...common } = raw;
      state.exitCode =
        snapshots === true
          ? await snapshotLiveSetAction(common, deps)
          : await liveSetAction(common, deps);
    });

  addCommonOptions(
    program
      .command('cluster')
      .description(
        'GC every node that runs the driver: one per-node Job each, wait, summarise (what the CronJob runs)',
      ),
  )
    .addOption(envOption('--namespace <ns>', 'namespace of the per-node Jobs', 'POD_NAMESPACE'))
    .addOption(
      envOption('--image <image>', 'container image of the per-node Jobs', 'LVSTAMP_GC_IMAGE'),
    )
    .addOption(
      envOption(
        '--image-pull-policy <policy>',
        'Always, IfNotPresent or Never',
        'LVSTAMP_GC_IMAGE_PULL_POLICY',
      ),
    )
    .addOption(
      envOption(
        '--lvm-metadata <where>',
        "lvm's archive and backup directories of the per-node Jobs: hostPath (the node's /etc/lvm/archive and /etc/lvm/backup) or emptyDir (a read-only /etc), as the driver's DaemonSet",
        'LVSTAMP_GC_LVM_METADATA',
        DEFAULTS.lvmMetadata,
      ),
    )
    .addOption(
      envOption(
        '--service-account <name>',
        'ServiceAccount of the per-node Jobs',
        'LVSTAMP_GC_SERVICE_ACCOUNT',
        DEFAULTS.serviceAccount,
      ),
    )
    .addOption(
      envOption(
        '--owner-job-name <name>',
        "this pod's Job (downward API label job-name): owner of the per-node Jobs",
        'LVSTAMP_GC_OWNER_JOB_NAME',
      ),
    )
    .addOption(
      envOption(
        '--owner-job-uid <uid>',
        "that Job's UID (downward API label controller-uid)",
        'LVSTAMP_GC_OWNER_JOB_UID',
      ),
    )
    .addOption(
      envOption(
        '--wait-timeout <duration>',
        'how long to wait for all per-node Jobs',
        'LVSTAMP_GC_WAIT_TIMEOUT',
        DEFAULTS.waitTimeout,
      ),
    )
    .addOption(
      new Option('--poll-interval <duration>', 'how often to read the per-node Jobs').default(
        DEFAULTS.pollInterval,
      ),
    )
    .addOption(
      envOption(
        '--node-job-deadline <duration>',
        'activeDeadlineSeconds of each per-node Job',
        'LVSTAMP_GC_NODE_JOB_DEADLINE',
        DEFAULTS.nodeJobDeadline,
      ),
    )
    .addOption(
      envOption(
        '--events-namespace <ns>',
        'passed on to the per-node Jobs',
        'LVSTAMP_GC_EVENTS_NAMESPACE',
        DEFAULTS.eventsNamespace,
      ),
    )
    .action(async (raw: RawClusterOptions) => {
      state.exitCode = await clusterAction(raw, deps);
    });

  for (const command of program.commands) {
    command.exitOverride();
    command.configureOutput(program.configureOutput());
  }
  return program;
}

async function nodeAction(raw: RawNodeOptions, deps: GcJobDeps): Promise<number> {
  const config = resolveNodeConfig(withEnvironment(raw, deps.env), deps.env);
  const logger = deps.createLogger(config.logLevel);
  const kube = deps.createKubeApi(config.credentials, config.requestTimeoutMs);
  const report = async (summary: NodeSummary) => {
    if (config.reportJob === null) return;
    try {
      await kube.annotateJob(config.reportJob.namespace, config.reportJob.name, {
        [REPORT_ANNOTATION]: JSON.stringify(summary),
      });
    } catch (error) {
      logger.error({ error: messageOf(error) }, 'cannot annotate the report job');
    }
  };
  let result;
  try {
    result = await runNode(config, {
      kube,
      gc: deps.createGc({ lockFile: config.lockFile, logger }),
      logger,
      now: deps.now,
    });
  } catch (error) {
    const summary = abortedSummary(config, error);
    logger.error({ ...summary }, 'node run aborted; nothing was removed');
    await report(summary);
    throw error;
  }
  await report(result.summary);
  deps.stdout.write(
    config.json ? `${JSON.stringify(result, null, 2)}\n` : renderNodeReport(result),
  );
  if (result.summary.status !== 'ok')
    throw new ReportedFailure(result.summary.error ?? 'the run failed');
  return EXIT_OK;
}

async function liveSetAction(raw: Partial<RawCommonOptions>, deps: GcJobDeps): Promise<number> {
  const config = resolveLiveSetConfig(
    withEnvironment<RawCommonOptions>({ json: false, ...raw }, deps.env),
    deps.env,
  );
  const kube = deps.createKubeApi(config.credentials, config.requestTimeoutMs);
  const live = await buildLiveSet(kube, config);
  deps.stdout.write(
    [...live.ids]
      .sort()
      .map((id) => `${id}\n`)
      .join(''),
  );
  deps.stderr.write(
    `live set: ${live.ids.size} volume IDs from ${live.driverPvCount} PV(s) of ${config.driverName} and ${live.pvcCount} PVC(s), ${live.pages} page(s)\n`,
  );
  return EXIT_OK;
}

async function snapshotLiveSetAction(
  raw: Partial<RawCommonOptions>,
  deps: GcJobDeps,
): Promise<number> {
  const config = resolveLiveSetConfig(
    withEnvironment<RawCommonOptions>({ json: false, ...raw }, deps.env),
    deps.env,
  );
  const kube = deps.createKubeApi(config.credentials, config.requestTimeoutMs);
  const live = await buildSnapshotLiveSet(kube, config);
  if (live.unavailable !== null) {
    throw new ReportedFailure(
      `${live.unavailable}; without a snapshot live set \`lvstamp gc\` keeps every snapshot`,
    );
  }
  deps.stdout.write(
    [...live.ids]
      .sort()
      .map((id) => `${id}\n`)
      .join(''),
  );
  deps.stderr.write(
    `snapshot live set: ${live.ids.size} snapshot IDs from ${live.contentCount} VolumeSnapshotContent(s) of ${config.driverName}, ${live.pages} page(s)\n`,
  );
  return EXIT_OK;
}

async function clusterAction(raw: RawClusterOptions, deps: GcJobDeps): Promise<number> {
  const config = resolveClusterConfig(withEnvironment(raw, deps.env), deps.env);
  const logger = deps.createLogger(config.logLevel);
  const kube = deps.createKubeApi(config.credentials, config.requestTimeoutMs);
  const report = await runCluster(config, { kube, logger, now: deps.now, sleep: deps.sleep });
  deps.stdout.write(
    config.json ? `${JSON.stringify(report, null, 2)}\n` : renderClusterReport(report),
  );
  if (report.failedNodes === 0) return EXIT_OK;
  const notStarted = report.nodes.filter((n) => n.status === 'not-started').map((n) => n.node);
  const ran = report.failedNodes - notStarted.length;
  const never =
    notStarted.length === 0
      ? ''
      : `${notStarted.length} node(s) never ran their Job (not-started: ${notStarted.join(', ')})`;
  if (ran === 0) throw new ReportedFailure(`${never}; see the report above`, EXIT_NOT_STARTED);
  throw new ReportedFailure(
    `${report.failedNodes} node(s) failed${never === '' ? '' : `, ${never}`}; see the report above`,
  );
}

/**
 * Runs `lvstamp-gc` with `argv` (without node and script) and returns the
 * exit code: 0 ok, 1 failed or refused, 2 bad usage, 3 nodes not started
 * (`cluster`). Never throws.
 */
export async function runGc(argv: readonly string[], deps: GcJobDeps): Promise<number> {
  const state = { exitCode: EXIT_OK };
  const program = buildProgram(deps, state);
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return state.exitCode;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
    const { exitCode, message } = describeFailure(error);
    deps.stderr.write(`lvstamp-gc: ${message}\n`);
    return exitCode;
  }
}
