import { describeFailure as describeByClasses, type Failure } from '@lvstamp/app-kit';
import { InvalidArgumentError, LvstampError } from '@lvstamp/core';

/** A usage mistake found by the CLI itself (conflicting or missing options). */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/**
 * The one place where errors become `lvstamp`'s exit codes (app-kit EXIT_*):
 * bad input (UsageError, InvalidArgumentError) exits 2 and every other core
 * error 1, with its message on one line; anything unrecognised is an
 * internal error without a stack trace (set LVSTAMP_DEBUG=1 to see it).
 */
export function describeFailure(error: unknown, debug = false): Failure {
  return describeByClasses(
    error,
    { usage: [UsageError, InvalidArgumentError], failed: [LvstampError] },
    { debug },
  );
}
