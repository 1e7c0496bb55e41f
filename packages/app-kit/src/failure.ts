/** Exit codes every lvstamp command shares: 0 ok, 1 the operation failed, 2 bad usage. */
export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

/**
 * A failure already reported on stdout (a table with failed removals, a
 * report with failed nodes): the command ends with this one-line summary and
 * `exitCode` (default EXIT_FAILED).
 */
export class ReportedFailure extends Error {
  override readonly name = 'ReportedFailure';
  readonly exitCode: number;

  constructor(message: string, exitCode: number = EXIT_FAILED) {
    super(message);
    this.exitCode = exitCode;
  }
}

/** The message of any thrown value: an Error's `message`, else `String(value)`. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Text on one line: each line break, with the white space around it, becomes `; `. */
export function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, '; ').trim();
}

/** An error class, for `instanceof`. */
export type ErrorClass = abstract new (...args: never[]) => Error;

/** One row of an app's exit-code table: errors of these classes exit with this code. */
export interface ExitRule {
  readonly errors: readonly ErrorClass[];
  /** The exit code, or a function of the error for a failure that carries its own code. */
  readonly exitCode: number | ((error: Error) => number);
}

/** What an app prints and returns for a failure. */
export interface Failure {
  readonly exitCode: number;
  /** One line, except for the stack trace that `debug` appends. */
  readonly message: string;
}

/**
 * An error as an exit code and a one-line message, by the app's own table:
 * a ReportedFailure has its own code, else the first rule naming a class of
 * the error gives it; the message is the error's own. Anything else is `internal error: <message>` with
 * `internalExitCode`; with `debug`, its stack trace follows on the next lines.
 */
export function describeFailure(
  error: unknown,
  rules: readonly ExitRule[],
  options: { readonly internalExitCode: number; readonly debug?: boolean },
): Failure {
  if (error instanceof ReportedFailure) {
    return { exitCode: error.exitCode, message: oneLine(error.message) };
  }
  if (error instanceof Error) {
    for (const rule of rules) {
      if (!rule.errors.some((errorClass) => error instanceof errorClass)) continue;
      const exitCode = typeof rule.exitCode === 'number' ? rule.exitCode : rule.exitCode(error);
      return { exitCode, message: oneLine(error.message) };
    }
  }
  const stack = options.debug === true && error instanceof Error ? error.stack : undefined;
  return {
    exitCode: options.internalExitCode,
    message: `internal error: ${oneLine(messageOf(error))}${stack ? `\n${stack}` : ''}`,
  };
}
