// Builds (once per machine, then cached outside the repository, keyed by version) the
// kube-apiserver and etcd the integration tests start: the `kubernetes` and `etcd` parts of
// test-e2e/parts/build.sh, the ones the Kubernetes test tier runs. Hands their directories to the
// test files. On a machine where they are not cached yet this is the cold build (see
// test-e2e/parts/README.md for its time); a second caller waits on build.sh's lock per part.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';

// The provided value's type is declared in src/testing/kube-server.ts.

export default function setup(project: TestProject): void {
  const script = fileURLToPath(new URL('../../../../test-e2e/parts/build.sh', import.meta.url));
  const started = Date.now();
  const result = spawnSync('bash', [script, 'kubernetes', 'etcd'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const [kubernetes, etcd] = result.stdout.trim().split('\n');
  if (result.status !== 0 || kubernetes === undefined || etcd === undefined) {
    throw new Error(
      `test-e2e/parts/build.sh kubernetes etcd failed (exit ${String(result.status)}); the integration tests need kube-apiserver and etcd`,
    );
  }
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  process.stderr.write(
    `kube-apiserver: ${kubernetes}/kube-apiserver, etcd: ${etcd}/etcd (build.sh ${seconds} s)\n`,
  );
  project.provide('kubeParts', { kubernetes, etcd });
}
