import type { GcService } from '@lvstamp/core';
import type { KubeApi } from './kube/api.js';
import type { KubeCredentials } from './kube/client.js';
import type { Logger } from './log.js';

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
