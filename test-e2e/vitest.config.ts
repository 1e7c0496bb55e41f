import { defineConfig } from 'vitest/config';
import DurationSequencer from './src/harness/sequencer.ts';

// End-to-end suite: real lvm2, device-mapper, loop devices. It runs as root on
// a host with device-mapper, or inside the test VM (scripts/run-e2e.sh).
// Under software emulation lvm commands are 16–39x slower than on the host
// (docs/FACTS.md), hence the generous timeouts.
export default defineConfig({
  test: {
    include: ['src/**/*.e2e.test.ts'],
    fileParallelism: false,
    // --shard=i/n splits by recorded durations (e2e-durations.json; README "Shards").
    sequence: { sequencer: DurationSequencer },
    globalSetup: ['src/harness/global-setup.ts'],
    testTimeout: 600_000,
    hookTimeout: 300_000,
    teardownTimeout: 300_000,
  },
});
