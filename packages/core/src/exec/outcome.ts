import { CommandFailedError, type CommandOutcome } from '../errors.js';
import type { CommandResult, RunOptions } from './runner.js';

/**
 * Something that wants to hear about text a command printed on stderr while
 * still succeeding (lvm prints warnings with exit 0).
 */
export type StderrListener = (event: {
  readonly argv: readonly string[];
  readonly exitCode: number;
  readonly stderr: string;
}) => void;

/**
 * Turns a finished (not timed-out) command into the runner contract: the
 * result when the exit code is 0 or listed in `allowExitCodes`, otherwise a
 * CommandFailedError. Shared by ProcessRunner and ReplayRunner so that both
 * behave the same for the same outcome.
 * @throws CommandFailedError for a non-allowed exit code or a signal (exitCode null).
 */
export function settleOutcome(
  outcome: CommandOutcome,
  options: RunOptions | undefined,
  onStderr: StderrListener | undefined,
): CommandResult {
  const { exitCode } = outcome;
  if (exitCode === null) throw new CommandFailedError(outcome);
  if (exitCode !== 0 && !(options?.allowExitCodes ?? []).includes(exitCode)) {
    throw new CommandFailedError(outcome);
  }
  if (onStderr !== undefined && outcome.stderr.trim() !== '') {
    onStderr({ argv: outcome.argv, exitCode, stderr: outcome.stderr });
  }
  return { ...outcome, exitCode };
}
