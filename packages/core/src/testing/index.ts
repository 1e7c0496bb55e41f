// Test helpers of @lvstamp/core (excluded from the build).
export * from './replay-runner.js';
