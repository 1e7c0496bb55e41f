// Test helper: the replay runner lives in exec/ as a public test double.
export {
  CORE_FIXTURES_DIR,
  ReplayMismatchError,
  ReplayRunner,
  type ReplayCall,
  type ReplayRunnerOptions,
  type ReplayStep,
} from '../exec/replay-runner.js';
