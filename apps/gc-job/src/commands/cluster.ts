import { EXIT_OK, ReportedFailure } from '@lvstamp/app-kit';
import { Option, type Command } from 'commander';
import { runCluster } from '../cluster-run.js';
import {
  DEFAULTS,
  resolveClusterConfig,
  withEnvironment,
  type RawClusterOptions,
} from '../config.js';
import type { GcJobDeps } from '../deps.js';
import { EXIT_NOT_STARTED } from '../errors.js';
import { renderClusterReport } from '../report.js';
import { addCommonOptions, envOption } from './options.js';

/**
 * `lvstamp-gc cluster`: one per-node Job for each node that runs the driver
 * (runCluster), then the summary; what the CronJob runs.
 */
export function registerClusterCommand(
  program: Command,
  deps: GcJobDeps,
  state: { exitCode: number },
): void {
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
