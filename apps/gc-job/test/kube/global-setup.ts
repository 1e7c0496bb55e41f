// Builds (once, then cached outside the repository) the kube-apiserver the integration tests
// start, and hands its directory to the test files. CI builds it here when it is missing.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';

// The provided value's type is declared in src/testing/kube-server.ts.

export default function setup(project: TestProject): void {
  const script = fileURLToPath(new URL('./build.sh', import.meta.url));
  const started = Date.now();
  const result = spawnSync('bash', [script], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (result.status !== 0) {
    throw new Error(
      `test/kube/build.sh failed (exit ${String(result.status)}); the integration tests need kube-apiserver`,
    );
  }
  const home = result.stdout.trim().split('\n').at(-1) ?? '';
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  process.stderr.write(`kube-apiserver: ${home}/bin/kube-apiserver (build.sh ${seconds}s)\n`);
  project.provide('kapiHome', home);
}
