import { spawn, type ChildProcess } from 'node:child_process';
import { CommandTimeoutError, InvalidArgumentError } from '../errors.js';
import { settleOutcome, type StderrListener } from './outcome.js';
import type { CommandResult, CommandRunner, RunOptions } from './runner.js';

/** Default deadline of one command, in milliseconds. */
export const DEFAULT_COMMAND_TIMEOUT_MS = 60_000;

/**
 * Most bytes read from one command's stdout or stderr; past it the command
 * is killed and fails. lvm's largest output here, a look-up report of a
 * group of thousands of LVs, is a few MiB.
 */
export const MAX_OUTPUT_BYTES = 100 * 1024 * 1024;

/** Variables every command gets on top of the parent's environment. */
export const COMMAND_ENV: Readonly<Record<string, string>> = Object.freeze({
  // Messages and number formats that parsers can rely on (DESIGN.md §2.5).
  LC_ALL: 'C',
  // lvm2 warns on stderr about every inherited fd (docs/FACTS.md).
  LVM_SUPPRESS_FD_WARNINGS: '1',
});

export interface ProcessRunnerOptions {
  /** Deadline of a call that names none, in milliseconds. Default 60 000. */
  readonly timeoutMs?: number;
  /**
   * Called when a command succeeds (exit 0 or an allowed code) but printed
   * something on stderr, so callers can log lvm's warnings.
   */
  readonly onStderr?: StderrListener;
  /** Extra environment variables; COMMAND_ENV still wins. */
  readonly env?: Readonly<Record<string, string>>;
  /** Most bytes read from stdout, and from stderr, of one command. Default MAX_OUTPUT_BYTES. */
  readonly maxOutputBytes?: number;
}

/**
 * The production CommandRunner (DESIGN.md §2.5) on Node's
 * `child_process.spawn` (a wrapper such as execa costs 10–15 ms of event
 * loop per process in the test VM: bench/README.md "Process start"): argv
 * array and no shell; `LC_ALL=C` and
 * `LVM_SUPPRESS_FD_WARNINGS=1` over the parent's environment; stdin closed
 * and only fds 0–2 passed; a per-call deadline after which the process is
 * killed with SIGKILL (only the process itself: lvm2 starts no children that
 * outlive it); the child is also killed when this process exits.
 *
 * `run` resolves for exit 0 or an allowed code; it throws CommandFailedError
 * (other exit code, killed by a signal, or could not start — then exitCode is
 * null and stderr holds the spawn error) or CommandTimeoutError.
 */
export class ProcessRunner implements CommandRunner {
  readonly #timeoutMs: number;
  readonly #onStderr: StderrListener | undefined;
  readonly #env: Readonly<Record<string, string>>;
  readonly #maxOutputBytes: number;

  /** @throws InvalidArgumentError when timeoutMs or maxOutputBytes is not a positive integer. */
  constructor(options: ProcessRunnerOptions = {}) {
    const timeoutMs = options.timeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
    assertTimeout(timeoutMs);
    this.#timeoutMs = timeoutMs;
    this.#onStderr = options.onStderr;
    this.#env = { ...options.env, ...COMMAND_ENV };
    const maxOutputBytes = options.maxOutputBytes ?? MAX_OUTPUT_BYTES;
    if (!Number.isSafeInteger(maxOutputBytes) || maxOutputBytes <= 0) {
      throw new InvalidArgumentError(
        `maxOutputBytes must be a positive integer, got ${maxOutputBytes}`,
      );
    }
    this.#maxOutputBytes = maxOutputBytes;
  }

  async run(argv: readonly string[], options?: RunOptions): Promise<CommandResult> {
    const [file, ...args] = argv;
    if (file === undefined || file === '') {
      throw new InvalidArgumentError('a command needs at least a program name');
    }
    const timeoutMs = options?.timeoutMs ?? this.#timeoutMs;
    assertTimeout(timeoutMs);
    const ended = await runProcess(file, args, {
      env: { ...process.env, ...this.#env },
      timeoutMs,
      maxOutputBytes: this.#maxOutputBytes,
    });
    const outcome = {
      argv: [...argv],
      exitCode: ended.exitCode,
      stdout: ended.stdout,
      // Could not start (ENOENT, EACCES, EMFILE…) or read: no exit code, the message as stderr.
      stderr: ended.stderr + ended.failure,
    };
    if (ended.timedOut) throw new CommandTimeoutError(outcome, timeoutMs);
    return settleOutcome(outcome, options, this.#onStderr);
  }
}

/** How one process ended: exit code (null: killed or never started) and its output as UTF-8. */
interface Ended {
  readonly exitCode: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** Why it could not start or was cut short, else ''. */
  readonly failure: string;
  readonly timedOut: boolean;
}

/** Children still running, killed with SIGKILL when this process exits. */
const running = new Set<ChildProcess>();
let exitHookInstalled = false;

function killRunningOnExit(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const child of running) child.kill('SIGKILL');
  });
}

/**
 * Runs one process to its end: stdin /dev/null, stdout and stderr piped
 * (at most `maxOutputBytes` each), killed with SIGKILL at `timeoutMs`.
 * Settles once the process has exited and both pipes are closed (`close`);
 * never rejects.
 */
function runProcess(
  file: string,
  args: readonly string[],
  how: { env: NodeJS.ProcessEnv; timeoutMs: number; maxOutputBytes: number },
): Promise<Ended> {
  const { env, timeoutMs, maxOutputBytes } = how;
  return new Promise((resolve) => {
    let child: ChildProcess;
    try {
      child = spawn(file, args, { shell: false, env, stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (error) {
      // Arguments Node refuses before any process (a NUL byte): nothing ran.
      resolve({ exitCode: null, stdout: '', stderr: '', failure: String(error), timedOut: false });
      return;
    }
    running.add(child);
    killRunningOnExit();
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let spawnError = '';
    let cut = '';
    let timedOut = false;
    const stop = (why: string): void => {
      if (cut === '') cut = why;
      child.kill('SIGKILL');
      // A pipe held open by something else must not keep the call waiting.
      child.stdout?.destroy();
      child.stderr?.destroy();
    };
    const collect = (chunks: Buffer[], name: string) => {
      let bytes = 0;
      return (chunk: Buffer): void => {
        bytes += chunk.length;
        if (bytes > maxOutputBytes) stop(`${name} exceeded ${maxOutputBytes} bytes`);
        else chunks.push(chunk);
      };
    };
    child.stdout?.on('data', collect(stdout, 'stdout'));
    child.stderr?.on('data', collect(stderr, 'stderr'));
    const timer = setTimeout(() => {
      timedOut = true;
      stop(`timed out after ${timeoutMs} ms`);
    }, timeoutMs);
    const settle = (code: number | null): void => {
      clearTimeout(timer);
      running.delete(child);
      const ranToItsEnd = child.pid !== undefined && cut === '';
      resolve({
        exitCode: ranToItsEnd ? code : null,
        stdout: Buffer.concat(stdout).toString('utf8'),
        stderr: Buffer.concat(stderr).toString('utf8'),
        failure: timedOut ? '' : spawnError || cut,
        timedOut,
      });
    };
    // `error` with no pid: it could not start (ENOENT, EACCES, EMFILE…); the call settles at once
    // (Node 20 then emits `close` with the negated errno, which changes nothing). After a start,
    // `error` is only a failed kill of a process already gone.
    child.on('error', (error) => {
      if (child.pid !== undefined) return;
      spawnError = error.message;
      settle(null);
    });
    child.on('close', (code) => {
      settle(code);
    });
  });
}

function assertTimeout(timeoutMs: number): void {
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs <= 0) {
    throw new InvalidArgumentError(
      `a command timeout must be a positive integer of ms, got ${timeoutMs}`,
    );
  }
}
