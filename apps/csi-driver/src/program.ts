import { messageOf } from '@lvstamp/app-kit';
import { Command, CommanderError, Option } from 'commander';
import {
  DEFAULT_HOST_LOCK_PATH,
  InvalidArgumentError,
  parseOwnerId,
  requireNoControlCharacters,
  STANDALONE_OWNER_ID,
} from '@lvstamp/core';
import { classesLeavingOldBlocks, parseConfig } from './config.js';
import { createLogger, type Logger } from './log.js';
import { DriverMetrics } from './metrics.js';
import type { DriverCore, NodePaths } from './ports.js';
import { createHealthRoute, type RequiredSocket } from './health.js';
import { parseHttpAddress, serveHttp, type HttpAddress, type HttpRoute } from './http.js';
import { createRegistrationServer, requireSocketPathFlag } from './registration.js';
import { createServer, DEFAULT_SHUTDOWN_GRACE_MS, parseEndpoint, type Endpoint } from './server.js';

/** Parsed command line of `lvstamp-csi`. */
export interface DriverOptions {
  readonly endpoint: string;
  readonly nodeId: string;
  readonly driverName: string;
  /** Absent: refused at start unless `standalone` (then the standalone ID, 32 zeros). */
  readonly ownerId?: string;
  /** `--standalone`: a node without a cluster, sharing the standalone ID with the CLI. */
  readonly standalone: boolean;
  readonly config: string;
  readonly metricsAddress?: string;
  /** `--health-address`: where /healthz is served (absent: not served). */
  readonly healthAddress?: string;
  /** `--registration-socket`: the kubelet plugin registration socket, as this container sees it. */
  readonly registrationSocket?: string;
  /** `--kubelet-registration-path`: the CSI socket's path on the host, for the kubelet. */
  readonly kubeletRegistrationPath?: string;
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
  /** Logger factory; default JSON lines on stdout (docs/logging.md). */
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
      new Option(
        '--owner-id <hex>',
        'owner ID of this installation (32 hex digits; generate one: openssl rand -hex 16)',
      ).env('LVSTAMP_OWNER_ID'),
    )
    .option(
      '--standalone',
      'a node without a cluster: accept the standalone owner ID (32 zeros), shared with `lvstamp` volumes',
      false,
    )
    .option('--metrics-address <host:port>', 'serve Prometheus metrics at http://host:port/metrics')
    .option(
      '--health-address <host:port>',
      'serve the liveness check at http://host:port/healthz (200 ok, or 503 and the reason)',
    )
    .option(
      '--registration-socket <path>',
      'register with the kubelet: serve its plugin registration API on this socket, in the kubelet’s plugins_registry directory (needs --kubelet-registration-path)',
    )
    .option(
      '--kubelet-registration-path <path>',
      'the CSI socket’s path on the host, as the kubelet dials it (e.g. /var/lib/kubelet/plugins/lvstamp.io/csi.sock)',
    )
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

/** Where a cluster's owner ID comes from, for the refusals of `resolveOwnerId`. */
const OWNER_ID_FIX =
  'generate one per cluster with `openssl rand -hex 16` and set it with --owner-id or LVSTAMP_OWNER_ID ' +
  '(Kubernetes: owner-id in the ConfigMap lvstamp-csi-config, README "Deploying on a cluster", step 3)';

/**
 * The owner ID the driver runs with (DESIGN.md §3 "Owner ID"): 32 hex digits, lower-cased. The
 * standalone ID (32 zeros) is the CLI's own; a cluster driver sharing it could not tell the
 * cluster's volumes from a node admin's, and its GC would remove the admin's as orphans, so it is
 * accepted only with `--standalone` (and is the default there), and `--standalone` never in a
 * pod (`inPod`: the kubelet sets KUBERNETES_SERVICE_HOST in every container).
 * @throws InvalidArgumentError naming the fix when the ID is missing, not 32 hex digits, the
 *   standalone ID without `standalone`, or `standalone` in a pod.
 */
export function resolveOwnerId(
  value: string | undefined,
  standalone: boolean,
  inPod = false,
): string {
  if (standalone && inPod) {
    throw new InvalidArgumentError(
      '--standalone is for a node without a cluster, but this driver runs in a Kubernetes pod ' +
        `(KUBERNETES_SERVICE_HOST is set): ${OWNER_ID_FIX}`,
    );
  }
  if (value === undefined || value.trim() === '') {
    if (standalone) return STANDALONE_OWNER_ID;
    throw new InvalidArgumentError(
      `no owner ID: ${OWNER_ID_FIX}; or pass --standalone on a node without a cluster`,
    );
  }
  let ownerId: string;
  try {
    ownerId = parseOwnerId(value);
  } catch {
    throw new InvalidArgumentError(
      `the owner ID must be 32 hex digits, got "${value}": ${OWNER_ID_FIX}`,
    );
  }
  if (ownerId === STANDALONE_OWNER_ID && !standalone) {
    throw new InvalidArgumentError(
      'refusing the standalone owner ID (32 zeros) without --standalone: it is the owner of ' +
        "volumes made by hand with `lvstamp create`, which this installation's GC would remove " +
        `as orphans; ${OWNER_ID_FIX}`,
    );
  }
  if (ownerId !== STANDALONE_OWNER_ID && standalone) {
    throw new InvalidArgumentError(
      `--standalone runs with the standalone owner ID (32 zeros), got --owner-id ${ownerId}: drop one of the two`,
    );
  }
  return ownerId;
}

/**
 * Runs the driver until the stop signal: parses argv (without node and
 * script), validates the configuration, starts the CSI server, then the
 * HTTP servers (metrics, /healthz), then, with `--registration-socket`, the
 * kubelet plugin registration socket (only once the CSI endpoint listens);
 * at the stop signal, or when the kubelet refuses the registration, removes
 * the registration socket first and shuts down gracefully.
 * @returns the exit code: 0 after a clean stop; 1 when it could not start or
 *   the kubelet refused the registration (so that the kubelet restarts the
 *   container, as with node-driver-registrar); 2 for bad usage or
 *   configuration.
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
  let endpoint: Endpoint;
  let registration: Registration | undefined;
  const http: HttpPlan = new Map();
  try {
    endpoint = parseEndpoint(options.endpoint);
    registration = registrationOf(options, endpoint);
    if (options.metricsAddress !== undefined) {
      planRoute(http, parseHttpAddress(options.metricsAddress, '--metrics-address'), '/metrics');
    }
    if (options.healthAddress !== undefined) {
      planRoute(http, parseHttpAddress(options.healthAddress, '--health-address'), '/healthz');
    }
    const inPod = (process.env.KUBERNETES_SERVICE_HOST ?? '') !== '';
    ownerId = resolveOwnerId(options.ownerId, options.standalone, inPod);
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
  for (const c of classesLeavingOldBlocks(config)) {
    logger.warn(
      { deviceClass: c.name, volumeGroup: c.volumeGroup },
      'device class deletes without a wipe: the next volume on the same extents can read the old blocks (docs/DESIGN.md §5 "Wipe"; set wipe: discard or zero)',
    );
  }
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
  const registrationServer =
    registration === undefined
      ? undefined
      : createRegistrationServer({
          socketPath: registration.socketPath,
          kubeletEndpoint: registration.kubeletEndpoint,
          driverName: options.driverName,
          logger,
        });
  const sockets: RequiredSocket[] = [];
  if (endpoint.kind === 'unix') sockets.push({ name: 'CSI socket', path: endpoint.path });
  if (registration !== undefined) {
    sockets.push({ name: 'registration socket', path: registration.socketPath });
  }
  const routes: Readonly<Record<string, HttpRoute>> = {
    '/metrics': metrics.route(),
    '/healthz': createHealthRoute({ readiness: () => server.readiness(), sockets }),
  };
  const httpServers: { close(): unknown }[] = [];
  try {
    await server.start();
    for (const { address, paths } of http.values()) {
      const served = await serveHttp(
        address,
        Object.fromEntries(paths.map((path) => [path, routes[path] as HttpRoute])),
      );
      httpServers.push(served.server);
      for (const path of paths) {
        logger.info(
          { port: served.port },
          path === '/metrics' ? 'serving metrics' : 'serving health checks',
        );
      }
    }
    // Only once the CSI endpoint listens: the kubelet calls it as soon as the plugin is registered.
    await registrationServer?.start();
  } catch (error) {
    deps.stderr.write(`lvstamp-csi: cannot start: ${messageOf(error)}\n`);
    for (const each of httpServers) each.close();
    await registrationServer?.stop();
    await server.stop(0);
    return 1;
  }
  const outcome = await Promise.race([
    deps.stopSignal().then((signal) => ({ signal })),
    ...(registrationServer === undefined
      ? []
      : [registrationServer.refused.then((refusal) => ({ refusal }))]),
  ]);
  if ('signal' in outcome) logger.info({ signal: outcome.signal }, 'shutting down');
  else
    logger.error({ error: outcome.refusal }, 'shutting down: the kubelet refused the registration');
  // The registration socket goes first: the kubelet deregisters the plugin before the CSI socket closes.
  await registrationServer?.stop();
  for (const each of httpServers) each.close();
  await server.stop(options.shutdownGraceMs);
  return 'signal' in outcome ? 0 : 1;
}

/** Where the driver registers with the kubelet (both registration flags). */
interface Registration {
  readonly socketPath: string;
  readonly kubeletEndpoint: string;
}

/**
 * Reads the two registration flags: both or neither; absolute socket paths
 * (registration.ts `requireSocketPathFlag`); a unix CSI endpoint (the kubelet dials only unix
 * sockets) other than the registration socket.
 * @returns undefined when the driver does not register itself.
 * @throws InvalidArgumentError naming the flag.
 */
function registrationOf(options: DriverOptions, endpoint: Endpoint): Registration | undefined {
  const socketPath = options.registrationSocket;
  const kubeletEndpoint = options.kubeletRegistrationPath;
  if (socketPath === undefined && kubeletEndpoint === undefined) return undefined;
  if (socketPath === undefined) {
    throw new InvalidArgumentError(
      '--kubelet-registration-path needs --registration-socket (where the kubelet finds the driver, in its plugins_registry directory)',
    );
  }
  if (kubeletEndpoint === undefined) {
    throw new InvalidArgumentError(
      '--registration-socket needs --kubelet-registration-path (the CSI socket’s path on the host, as the kubelet dials it)',
    );
  }
  requireSocketPathFlag(socketPath, '--registration-socket');
  requireSocketPathFlag(kubeletEndpoint, '--kubelet-registration-path');
  if (endpoint.kind !== 'unix') {
    throw new InvalidArgumentError(
      `registering with the kubelet needs a unix:// --endpoint (the kubelet dials a unix socket), got "${options.endpoint}"`,
    );
  }
  if (endpoint.path === socketPath) {
    throw new InvalidArgumentError(
      `--registration-socket must differ from the CSI endpoint's socket ${endpoint.path}`,
    );
  }
  return { socketPath, kubeletEndpoint };
}

/** The HTTP servers to start: one per distinct address, with the paths it serves. */
type HttpPlan = Map<string, { address: HttpAddress; paths: string[] }>;

/** Adds `path` to the server at `address` (metrics and /healthz share one when equal). */
function planRoute(plan: HttpPlan, address: HttpAddress, path: string): void {
  const key = `${address.host}:${String(address.port)}`;
  const entry = plan.get(key);
  if (entry === undefined) plan.set(key, { address, paths: [path] });
  else entry.paths.push(path);
}
