// @lvstamp/core/testing: test doubles for the core's and the apps' tests, never
// part of the production entry.
export {
  CORE_FIXTURES_DIR,
  ReplayMismatchError,
  ReplayRunner,
  type ReplayCall,
  type ReplayRunnerOptions,
  type ReplayStep,
} from './replay-runner.js';
export { caught } from './caught.js';
