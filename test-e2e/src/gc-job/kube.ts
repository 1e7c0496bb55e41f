// A real etcd + kube-apiserver (apps/gc-job/test/kube/start.sh, the `etcd` and `kubernetes` parts
// of test-e2e/parts) for the gc-job e2e, started wherever the suite runs: inside the test VM when
// the host has no device-mapper. The VM has no network, only loopback, and sees the host's /
// read-only, so the parts build.sh cached on the host are there; the data directories live in the
// VM's /tmp (tmpfs).
// Plus a minimal REST client (node:https, the admin bearer token) for the objects the tests set up.
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { request } from 'node:https';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT, cleanups, createTempDir, type CleanupRegistry } from '../harness/index.js';

const run = promisify(execFile);

/** The gc-job's scripts: start.sh, stop.sh. */
export const KUBE_SCRIPTS = `${REPO_ROOT}apps/gc-job/test/kube/`;
/** Builds and caches the parts; here only asked where they are cached. */
const PARTS_BUILD = `${REPO_ROOT}test-e2e/parts/build.sh`;
/** start.sh's default admin token (group system:masters). */
const ADMIN_TOKEN = 'kapi-test-token';
/**
 * What start.sh waits for. /readyz also waits for the RBAC bootstrap roles, which under
 * software emulation come about 70 s after the API serves; these tests only use the admin
 * token (system:masters, not subject to RBAC), and need the `default` namespace (Events).
 */
const READY_PATH = '/api/v1/namespaces/default';

/** A failed API request: HTTP status and the server's Status message. */
export class KubeRequestError extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
    what: string,
  ) {
    super(`${what}: HTTP ${status}: ${body.slice(0, 500)}`);
    this.name = 'KubeRequestError';
  }
}

/** A running API server and an admin client for it. */
export interface KubeApiServer {
  /** `https://127.0.0.1:<port>`. */
  readonly server: string;
  /** Admin kubeconfig file (what `lvstamp-gc --kubeconfig` reads). */
  readonly kubeconfig: string;
  /** Wall seconds from spawning etcd to the API answering READY_PATH (start.sh's figure). */
  readonly readySeconds: number;
  /** Wall seconds of the whole start.sh, certificate generation included. */
  readonly startSeconds: number;
  /**
   * One API request as the admin. `body` is sent as JSON (merge patches with
   * `contentType`). Resolves to the parsed JSON response.
   * @throws KubeRequestError on any non-2xx answer.
   */
  request<T = unknown>(
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    path: string,
    body?: unknown,
    contentType?: string,
  ): Promise<T>;
}

/**
 * Starts etcd + kube-apiserver with apps/gc-job/test/kube/start.sh in a temp
 * dir on ports start.sh chooses and waits until `GET /api/v1/namespaces/default` answers.
 * The binaries are the parts test-e2e/parts/build.sh cached (never built
 * here: the VM has no network; a missing part fails with a message naming
 * build.sh).
 * Stopping both processes (stop.sh, by PID) is registered before the start,
 * so a failure at any point still stops them.
 * @throws Error with start.sh's output when the binary is missing or the server does not come up.
 */
export async function startKubeApiServer(
  registry: CleanupRegistry = cleanups,
): Promise<KubeApiServer> {
  const runDir = await createTempDir(registry);
  registry.add('stop etcd + kube-apiserver', async () => {
    await run('bash', [join(KUBE_SCRIPTS, 'stop.sh'), runDir]);
  });
  const parts = await cachedParts();
  const started = performance.now();
  let output: string;
  try {
    const result = await run('bash', [join(KUBE_SCRIPTS, 'start.sh'), runDir], {
      env: {
        ...process.env,
        KUBE_DIR: parts.kubernetes,
        ETCD_DIR: parts.etcd,
        TOKEN: ADMIN_TOKEN,
        READY_PATH,
      },
      timeout: 420_000,
    });
    output = result.stdout;
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string };
    const log = await readFile(join(runDir, 'apiserver.log'), 'utf8').catch(() => '');
    throw new Error(
      `start.sh failed: ${e.message}\n${e.stdout ?? ''}${e.stderr ?? ''}\napiserver.log (tail):\n${log.split('\n').slice(-30).join('\n')}`,
    );
  }
  const startSeconds = (performance.now() - started) / 1000;
  const ready = /ready in ([\d.]+)s/.exec(output);
  const ca = await readFile(join(runDir, 'pki', 'ca.crt'));
  const ports = await readFile(join(runDir, 'ports.env'), 'utf8');
  const apiPort = /^APISERVER_PORT=(\d+)$/m.exec(ports)?.[1];
  if (apiPort === undefined) throw new Error(`start.sh wrote no APISERVER_PORT: ${ports}`);
  const server = `https://127.0.0.1:${apiPort}`;
  return {
    server,
    kubeconfig: join(runDir, 'kubeconfig'),
    readySeconds: ready?.[1] === undefined ? Number.NaN : Number(ready[1]),
    startSeconds,
    request: (method, path, body, contentType = 'application/json') =>
      apiRequest(server, ca, method, path, body, contentType),
  };
}

/**
 * The directories of the cached `kubernetes` and `etcd` parts, as
 * test-e2e/parts/build.sh prints them. It is never allowed to build here
 * (LVSTAMP_PARTS_NO_BUILD=1): the host builds them first (the unit tests of
 * apps/gc-job do; scripts/test.sh runs this file only once both are cached).
 * @throws Error naming build.sh when a part is not cached.
 */
async function cachedParts(): Promise<{ kubernetes: string; etcd: string }> {
  try {
    const result = await run('bash', [PARTS_BUILD, 'kubernetes', 'etcd'], {
      env: { ...process.env, LVSTAMP_PARTS_NO_BUILD: '1' },
      timeout: 120_000,
    });
    const [kubernetes, etcd] = result.stdout.trim().split('\n');
    if (kubernetes === undefined || etcd === undefined)
      throw new Error(`build.sh printed ${JSON.stringify(result.stdout)}`);
    return { kubernetes, etcd };
  } catch (error) {
    const e = error as { stderr?: string; message: string };
    throw new Error(
      `kube-apiserver and etcd are not cached: run test-e2e/parts/build.sh kubernetes etcd on the host first (the unit tests of apps/gc-job do): ${e.stderr ?? e.message}`,
    );
  }
}

function apiRequest<T>(
  server: string,
  ca: Buffer,
  method: string,
  path: string,
  body: unknown,
  contentType: string,
): Promise<T> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const what = `${method} ${path}`;
  return new Promise((resolve, reject) => {
    const req = request(
      `${server}${path}`,
      {
        method,
        ca,
        timeout: 60_000,
        headers: {
          authorization: `Bearer ${ADMIN_TOKEN}`,
          accept: 'application/json',
          ...(payload === undefined
            ? {}
            : { 'content-type': contentType, 'content-length': Buffer.byteLength(payload) }),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const status = res.statusCode ?? 0;
          if (status < 200 || status > 299) {
            reject(new KubeRequestError(status, text, what));
            return;
          }
          try {
            resolve(JSON.parse(text) as T);
          } catch {
            reject(new Error(`${what}: response is not JSON: ${text.slice(0, 200)}`));
          }
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${what}: no answer in 60 s`)));
    req.on('error', reject);
    req.end(payload);
  });
}
