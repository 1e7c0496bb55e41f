import { execFile } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';

const run = promisify(execFile);

/**
 * The directories of test-e2e/parts/build.sh's `kubernetes` part (kube-apiserver) and `etcd`
 * part (etcd), as that script prints them.
 */
export interface KubeParts {
  readonly kubernetes: string;
  readonly etcd: string;
}

declare module 'vitest' {
  /** Set by test/kube/global-setup.ts. */
  export interface ProvidedContext {
    kubeParts: KubeParts;
  }
}
const SCRIPTS = fileURLToPath(new URL('../../test/kube/', import.meta.url));

/** A running etcd + kube-apiserver on 127.0.0.1 (test/kube/start.sh). */
export interface KubeServer {
  readonly runDir: string;
  readonly kubeconfigPath: string;
  /** `https://127.0.0.1:<port>`. */
  readonly server: string;
  readonly caFile: string;
  /** Admin (system:masters) kubeconfig. */
  readonly admin: KubeConfig;
  /** Seconds start.sh took until /readyz answered. */
  readonly startSeconds: number;
  /** A kubeconfig for a bearer token (e.g. a ServiceAccount's), against the same server. */
  kubeConfigForToken(token: string): KubeConfig;
  /** Stops both processes by PID; `wipe` removes the run directory. */
  stop(wipe?: boolean): Promise<void>;
}

/**
 * Starts a fresh etcd and API server (own temporary directory, ports start.sh
 * chooses) from the binaries in `parts`.
 * @throws Error with start.sh's output when a server does not come up within 240 s (what it
 *   started is stopped first).
 */
export async function startKubeServer(parts: KubeParts): Promise<KubeServer> {
  const runDir = await mkdtemp(join(tmpdir(), 'lvstamp-kapi-'));
  const started = Date.now();
  try {
    await run('bash', [join(SCRIPTS, 'start.sh'), runDir], {
      env: {
        ...process.env,
        KUBE_DIR: parts.kubernetes,
        ETCD_DIR: parts.etcd,
      },
      timeout: 240_000,
    });
  } catch (error) {
    // whatever start.sh left running (a server that never got ready, or both after the timeout)
    await run('bash', [join(SCRIPTS, 'stop.sh'), runDir, '--wipe']);
    throw error;
  }
  const startSeconds = (Date.now() - started) / 1000;
  const kubeconfigPath = join(runDir, 'kubeconfig');
  const admin = new KubeConfig();
  admin.loadFromFile(kubeconfigPath);
  const server = admin.getCurrentCluster()?.server;
  if (server === undefined) throw new Error(`${kubeconfigPath} names no server`);
  const caFile = join(runDir, 'pki', 'ca.crt');
  return {
    runDir,
    kubeconfigPath,
    server,
    caFile,
    admin,
    startSeconds,
    kubeConfigForToken: (token) => {
      const kc = new KubeConfig();
      kc.loadFromOptions({
        clusters: [{ name: 'kapi', server, caFile, skipTLSVerify: false }],
        users: [{ name: 'sa', token }],
        contexts: [{ name: 'sa', cluster: 'kapi', user: 'sa' }],
        currentContext: 'sa',
      });
      return kc;
    },
    stop: async (wipe = true) => {
      await run('bash', [join(SCRIPTS, 'stop.sh'), runDir, ...(wipe ? ['--wipe'] : [])]);
    },
  };
}
