import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts'],
    // Property tests and real child processes run slowly on a loaded 2-core CI machine;
    // a timeout is a hang detector here, not a speed target (those live in bench/).
    testTimeout: 60_000,
  },
});
