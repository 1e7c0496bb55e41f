import { connect } from 'node:net';
import { lstat, unlink } from 'node:fs/promises';
import * as grpc from '@grpc/grpc-js';
import {
  FailedPreconditionError,
  InvalidArgumentError,
  KeyedMutex,
  volumeIdForName,
} from '@lvstamp/core';
import { driverScope, thinClassPools, type DriverConfig } from './config.js';
import { createControllerService } from './controller.js';
import type { Handler } from './csi-types.js';
import { toRpcFailure } from './errors.js';
import { createIdentityService, createReadinessCheck, type Readiness } from './identity.js';
import { byVolumeId, byVolumeName, bySnapshotId, bySnapshotName, withRpcLocks } from './lock.js';
import { logRpc, type Logger } from './log.js';
import type { DriverMetrics } from './metrics.js';
import { createNodeService } from './node.js';
import { fsNodePaths } from './paths.js';
import type { DriverCore, NodePaths } from './ports.js';
import { loadCsiServices } from './proto.js';

/** Where the driver listens: a unix socket (production) or TCP (tests). */
export type Endpoint =
  | { readonly kind: 'unix'; readonly path: string }
  | { readonly kind: 'tcp'; readonly host: string; readonly port: number };

/**
 * Reads `--endpoint`: `unix:///abs/path/csi.sock` (also `unix:/abs/path`)
 * or `tcp://host:port` (port 0: any free port).
 * @throws InvalidArgumentError for anything else.
 */
export function parseEndpoint(text: string): Endpoint {
  const unix = /^unix:(?:\/\/)?(\/.+)$/.exec(text);
  if (unix?.[1] !== undefined) return { kind: 'unix', path: unix[1] };
  const tcp = /^tcp:\/\/(\[[^\]]+\]|[^:/]+):(\d{1,5})$/.exec(text);
  if (tcp?.[1] !== undefined && tcp[2] !== undefined && Number(tcp[2]) <= 65535) {
    return { kind: 'tcp', host: tcp[1], port: Number(tcp[2]) };
  }
  throw new InvalidArgumentError(
    `endpoint must be unix:///path/to/csi.sock or tcp://host:port, got "${text}"`,
  );
}

/** Everything the server is built from; tests fake `core` and `paths`. */
export interface ServerDeps {
  readonly endpoint: string;
  readonly driverName: string;
  readonly version: string;
  readonly nodeId: string;
  readonly ownerId: string;
  readonly config: DriverConfig;
  readonly core: DriverCore;
  readonly paths?: NodePaths;
  readonly logger: Logger;
  readonly metrics?: DriverMetrics;
}

/** A running (or runnable) driver. */
export interface DriverServer {
  /**
   * Binds the endpoint and starts serving.
   * @returns the address clients dial: `unix:///…` or `127.0.0.1:PORT` with the real port.
   * @throws FailedPreconditionError when a live server already answers on the socket.
   */
  start(): Promise<string>;
  /**
   * Graceful shutdown: stop accepting calls, let in-flight calls finish
   * within `graceMs` milliseconds (then cancel them), remove the socket file
   * (only one this server bound).
   */
  stop(graceMs?: number): Promise<void>;
  /**
   * What Probe would answer now (identity.ts `createReadinessCheck`, the same state), with the
   * reason when not ready; for /healthz.
   * @throws the lvm failure that makes Probe fail.
   */
  readiness(): Promise<Readiness>;
}

/** Default bound on in-flight calls at shutdown, in milliseconds. */
export const DEFAULT_SHUTDOWN_GRACE_MS = 10_000;

const nameKey = (request: { name: string }): string | null => {
  try {
    return volumeIdForName(request.name);
  } catch {
    return null;
  }
};

/** The volume a request names, for the log line. */
function volumeIdOf(request: unknown): string | null {
  if (typeof request !== 'object' || request === null) return null;
  const record = request as { volume_id?: unknown; name?: unknown };
  if (typeof record.volume_id === 'string' && record.volume_id !== '') return record.volume_id;
  if (typeof record.name === 'string') return nameKey({ name: record.name });
  return null;
}

/**
 * Builds the driver: Identity, Controller and Node over one gRPC server,
 * each mutating handler behind the per-RPC lock (lock.ts), each call logged (one
 * line), counted, and its errors mapped in errors.ts.
 */
export function createServer(deps: ServerDeps): DriverServer {
  const endpoint = parseEndpoint(deps.endpoint);
  const services = loadCsiServices();
  const mutex = new KeyedMutex();
  const readiness = createReadinessCheck({
    config: deps.config,
    core: deps.core,
    onNotReady: (reason) => {
      deps.logger.warn({ reason }, 'probe: not ready');
    },
  });
  // Unlocked: the Identity RPCs only read (Probe asks lvm at most once until ready).
  const identity = createIdentityService({
    driverName: deps.driverName,
    version: deps.version,
    config: deps.config,
    core: deps.core,
    readiness,
  });
  const controller = withRpcLocks(
    createControllerService({
      nodeId: deps.nodeId,
      ownerId: deps.ownerId,
      config: deps.config,
      core: deps.core,
      onVolumeGroupState: (state) => {
        if (state.problem !== null) {
          deps.logger.warn(state, 'volume group unusable: its device class reports 0 capacity');
        }
        deps.metrics?.volumeGroupState(state.deviceClass, state.volumeGroup, state.problem);
      },
      onThinPoolUnusable: (state) => {
        deps.logger.warn(state, 'thin pool unusable: its device class reports 0 capacity');
      },
      onThinPoolState: ({ deviceClass, pool, capacity }) => {
        const { condition, detail, dataRatio, metadataRatio } = capacity;
        if (condition !== 'ok' && condition !== 'prospective') {
          deps.logger.warn(
            { deviceClass, pool, condition, detail },
            'thin pool takes no new volume: its device class reports 0 capacity',
          );
        } else if (capacity.whenFull === 'queue') {
          deps.logger.warn(
            { deviceClass, pool, whenFull: capacity.whenFull },
            'thin pool queues writes when full (lv_when_full queue): writers then block; lvchange --errorwhenfull y makes them fail with ENOSPC',
          );
        }
        if (dataRatio !== null && dataRatio >= 0.9) {
          deps.logger.warn(
            { deviceClass, pool, dataRatio, metadataRatio },
            'thin pool data above 90 %',
          );
        }
      },
    }),
    {
      CreateVolume: byVolumeName,
      DeleteVolume: byVolumeId,
      CreateSnapshot: bySnapshotName,
      DeleteSnapshot: bySnapshotId,
      // Unlocked: ValidateVolumeCapabilities, ListVolumes, ListSnapshots and GetCapacity only
      // read (a look-up at one moment; the host lock orders them against changes);
      // ControllerGetCapabilities answers from configuration; the Publish, Expand, GetVolume,
      // GetSnapshot and ModifyVolume RPCs are UNIMPLEMENTED.
    },
    mutex,
  );
  const node = withRpcLocks(
    createNodeService({
      nodeId: deps.nodeId,
      core: deps.core,
      paths: deps.paths ?? fsNodePaths,
      scope: driverScope(deps.config, deps.ownerId),
      thinPools: thinClassPools(deps.config),
    }),
    {
      NodeStageVolume: byVolumeId,
      NodeUnstageVolume: byVolumeId,
      NodePublishVolume: byVolumeId,
      NodeUnpublishVolume: byVolumeId,
      NodeExpandVolume: byVolumeId,
      // Unlocked: NodeGetVolumeStats only reads (statfs and a look-up); NodeGetCapabilities and
      // NodeGetInfo answer from configuration.
    },
    mutex,
  );

  const server = new grpc.Server();
  const add = (
    service: grpc.ServiceClientConstructor,
    name: string,
    handlers: Readonly<Record<string, Handler>>,
  ): void => {
    const implementation: grpc.UntypedServiceImplementation = {};
    for (const method of Object.keys(service.service)) {
      const handler = handlers[method];
      if (handler !== undefined)
        implementation[method] = unary(`/csi.v1.${name}/${method}`, handler);
    }
    server.addService(service.service, implementation);
  };
  const unary =
    (method: string, handler: Handler): grpc.handleUnaryCall<unknown, unknown> =>
    (call, callback) => {
      const started = performance.now();
      const volumeId = volumeIdOf(call.request);
      const finish = (code: grpc.status, message?: string): void => {
        const durationMs = performance.now() - started;
        const codeName = grpc.status[code];
        logRpc(deps.logger, {
          method,
          volumeId,
          durationMs,
          code: codeName,
          ...(message === undefined ? {} : { message }),
        });
        deps.metrics?.observeRpc(method, codeName, durationMs / 1000);
      };
      handler(call.request as never).then(
        (response) => {
          finish(grpc.status.OK);
          callback(null, response);
        },
        (error: unknown) => {
          const failure = toRpcFailure(error);
          if (failure.details === 'internal error') {
            deps.logger.error({ method, volumeId, err: error }, 'unexpected error');
          }
          finish(failure.code, failure.details);
          callback({ code: failure.code, details: failure.details });
        },
      );
    };
  add(services.Identity, 'Identity', identity);
  add(services.Controller, 'Controller', controller);
  add(services.Node, 'Node', node);

  let started = false;
  return {
    readiness,

    async start(): Promise<string> {
      if (endpoint.kind === 'unix') await clearStaleSocket(endpoint.path);
      const target =
        endpoint.kind === 'unix' ? `unix://${endpoint.path}` : `${endpoint.host}:${endpoint.port}`;
      const port = await new Promise<number>((resolve, reject) => {
        server.bindAsync(target, grpc.ServerCredentials.createInsecure(), (error, bound) => {
          if (error) reject(error);
          else resolve(bound);
        });
      });
      started = true;
      const address =
        endpoint.kind === 'unix' ? `unix://${endpoint.path}` : `${endpoint.host}:${port}`;
      deps.logger.info({ address, nodeId: deps.nodeId, driver: deps.driverName }, 'serving CSI');
      return address;
    },

    async stop(graceMs = DEFAULT_SHUTDOWN_GRACE_MS): Promise<void> {
      // Only a socket this server bound is removed: a start refused over a file that is not a
      // socket (or over a live server's socket) leaves that path as it was.
      const bound = started;
      if (started) {
        let timer: NodeJS.Timeout | undefined;
        const graceful = new Promise<boolean>((resolve) => {
          server.tryShutdown(() => {
            resolve(true);
          });
        });
        const timeout = new Promise<boolean>((resolve) => {
          timer = setTimeout(() => {
            resolve(false);
          }, graceMs);
        });
        const clean = await Promise.race([graceful, timeout]);
        clearTimeout(timer);
        if (!clean) {
          deps.logger.warn({ graceMs }, 'in-flight calls did not finish in time; cancelling them');
          server.forceShutdown();
        }
        started = false;
      }
      if (endpoint.kind === 'unix' && bound) await removeIfPresent(endpoint.path);
      deps.logger.info('stopped');
    },
  };
}

/**
 * Makes the socket path free: a socket nobody answers on (left by a killed
 * driver) is removed; a live one is refused; anything else is left alone
 * and refused. A missing path is free.
 * @throws FailedPreconditionError for a live server or a path that is no socket.
 */
export async function clearStaleSocket(path: string): Promise<void> {
  let isSocket: boolean;
  try {
    isSocket = (await lstat(path)).isSocket();
  } catch {
    return;
  }
  if (!isSocket)
    throw new FailedPreconditionError(`${path} exists and is not a socket; refusing to replace it`);
  const live = await new Promise<boolean>((resolve) => {
    const socket = connect(path);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => {
      resolve(false);
    });
  });
  if (live) throw new FailedPreconditionError(`${path} is in use by a live server`);
  await unlink(path);
}

/**
 * Removes a file (the driver's own socket at shutdown); a missing one is success.
 * @throws the unlink error other than ENOENT.
 */
export async function removeIfPresent(path: string): Promise<void> {
  try {
    await unlink(path);
  } catch (error) {
    if (!(error instanceof Error && 'code' in error && error.code === 'ENOENT')) throw error;
  }
}
