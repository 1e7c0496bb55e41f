// Command execution: the runner interface and the production runners.
export type * from './runner.js';
export { settleOutcome, type StderrListener } from './outcome.js';
export {
  COMMAND_ENV,
  DEFAULT_COMMAND_TIMEOUT_MS,
  ExecaRunner,
  type ExecaRunnerOptions,
} from './execa-runner.js';
export { ObservingRunner, type CommandEvent } from './observing-runner.js';
