import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts'],
    // helm and kubectl runs: about 0.3 s each on an idle machine, many times that on a loaded one
    testTimeout: 120_000,
  },
});
