import { lstat } from 'node:fs/promises';
import type { HttpRoute } from './http.js';
import type { Readiness } from './identity.js';

/** A socket /healthz requires to still exist, and what to call it in the reason. */
export interface RequiredSocket {
  /** e.g. `CSI socket`, `registration socket`. */
  readonly name: string;
  readonly path: string;
}

/** What /healthz looks at; tests fake `isSocket` and `readiness`. */
export interface HealthDeps {
  /** What Probe would answer (server.ts `DriverServer.readiness`); throws Probe's failure. */
  readonly readiness: () => Promise<Readiness>;
  /** Checked first, in order. */
  readonly sockets: readonly RequiredSocket[];
  /** Default: lstat(2) says it is a socket. */
  readonly isSocket?: (path: string) => Promise<boolean>;
}

/** True when `path` is a socket (lstat(2), no side effect); false when missing or anything else. */
export async function isSocketFile(path: string): Promise<boolean> {
  try {
    return (await lstat(path)).isSocket();
  } catch {
    return false;
  }
}

/**
 * `GET /healthz`, the liveness check the kubelet runs on the driver container (the job the
 * livenessprobe sidecar did by calling Probe over the CSI socket): 200 `ok` when every required
 * socket is still there and Probe would answer ready; otherwise 503 with one line naming the
 * first failed check: `<name> <path> is gone`, `not ready: <reason>` or `probe failed: <error>`.
 * Kubernetes counts any status from 200 to 399 as success and any other as failure (Kubernetes
 * docs, "Configure Liveness, Readiness and Startup Probes").
 */
export function createHealthRoute(deps: HealthDeps): HttpRoute {
  const isSocket = deps.isSocket ?? isSocketFile;
  const unhealthy = (reason: string) => ({ status: 503, body: reason });
  return async () => {
    for (const socket of deps.sockets) {
      if (!(await isSocket(socket.path))) return unhealthy(`${socket.name} ${socket.path} is gone`);
    }
    let readiness: Readiness;
    try {
      readiness = await deps.readiness();
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      return unhealthy(`probe failed: ${message.split('\n')[0] ?? message}`);
    }
    if (!readiness.ready) return unhealthy(`not ready: ${readiness.reason}`);
    return { status: 200, body: 'ok' };
  };
}
