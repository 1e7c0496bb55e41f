import { readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CommandTimeoutError, InvalidArgumentError } from '../errors.js';
import { DEFAULT_COMMAND_TIMEOUT_MS } from '../exec/process-runner.js';
import { settleOutcome, type StderrListener } from '../exec/outcome.js';
import type { CommandResult, CommandRunner, RunOptions } from '../exec/runner.js';

/** `packages/core/fixtures/`, from both `src/testing/` and `dist/testing/`. */
export const CORE_FIXTURES_DIR: string = fileURLToPath(new URL('../../fixtures/', import.meta.url));

/** One recorded command: the argv expected next and what it did. */
export interface ReplayStep {
  /** The exact argument vector the next `run` must receive, program first. */
  readonly argv: readonly string[];
  /** Exit code; default 0. */
  readonly exitCode?: number;
  readonly stdout?: string;
  /** Path of a file whose content is stdout, relative to `packages/core/fixtures/`. */
  readonly stdoutFile?: string;
  readonly stderr?: string;
  /** Milliseconds to wait before answering. */
  readonly delayMs?: number;
  /** The command ran past its deadline: `run` throws CommandTimeoutError. */
  readonly timeout?: true;
}

/**
 * A replay runner saw a call it did not expect, or steps were left over: a
 * test failure, like node:assert's AssertionError (never a core error class,
 * so no code under test can mistake it for an lvm failure).
 */
export class ReplayMismatchError extends Error {
  /** The recorded argv that was expected next, or null for an extra call. */
  readonly expected: readonly string[] | null;
  /** The argv received, or null when `assertDone` found steps left. */
  readonly actual: readonly string[] | null;

  constructor(
    message: string,
    expected: readonly string[] | null,
    actual: readonly string[] | null,
  ) {
    super(message);
    this.name = 'ReplayMismatchError';
    this.expected = expected;
    this.actual = actual;
  }
}

/** A call the replay runner received. */
export interface ReplayCall {
  readonly argv: readonly string[];
  readonly options: RunOptions | undefined;
}

export interface ReplayRunnerOptions {
  /** Directory that `stdoutFile` is relative to; default CORE_FIXTURES_DIR. */
  readonly fixturesDir?: string;
  /** Deadline reported by a `timeout` step when the call names none; default 60 000 ms. */
  readonly timeoutMs?: number;
  /** Same hook as ProcessRunnerOptions.onStderr. */
  readonly onStderr?: StderrListener;
}

/**
 * A CommandRunner that replays recorded commands (DESIGN.md §2.5):
 * each `run` must receive exactly the argv of the next step, and then answers
 * as ProcessRunner would for that outcome — the result for exit 0 or an allowed
 * code, CommandFailedError otherwise, CommandTimeoutError for a `timeout`
 * step. A test double for the core's and the apps' tests (`@lvstamp/core/testing`).
 *
 * Fixture files are read when the runner is built, so a missing file fails
 * at once.
 * @throws ReplayMismatchError on an unexpected argv or an extra call.
 */
export class ReplayRunner implements CommandRunner {
  readonly #steps: readonly (ReplayStep & { readonly resolvedStdout: string })[];
  readonly #timeoutMs: number;
  readonly #onStderr: StderrListener | undefined;
  #next = 0;
  /** Every call received, in order (also those that failed the assertion). */
  readonly calls: ReplayCall[] = [];

  /** @throws InvalidArgumentError when a step names both stdout and stdoutFile. */
  constructor(steps: readonly ReplayStep[], options: ReplayRunnerOptions = {}) {
    const dir = options.fixturesDir ?? CORE_FIXTURES_DIR;
    this.#steps = steps.map((step, index) => {
      if (step.stdout !== undefined && step.stdoutFile !== undefined) {
        throw new InvalidArgumentError(`replay step ${index} names both stdout and stdoutFile`);
      }
      const resolvedStdout =
        step.stdoutFile === undefined
          ? (step.stdout ?? '')
          : readFileSync(
              isAbsolute(step.stdoutFile) ? step.stdoutFile : resolve(dir, step.stdoutFile),
              'utf8',
            );
      return { ...step, resolvedStdout };
    });
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
    this.#onStderr = options.onStderr;
  }

  /** Number of steps not yet replayed. */
  get remaining(): number {
    return this.#steps.length - this.#next;
  }

  async run(argv: readonly string[], options?: RunOptions): Promise<CommandResult> {
    this.calls.push({ argv: [...argv], options });
    const index = this.#next;
    const step = this.#steps[index];
    if (step === undefined) {
      throw new ReplayMismatchError(
        `ReplayRunner: unexpected extra call #${index + 1}\n  actual:   ${formatArgv(argv)}\n  (all ${this.#steps.length} steps were replayed)`,
        null,
        [...argv],
      );
    }
    if (!sameArgv(step.argv, argv)) {
      throw new ReplayMismatchError(
        `ReplayRunner: call #${index + 1} does not match the recorded step\n  expected: ${formatArgv(step.argv)}\n  actual:   ${formatArgv(argv)}`,
        step.argv,
        [...argv],
      );
    }
    this.#next += 1;
    if (step.delayMs !== undefined && step.delayMs > 0) {
      await new Promise((done) => setTimeout(done, step.delayMs));
    }
    const outcome = {
      argv: [...argv],
      exitCode: step.timeout === true ? null : (step.exitCode ?? 0),
      stdout: step.resolvedStdout,
      stderr: step.stderr ?? '',
    };
    if (step.timeout === true) {
      throw new CommandTimeoutError(outcome, options?.timeoutMs ?? this.#timeoutMs);
    }
    return settleOutcome(outcome, options, this.#onStderr);
  }

  /** @throws ReplayMismatchError when recorded steps were not replayed. */
  assertDone(): void {
    if (this.remaining === 0) return;
    const left = this.#steps.slice(this.#next).map((s) => `  ${formatArgv(s.argv)}`);
    const next = this.#steps[this.#next]?.argv ?? null;
    throw new ReplayMismatchError(
      `ReplayRunner: ${this.remaining} recorded step(s) were never run:\n${left.join('\n')}`,
      next,
      null,
    );
  }
}

function sameArgv(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((arg, i) => arg === b[i]);
}

function formatArgv(argv: readonly string[]): string {
  return JSON.stringify(argv);
}
