import { messageOf } from '@lvstamp/app-kit';
import { Command, CommanderError, Option } from 'commander';
import {
  DEFAULT_HOST_LOCK_PATH,
  parseOwnerId,
  requireNoControlCharacters,
  STANDALONE_OWNER_ID,
} from '@lvstamp/core';
import { parseConfig } from './config.js';
import { createLogger, type Logger } from './log.js';
import { DriverMetrics } from './metrics.js';
import type { DriverCore, NodePaths } from './ports.js';
import { createServer, DEFAULT_SHUTDOWN_GRACE_MS, parseEndpoint } from './server.js';

/** Parsed command line of `lvstamp-csi`. */
export interface DriverOptions {
  readonly endpoint: string;
  readonly nodeId: string;
  readonly driverName: string;
  readonly ownerId: string;
  readonly config: string;
  readonly metricsAddress?: string;
  readonly logLevel: string;
  readonly lockFile: string;
  readonly shutdownGraceMs: number;
}

/** The outside world of the driver; tests pass fakes. */
export interface DriverDeps {
  readonly version: string;
  readonly readText: (path: string) => Promise<string>;
  /** Builds the core (production: createNodeServices) for the host lock file. */
  readonly createCore: (options: { lockFile: string; logger: Logger }) => DriverCore;
  readonly paths?: NodePaths;
  /** Where usage errors and a fatal start failure are written. */
  readonly stderr: { write(text: string): unknown };
  /** Logger factory; default pino on stdout. */
  readonly createLogger?: (level: string) => Logger;
  /** Resolves when the process is asked to stop (SIGTERM, SIGINT). */
  readonly stopSignal: () => Promise<string>;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'];

/** Builds the `lvstamp-csi` command line (commander). */
export function buildProgram(deps: Pick<DriverDeps, 'version' | 'stderr'>): Command {
  return new Command('lvstamp-csi')
    .description(
      'The lvstamp CSI driver: Identity, Controller and Node for this node’s volume groups.',
    )
    .version(deps.version)
    .requiredOption(
      '--endpoint <endpoint>',
      'unix:///path/to/csi.sock, or tcp://127.0.0.1:PORT for tests',
    )
    .requiredOption('--node-id <id>', 'this node’s name, as the orchestrator knows it')
    .requiredOption(
      '--config <file>',
      'device classes (YAML): name → { volumeGroup, wipe, default }',
    )
    .option('--driver-name <name>', 'CSI driver name', 'lvstamp.io')
    .addOption(
      new Option('--owner-id <hex>', 'owner ID of this installation (32 hex digits)')
        .env('LVSTAMP_OWNER_ID')
        .default(STANDALONE_OWNER_ID, 'standalone: all zeros'),
    )
    .option('--metrics-address <host:port>', 'serve Prometheus metrics at http://host:port/metrics')
    .addOption(new Option('--log-level <level>', 'log level').choices(LOG_LEVELS).default('info'))
    .addOption(
      new Option('--lock-file <path>', 'host lock shared with the CLI and the GC job')
        .env('LVSTAMP_LOCK_FILE')
        .default(DEFAULT_HOST_LOCK_PATH),
    )
    .addOption(
      new Option('--shutdown-grace-ms <ms>', 'how long in-flight calls may run at shutdown')
        .argParser((v) => Number(v))
        .default(DEFAULT_SHUTDOWN_GRACE_MS),
    )
    .exitOverride()
    .configureOutput({
      writeOut: (text) => deps.stderr.write(text),
      writeErr: (text) => deps.stderr.write(text),
    });
}

/**
 * Runs the driver until the stop signal: parses argv (without node and
 * script), validates the configuration, starts the server (and metrics),
 * then shuts down gracefully.
 * @returns the exit code: 0 after a clean stop, 1 when it could not start,
 *   2 for bad usage or configuration.
 */
export async function runDriver(argv: readonly string[], deps: DriverDeps): Promise<number> {
  const program = buildProgram(deps);
  let options: DriverOptions;
  try {
    program.parse([...argv], { from: 'user' });
    options = program.opts<DriverOptions>();
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
    throw error;
  }
  let config;
  let ownerId: string;
  try {
    parseEndpoint(options.endpoint);
    ownerId = parseOwnerId(options.ownerId);
    if (options.nodeId.trim() === '') {
      throw new Error('--node-id must name this node (the orchestrator’s node name), got ""');
    }
    requireNoControlCharacters(options.nodeId, '--node-id');
    config = parseConfig(await deps.readText(options.config), options.config);
  } catch (error) {
    deps.stderr.write(`lvstamp-csi: ${messageOf(error)}\n`);
    return 2;
  }
  const logger = (deps.createLogger ?? createLogger)(options.logLevel);
  let core: DriverCore;
  try {
    core = deps.createCore({ lockFile: options.lockFile, logger });
  } catch (error) {
    // e.g. a --lock-file that does not end in .lock (InvalidArgumentError): a usage error
    deps.stderr.write(`lvstamp-csi: ${messageOf(error)}\n`);
    return 2;
  }
  // A driver that died between fsfreeze -f and -u left a filesystem frozen: thaw them all.
  try {
    const thawed = await core.snapshots.thawDataDeviceMounts();
    if (thawed.length > 0) logger.warn({ mountPoints: thawed }, 'thawed frozen filesystems');
  } catch (error) {
    logger.warn(
      { error: messageOf(error) },
      'could not check data device mounts for frozen filesystems',
    );
  }
  const metrics = new DriverMetrics({ config, core });
  const server = createServer({
    endpoint: options.endpoint,
    driverName: options.driverName,
    version: deps.version,
    nodeId: options.nodeId,
    ownerId,
    config,
    core,
    ...(deps.paths ? { paths: deps.paths } : {}),
    logger,
    metrics,
  });
  let metricsServer: { close(): unknown } | undefined;
  try {
    await server.start();
    if (options.metricsAddress !== undefined) {
      const served = await metrics.serve(options.metricsAddress);
      metricsServer = served.server;
      logger.info({ port: served.port }, 'serving metrics');
    }
  } catch (error) {
    deps.stderr.write(`lvstamp-csi: cannot start: ${messageOf(error)}\n`);
    await server.stop(0);
    return 1;
  }
  const signal = await deps.stopSignal();
  logger.info({ signal }, 'shutting down');
  metricsServer?.close();
  await server.stop(options.shutdownGraceMs);
  return 0;
}
