import { execa } from 'execa';
import { CommandFailedError, CommandTimeoutError, InvalidArgumentError } from '../errors.js';
import { settleOutcome, type StderrListener } from './outcome.js';
import type { CommandResult, CommandRunner, RunOptions } from './runner.js';

/** Default deadline of one command, in milliseconds. */
export const DEFAULT_COMMAND_TIMEOUT_MS = 60_000;

/** Variables every command gets on top of the parent's environment. */
export const COMMAND_ENV: Readonly<Record<string, string>> = Object.freeze({
  // Messages and number formats that parsers can rely on (DESIGN.md §2.5).
  LC_ALL: 'C',
  // lvm2 warns on stderr about every inherited fd (docs/FACTS.md).
  LVM_SUPPRESS_FD_WARNINGS: '1',
});

export interface ExecaRunnerOptions {
  /** Deadline of a call that names none, in milliseconds. Default 60 000. */
  readonly timeoutMs?: number;
  /**
   * Called when a command succeeds (exit 0 or an allowed code) but printed
   * something on stderr, so callers can log lvm's warnings.
   */
  readonly onStderr?: StderrListener;
  /** Extra environment variables; COMMAND_ENV still wins. */
  readonly env?: Readonly<Record<string, string>>;
}

/**
 * The production CommandRunner (DESIGN.md §2.5) on
 * execa 9: argv array and no shell; `LC_ALL=C` and
 * `LVM_SUPPRESS_FD_WARNINGS=1` over the parent's environment; stdin closed
 * and only fds 0–2 passed; a per-call deadline after which the process is
 * killed with SIGKILL (only the process itself: lvm2 starts no children that
 * outlive it); the child is also killed when this process exits.
 *
 * `run` resolves for exit 0 or an allowed code; it throws CommandFailedError
 * (other exit code, killed by a signal, or could not start — then exitCode is
 * null and stderr holds the spawn error) or CommandTimeoutError.
 */
export class ExecaRunner implements CommandRunner {
  readonly #timeoutMs: number;
  readonly #onStderr: StderrListener | undefined;
  readonly #env: Readonly<Record<string, string>>;

  /** @throws InvalidArgumentError when timeoutMs is not a positive integer. */
  constructor(options: ExecaRunnerOptions = {}) {
    const timeoutMs = options.timeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
    assertTimeout(timeoutMs);
    this.#timeoutMs = timeoutMs;
    this.#onStderr = options.onStderr;
    this.#env = { ...options.env, ...COMMAND_ENV };
  }

  async run(argv: readonly string[], options?: RunOptions): Promise<CommandResult> {
    const [file, ...args] = argv;
    if (file === undefined || file === '') {
      throw new InvalidArgumentError('a command needs at least a program name');
    }
    const timeoutMs = options?.timeoutMs ?? this.#timeoutMs;
    assertTimeout(timeoutMs);
    const result = await execa(file, args, {
      shell: false,
      env: this.#env,
      extendEnv: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      reject: false,
      timeout: timeoutMs,
      killSignal: 'SIGKILL',
      forceKillAfterDelay: 1_000,
      cleanup: true,
      stripFinalNewline: false,
      encoding: 'utf8',
    });
    const outcome = {
      argv: [...argv],
      exitCode: result.exitCode ?? null,
      stdout: result.stdout,
      stderr: result.stderr,
    };
    if (result.timedOut) throw new CommandTimeoutError(outcome, timeoutMs);
    if (result.exitCode === undefined && result.signal === undefined) {
      // Could not start (ENOENT, EACCES, ...): no exit code, message as stderr.
      const spawnOutcome = { ...outcome, stderr: outcome.stderr + (result.originalMessage ?? '') };
      throw new CommandFailedError(spawnOutcome);
    }
    return settleOutcome(outcome, options, this.#onStderr);
  }
}

function assertTimeout(timeoutMs: number): void {
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs <= 0) {
    throw new InvalidArgumentError(
      `a command timeout must be a positive integer of ms, got ${timeoutMs}`,
    );
  }
}
