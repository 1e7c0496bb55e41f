import { describeFailure as describeByRules, type ExitRule, type Failure } from '@lvstamp/app-kit';
import {
  AlreadyExistsError,
  CommandFailedError,
  FailedPreconditionError,
  InvalidArgumentError,
  LockTimeoutError,
  LvstampError,
  NotFoundError,
  OutOfSpaceError,
} from '@lvstamp/core';

/** Exit codes of `lvstamp`: 0 ok, 1 the operation failed, 2 bad usage. */
export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

/** A usage mistake found by the CLI itself (conflicting or missing options). */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** A failure already reported on stdout (e.g. some GC removals failed): exit 1 with a summary. */
export class ReportedFailure extends Error {
  override readonly name = 'ReportedFailure';
}

/**
 * The one place where errors become exit codes: bad input (UsageError,
 * InvalidArgumentError) exits 2; every other known failure exits 1.
 */
const EXIT_RULES: readonly ExitRule[] = [
  { errors: [UsageError, InvalidArgumentError], exitCode: EXIT_USAGE },
  {
    errors: [
      ReportedFailure,
      CommandFailedError,
      NotFoundError,
      AlreadyExistsError,
      OutOfSpaceError,
      FailedPreconditionError,
      LockTimeoutError,
      LvstampError,
    ],
    exitCode: EXIT_FAILED,
  },
];

/**
 * An error as `lvstamp`'s exit code and one-line message (EXIT_RULES);
 * anything unrecognised is an internal error without a stack trace (set
 * LVSTAMP_DEBUG=1 to see it).
 */
export function describeFailure(error: unknown, debug = false): Failure {
  return describeByRules(error, EXIT_RULES, { internalExitCode: EXIT_FAILED, debug });
}
