import { CommandFailedError } from '../errors.js';
import type { CommandResult, CommandRunner, RunOptions } from './runner.js';

/** One finished command, as an ObservingRunner reports it. */
export interface CommandEvent {
  readonly argv: readonly string[];
  /** The exit code; null when the command was killed, timed out or could not start. */
  readonly exitCode: number | null;
  /** Wall time from the call to its result or error, in milliseconds. */
  readonly durationMs: number;
  /** Whether the runner threw (a failure, a timeout, a spawn error). */
  readonly failed: boolean;
}

/**
 * A CommandRunner that passes every call to `inner` unchanged and reports
 * each finished command to `onCommand`, success or failure. The driver logs
 * these at debug level; the benchmarks count lvm processes with it. A
 * listener that throws is ignored: observing never changes a result.
 */
export class ObservingRunner implements CommandRunner {
  readonly #inner: CommandRunner;
  readonly #onCommand: (event: CommandEvent) => void;
  readonly #now: () => number;

  /** @param now Monotonic clock in milliseconds (default performance.now). */
  constructor(
    inner: CommandRunner,
    onCommand: (event: CommandEvent) => void,
    now: () => number = () => performance.now(),
  ) {
    this.#inner = inner;
    this.#onCommand = onCommand;
    this.#now = now;
  }

  async run(argv: readonly string[], options?: RunOptions): Promise<CommandResult> {
    const start = this.#now();
    try {
      const result = await this.#inner.run(argv, options);
      this.#report({
        argv,
        exitCode: result.exitCode,
        durationMs: this.#now() - start,
        failed: false,
      });
      return result;
    } catch (error) {
      const exitCode = error instanceof CommandFailedError ? error.exitCode : null;
      this.#report({ argv, exitCode, durationMs: this.#now() - start, failed: true });
      throw error;
    }
  }

  #report(event: CommandEvent): void {
    try {
      this.#onCommand(event);
    } catch {
      // An observer must not turn a finished command into a failure.
    }
  }
}
