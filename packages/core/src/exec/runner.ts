import type { CommandOutcome } from '../errors.js';

/** Options of one command run. */
export interface RunOptions {
  /**
   * Deadline in milliseconds; the process is killed with SIGKILL when it is
   * exceeded and a CommandTimeoutError is thrown. Defaults to the runner's
   * own default.
   */
  readonly timeoutMs?: number;
  /**
   * Exit codes that count as success besides 0 (for example `blkid -p`
   * exits 2 for "nothing found"). The caller then reads `exitCode`.
   */
  readonly allowExitCodes?: readonly number[];
}

/** The result of a command that exited with an allowed code. */
export type CommandResult = CommandOutcome & { readonly exitCode: number };

/**
 * Runs external programs. Every external command the core issues goes
 * through one of these (DESIGN.md §2.5): argv arrays, never a shell.
 *
 * `run` resolves when the program exits with 0 or an allowed code; it throws
 * CommandFailedError (non-zero exit, signal, spawn failure) or
 * CommandTimeoutError (deadline exceeded; the process was killed).
 */
export interface CommandRunner {
  run(argv: readonly string[], options?: RunOptions): Promise<CommandResult>;
}

/**
 * Where the core reports things worth a human's attention that are not
 * errors (for example an lvm warning printed on stderr with exit 0).
 * `fields` is structured context (argv, stderr, volume ID).
 */
export interface WarnLogger {
  warn(message: string, fields?: Readonly<Record<string, unknown>>): void;
}
