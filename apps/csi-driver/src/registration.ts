import { Buffer } from 'node:buffer';
import * as grpc from '@grpc/grpc-js';
import { InvalidArgumentError, requireNoControlCharacters } from '@lvstamp/core';
import type { Logger } from './log.js';
import { loadRegistrationService } from './proto.js';
import { clearStaleSocket, removeIfPresent } from './server.js';

/** PluginInfo.type of a CSI driver (k8s.io/kubelet pluginregistration v1 `CSIPlugin`). */
export const CSI_PLUGIN_TYPE = 'CSIPlugin';

/**
 * PluginInfo.supported_versions: the CSI versions the driver serves, as node-driver-registrar
 * reports them (the kubelet's CSI plugin handler accepts any 1.x).
 */
export const SUPPORTED_CSI_VERSIONS: readonly string[] = Object.freeze(['1.0.0']);

/** How long stop() lets a registration call in flight finish, in milliseconds. */
const REGISTRATION_SHUTDOWN_MS = 1000;

/** sun_path of sockaddr_un (unix(7)) holds 108 bytes, the last one NUL. */
const MAX_SOCKET_PATH_BYTES = 107;

/**
 * Checks a socket path flag (`--registration-socket`, `--kubelet-registration-path`) before
 * anything is created: absolute, no `.` or `..` segment, no control characters, at most 107
 * bytes (unix(7) sun_path).
 * @param flag the flag's name, for the message.
 * @throws InvalidArgumentError naming the flag and what is wrong.
 */
export function requireSocketPathFlag(value: string, flag: string): void {
  if (!value.startsWith('/')) {
    throw new InvalidArgumentError(`${flag} must be an absolute path, got "${value}"`);
  }
  requireNoControlCharacters(value, flag);
  if (value.split('/').some((segment) => segment === '.' || segment === '..')) {
    throw new InvalidArgumentError(`${flag} must not contain "." or ".." segments, got "${value}"`);
  }
  if (value.endsWith('/')) {
    throw new InvalidArgumentError(`${flag} must name a socket file, not a directory: "${value}"`);
  }
  const bytes = Buffer.byteLength(value);
  if (bytes > MAX_SOCKET_PATH_BYTES) {
    throw new InvalidArgumentError(
      `${flag} is ${bytes} bytes long; a unix socket path holds at most ${MAX_SOCKET_PATH_BYTES} (unix(7) sun_path)`,
    );
  }
}

/** pluginregistration.v1 RegistrationStatus, as the kubelet sends it. */
export interface RegistrationStatus {
  readonly plugin_registered: boolean;
  readonly error: string;
}

/** What the driver does with the kubelet's verdict. */
export type RegistrationVerdict =
  { readonly registered: true } | { readonly registered: false; readonly error: string };

/**
 * Reads the kubelet's NotifyRegistrationStatus: registered, or refused with the kubelet's
 * reason. A refusal ends the driver with a non-zero exit, as node-driver-registrar does
 * (https://kubernetes-csi.github.io/docs/node-driver-registrar.html), so that the kubelet
 * restarts the container and the plugin watcher tries again with a new socket.
 */
export function registrationVerdict(status: RegistrationStatus): RegistrationVerdict {
  if (status.plugin_registered) return { registered: true };
  const error = status.error.trim();
  return {
    registered: false,
    error: error === '' ? 'the kubelet gave no reason' : (error.split('\n')[0] ?? error),
  };
}

/** What the registration socket serves and where it is. */
export interface RegistrationDeps {
  /** Where the socket is created: in the kubelet's plugins_registry directory, as this container sees it. */
  readonly socketPath: string;
  /** PluginInfo.endpoint: the CSI socket's path on the host, where the kubelet dials it. */
  readonly kubeletEndpoint: string;
  /** PluginInfo.name: the CSI driver name (GetPluginInfo's). */
  readonly driverName: string;
  readonly logger: Logger;
}

/** The registration socket of a running driver. */
export interface RegistrationServer {
  /**
   * Creates the socket (after the CSI endpoint listens: the kubelet calls the CSI socket as
   * soon as it registers the plugin). A stale socket at the path is replaced; a live one, or
   * anything that is not a socket, is refused and left alone.
   * @throws FailedPreconditionError for a path that is not a socket or a live server on it.
   */
  start(): Promise<void>;
  /** Closes the socket and removes its file (the kubelet then deregisters the plugin). */
  stop(): Promise<void>;
  /** Resolves with the kubelet's reason when it refuses the plugin; never rejects. */
  readonly refused: Promise<string>;
}

/**
 * The `pluginregistration.Registration` handlers (k8s.io/kubelet pluginregistration v1):
 * GetInfo describes the CSI plugin; NotifyRegistrationStatus is answered, then reported.
 */
export function createRegistrationHandlers(
  deps: Omit<RegistrationDeps, 'socketPath' | 'logger'> & {
    readonly onVerdict: (verdict: RegistrationVerdict) => void;
  },
) {
  return {
    GetInfo: () =>
      Promise.resolve({
        type: CSI_PLUGIN_TYPE,
        name: deps.driverName,
        endpoint: deps.kubeletEndpoint,
        supported_versions: [...SUPPORTED_CSI_VERSIONS],
      }),
    NotifyRegistrationStatus: (status: RegistrationStatus) => {
      deps.onVerdict(registrationVerdict(status));
      return Promise.resolve({});
    },
  };
}

/**
 * Builds the driver's own kubelet plugin registration (the job node-driver-registrar does as a
 * sidecar): a gRPC server of `pluginregistration.Registration` on a unix socket the kubelet's
 * plugin watcher finds in /var/lib/kubelet/plugins_registry/. Each call is logged; a refusal
 * resolves {@link RegistrationServer.refused}.
 */
export function createRegistrationServer(deps: RegistrationDeps): RegistrationServer {
  let refuse: (error: string) => void = () => undefined;
  const refused = new Promise<string>((resolve) => {
    refuse = resolve;
  });
  const handlers = createRegistrationHandlers({
    driverName: deps.driverName,
    kubeletEndpoint: deps.kubeletEndpoint,
    onVerdict: (verdict) => {
      if (verdict.registered) {
        deps.logger.info(
          { driver: deps.driverName, endpoint: deps.kubeletEndpoint },
          'registered with the kubelet',
        );
      } else {
        deps.logger.error({ error: verdict.error }, 'the kubelet refused the registration');
        refuse(verdict.error);
      }
    },
  });
  const service = loadRegistrationService();
  const server = new grpc.Server();
  server.addService(service.service, {
    GetInfo: (
      _call: grpc.ServerUnaryCall<unknown, unknown>,
      callback: grpc.sendUnaryData<unknown>,
    ) => {
      deps.logger.info({ socket: deps.socketPath }, 'the kubelet asked for plugin info');
      void handlers.GetInfo().then((info) => {
        callback(null, info);
      });
    },
    NotifyRegistrationStatus: (
      call: grpc.ServerUnaryCall<RegistrationStatus, unknown>,
      callback: grpc.sendUnaryData<unknown>,
    ) => {
      void handlers.NotifyRegistrationStatus(call.request).then((response) => {
        callback(null, response);
      });
    },
  });
  let started = false;
  return {
    refused,
    async start(): Promise<void> {
      await clearStaleSocket(deps.socketPath);
      await new Promise<void>((resolve, reject) => {
        server.bindAsync(
          `unix://${deps.socketPath}`,
          grpc.ServerCredentials.createInsecure(),
          (error) => {
            if (error) reject(error);
            else resolve();
          },
        );
      });
      started = true;
      deps.logger.info(
        { socket: deps.socketPath, endpoint: deps.kubeletEndpoint },
        'serving plugin registration',
      );
    },
    async stop(): Promise<void> {
      // Only a socket this server made is removed: a refused start left the path as it was.
      if (!started) return;
      started = false;
      // Lets the answer to a NotifyRegistrationStatus in flight reach the kubelet; both calls
      // are answered at once, so the bound is only for a client that never reads.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        new Promise<void>((resolve) => {
          server.tryShutdown(() => {
            resolve();
          });
        }),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, REGISTRATION_SHUTDOWN_MS);
        }),
      ]);
      clearTimeout(timer);
      server.forceShutdown();
      await removeIfPresent(deps.socketPath);
    },
  };
}
