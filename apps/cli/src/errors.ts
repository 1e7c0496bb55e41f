import {
  describeFailure as describeByRules,
  EXIT_FAILED,
  EXIT_USAGE,
  type ExitRule,
  type Failure,
} from '@lvstamp/app-kit';
import { InvalidArgumentError, LvstampError } from '@lvstamp/core';

/** A usage mistake found by the CLI itself (conflicting or missing options). */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/**
 * The one place where errors become `lvstamp`'s exit codes (app-kit EXIT_*):
 * bad input (UsageError, InvalidArgumentError) exits 2; every other core
 * error exits 1.
 */
const EXIT_RULES: readonly ExitRule[] = [
  { errors: [UsageError, InvalidArgumentError], exitCode: EXIT_USAGE },
  { errors: [LvstampError], exitCode: EXIT_FAILED },
];

/**
 * An error as `lvstamp`'s exit code and one-line message (EXIT_RULES);
 * anything unrecognised is an internal error without a stack trace (set
 * LVSTAMP_DEBUG=1 to see it).
 */
export function describeFailure(error: unknown, debug = false): Failure {
  return describeByRules(error, EXIT_RULES, { internalExitCode: EXIT_FAILED, debug });
}
