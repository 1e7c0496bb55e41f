import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts'],
    // Integration tests start a real kube-apiserver + etcd per file (the parts that
    // test-e2e/parts/build.sh builds once and caches, called in global setup); on a loaded
    // 2-core machine a timeout is a hang detector, not a speed target.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    globalSetup: ['./test/kube/global-setup.ts'],
    // One API server per integration file: at most two at once (each ~330 MB).
    maxWorkers: 2,
  },
});
