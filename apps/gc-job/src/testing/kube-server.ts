import { execFile } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { createServer } from 'node:net';
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

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => {
        resolve(port);
      });
    });
  });
}

/**
 * Starts a fresh etcd and API server (own temporary directory, free ports)
 * from the binaries in `parts`.
 * @throws Error with start.sh's output when a server does not come up within 240 s.
 */
export async function startKubeServer(parts: KubeParts): Promise<KubeServer> {
  const runDir = await mkdtemp(join(tmpdir(), 'lvstamp-kapi-'));
  const apiPort = await freePort();
  let etcdPort = await freePort();
  while (etcdPort === apiPort || etcdPort + 1 === apiPort) etcdPort = await freePort();
  const started = Date.now();
  await run('bash', [join(SCRIPTS, 'start.sh'), runDir], {
    env: {
      ...process.env,
      KUBE_DIR: parts.kubernetes,
      ETCD_DIR: parts.etcd,
      APISERVER_PORT: String(apiPort),
      ETCD_PORT: String(etcdPort),
    },
    timeout: 240_000,
  });
  const startSeconds = (Date.now() - started) / 1000;
  const kubeconfigPath = join(runDir, 'kubeconfig');
  const admin = new KubeConfig();
  admin.loadFromFile(kubeconfigPath);
  const server = `https://127.0.0.1:${apiPort}`;
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
