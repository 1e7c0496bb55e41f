import { printable } from './table.js';
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

/**
 * Text on one line: each line break, with the white space around it,
 * becomes `; `, and any other control character `\xNN` (printable): a
 * message may quote text read from a disk, such as a header's name.
 */
export function oneLine(text: string): string {
  return printable(text.replace(/\s*\n\s*/g, '; ').trim());
}

/** An error class, for `instanceof`. */
export type ErrorClass = abstract new (...args: never[]) => Error;

/** An app's own table: which error classes are bad input and which known failures. */
export interface FailureClasses {
  /** Bad input (flags, configuration): exit EXIT_USAGE. */
  readonly usage: readonly ErrorClass[];
  /** Known failures, whose message says it all: exit EXIT_FAILED. */
  readonly failed: readonly ErrorClass[];
}

/** What an app prints and returns for a failure. */
export interface Failure {
  readonly exitCode: number;
  /** One line, except for the stack trace that `debug` appends. */
  readonly message: string;
}

/**
 * An error as an exit code and a one-line message of its own, by the app's
 * table: a ReportedFailure exits with its code, bad input with EXIT_USAGE, a
 * known failure with EXIT_FAILED. Anything else is EXIT_FAILED `internal
 * error: <message>`, followed with `debug` by its stack trace.
 */
export function describeFailure(
  error: unknown,
  classes: FailureClasses,
  options: { readonly debug?: boolean } = {},
): Failure {
  const is = (list: readonly ErrorClass[]) => list.some((c) => error instanceof c);
  if (error instanceof ReportedFailure) {
    return { exitCode: error.exitCode, message: oneLine(error.message) };
  }
  if (error instanceof Error && (is(classes.usage) || is(classes.failed))) {
    return {
      exitCode: is(classes.usage) ? EXIT_USAGE : EXIT_FAILED,
      message: oneLine(error.message),
    };
  }
  const stack = options.debug === true && error instanceof Error ? error.stack : undefined;
  return {
    exitCode: EXIT_FAILED,
    message: `internal error: ${oneLine(messageOf(error))}${stack ? `\n${stack}` : ''}`,
  };
}
