import { defineConfig } from 'vitest/config';

// The harness's own unit tests (no lvm, no VM): `pnpm test` in this package.
export default defineConfig({
  test: { include: ['src/**/*.test.ts'], exclude: ['src/**/*.e2e.test.ts'] },
});
