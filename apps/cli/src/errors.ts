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
 * The one place where errors become exit codes and one-line messages.
 * Bad input (UsageError, InvalidArgumentError) exits 2; every other known
 * failure exits 1; anything unrecognised is reported as an internal error
 * without a stack trace (set LVSTAMP_DEBUG=1 to see it).
 */
export function describeFailure(
  error: unknown,
  debug = false,
): { exitCode: number; message: string } {
  if (error instanceof UsageError || error instanceof InvalidArgumentError) {
    return { exitCode: EXIT_USAGE, message: error.message };
  }
  if (error instanceof ReportedFailure) return { exitCode: EXIT_FAILED, message: error.message };
  if (error instanceof CommandFailedError) {
    return { exitCode: EXIT_FAILED, message: oneLine(error.message) };
  }
  if (
    error instanceof NotFoundError ||
    error instanceof AlreadyExistsError ||
    error instanceof OutOfSpaceError ||
    error instanceof FailedPreconditionError ||
    error instanceof LockTimeoutError ||
    error instanceof LvstampError
  ) {
    return { exitCode: EXIT_FAILED, message: oneLine(error.message) };
  }
  const text = error instanceof Error ? error.message : String(error);
  const detail = debug && error instanceof Error && error.stack ? `\n${error.stack}` : '';
  return { exitCode: EXIT_FAILED, message: `internal error: ${oneLine(text)}${detail}` };
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, '; ').trim();
}
