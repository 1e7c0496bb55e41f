// Command execution: the runner interface, production and replay runners.
export type * from './runner.js';
export { settleOutcome, type StderrListener } from './outcome.js';
export {
  COMMAND_ENV,
  DEFAULT_COMMAND_TIMEOUT_MS,
  ExecaRunner,
  type ExecaRunnerOptions,
} from './execa-runner.js';
export {
  CORE_FIXTURES_DIR,
  ReplayMismatchError,
  ReplayRunner,
  type ReplayCall,
  type ReplayRunnerOptions,
  type ReplayStep,
} from './replay-runner.js';
export { ObservingRunner, type CommandEvent } from './observing-runner.js';
