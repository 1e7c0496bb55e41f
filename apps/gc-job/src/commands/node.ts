import { EXIT_OK, messageOf, ReportedFailure } from '@lvstamp/app-kit';
import type { Command } from 'commander';
import { DEFAULTS, resolveNodeConfig, withEnvironment, type RawNodeOptions } from '../config.js';
import type { GcJobDeps } from '../deps.js';
import { abortedSummary, REPORT_ANNOTATION, runNode, type NodeSummary } from '../node-run.js';
import { renderNodeReport } from '../report.js';
import { addCommonOptions, envOption } from './options.js';

/**
 * `lvstamp-gc node`: the GC of this node (runNode), what each per-node Job
 * runs; its summary annotates the Job named by --report-job.
 */
export function registerNodeCommand(
  program: Command,
  deps: GcJobDeps,
  state: { exitCode: number },
): void {
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
