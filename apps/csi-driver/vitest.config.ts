import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts'],
    // Property tests and real child processes run slowly on a loaded 2-core CI machine;
    // a timeout is a hang detector here, not a speed target (those live in bench/).
    testTimeout: 60_000,
    // set-up and clean-up hooks (temporary files, transpiling a worker): no timing is asserted
    // there, and on a loaded machine they outlast vitest's 10 s default
    hookTimeout: 120_000,
  },
});
