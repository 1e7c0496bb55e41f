// Command execution: the runner interface and the production runners.
export type { CommandResult, CommandRunner } from './runner.js';
export { ProcessRunner } from './process-runner.js';
export { ObservingRunner, type CommandEvent } from './observing-runner.js';
export { OncePerRunWarnLogger } from './once-warn-logger.js';
