// An lvm shell client for the shell-mode evaluation (bench/README.md "lvm shell mode"): one
// long-lived `lvm` process that reads commands on stdin, as lvm2's D-Bus service drives it, with the
// command runner's guarantees rebuilt on top where they can be: a deadline per command (the whole
// shell is killed and restarted), an exit status per command, bounded output, one command at a time.
// Measurement code only: production runs a process per call (the evaluation's recommendation).
import { spawn, type ChildProcess } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';

/** One entry of lvm's command log report (lvmreport(7) "log" fields), values as strings. */
export interface LogEntry {
  readonly log_type: string;
  readonly log_context: string;
  readonly log_object_type: string;
  readonly log_message: string;
  readonly log_ret_code: string;
}

/** What one shell command gave: the process-like exit code, its report and its messages. */
export interface ShellResult {
  readonly argv: readonly string[];
  /** 0 for success, else lvm's return code (5 = ECMD_FAILED, 3 = invalid command line). */
  readonly exitCode: number;
  /** The command's JSON report with the `log` array removed (`{}` for a command without one). */
  readonly report: Record<string, unknown>;
  /** Every message of the command (`lastlog`): warnings, errors, prints; not the status lines. */
  readonly messages: readonly string[];
}

/** Largest JSON object accepted on the report descriptor (the runner's output bound), in bytes. */
export const MAX_REPORT_BYTES = 64 * 1024 * 1024;

/**
 * lvm's shell splits a line on blanks; an argument may be wrapped whole in
 * `'…'` or `"…"`, with no escapes, and a `#` starts a comment. So an
 * argument holding a newline, a NUL, or both quote characters cannot be
 * passed at all.
 * @throws Error for such an argument (nothing is sent).
 */
export function shellLine(argv: readonly string[]): string {
  return argv
    .map((arg) => {
      if (/[\n\r\0]/.test(arg)) throw new Error(`lvm shell cannot pass ${JSON.stringify(arg)}`);
      if (arg !== '' && !/[\s'"#]/.test(arg)) return arg;
      if (!arg.includes("'")) return `'${arg}'`;
      if (!arg.includes('"')) return `"${arg}"`;
      throw new Error(`lvm shell cannot pass an argument with both quote kinds: ${arg}`);
    })
    .join(' ');
}

/**
 * Splits complete top-level JSON objects off the front of `buffer` (lvm
 * writes one per command on the report descriptor, back to back, with no
 * delimiter). Strings and escapes are honoured, so a `}` inside a value
 * does not end an object.
 * @returns the complete objects' texts and the unfinished rest.
 */
export function splitObjects(buffer: string): { objects: string[]; rest: string } {
  const objects: string[] = [];
  let depth = 0;
  let inString = false;
  let escaped = false;
  let start = -1;
  let consumed = 0;
  for (let i = 0; i < buffer.length; i++) {
    const c = buffer[i];
    if (inString) {
      if (escaped) escaped = false;
      else if (c === '\\') escaped = true;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === '{') {
      if (depth === 0) start = i;
      depth += 1;
    } else if (c === '}') {
      depth -= 1;
      if (depth === 0 && start >= 0) {
        objects.push(buffer.slice(start, i + 1));
        consumed = i + 1;
        start = -1;
      }
    }
  }
  return { objects, rest: buffer.slice(consumed) };
}

interface Pending {
  resolve: (text: string) => void;
  reject: (error: Error) => void;
}

/**
 * One `lvm` shell (`lvm` with no arguments, commands on stdin) with
 * `LVM_REPORT_FD=3` and the `lvmdbusd` command profile that lvm2 ships
 * (JSON reports in bytes, `report_command_log=1`): every command writes one
 * JSON object on fd 3 whose `log` ends with the command's status. After each
 * command a `lastlog` fetches its messages. Commands run one at a time
 * (queued); a command past its deadline kills the shell (SIGKILL), and the
 * next command starts a new one.
 */
export class LvmShell {
  /** Shells started so far (1 + restarts). */
  starts = 0;
  #child: ChildProcess | null = null;
  #buffer = '';
  #waiting: Pending | null = null;
  #queue: Promise<unknown> = Promise.resolve();
  readonly #program: string;

  constructor(program = 'lvm') {
    this.#program = program;
  }

  /** The running shell's pid, or null. */
  get pid(): number | null {
    return this.#child?.pid ?? null;
  }

  /**
   * Runs one lvm command (argv without the program, e.g. `['vgs', …]`) in
   * the shell, after every earlier one.
   * @throws Error on a deadline (the shell is killed), a dead shell, an
   *   argument the shell cannot carry, or an unreadable report.
   */
  run(argv: readonly string[], timeoutMs = 60_000): Promise<ShellResult> {
    const next = this.#queue.then(() => this.#runNow(argv, timeoutMs));
    this.#queue = next.catch(() => undefined);
    return next;
  }

  /** Ends the shell (stdin closed, SIGKILL after 5 s). */
  async stop(): Promise<void> {
    const child = this.#child;
    if (child === null) return;
    this.#child = null;
    const exited = new Promise<void>((resolve) =>
      child.once('exit', () => {
        resolve();
      }),
    );
    (child.stdin as Writable).end();
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  }

  async #runNow(argv: readonly string[], timeoutMs: number): Promise<ShellResult> {
    const line = shellLine(argv);
    const child = this.#child ?? this.#start();
    const deadline = Date.now() + timeoutMs;
    const statusText = await this.#exchange(child, `${line}\n`, deadline, argv);
    const status = JSON.parse(statusText) as Record<string, unknown> & { log?: LogEntry[] };
    const { log = [], ...report } = status;
    const final = log.filter((e) => e.log_context === 'shell' && e.log_type === 'status').at(-1);
    if (final === undefined) {
      throw new Error(`lvm shell: no status for ${line}: ${statusText.slice(0, 500)}`);
    }
    const code = Number(final.log_ret_code);
    const logText = await this.#exchange(child, 'lastlog\n', deadline, argv);
    const messages = ((JSON.parse(logText) as { log?: LogEntry[] }).log ?? [])
      .filter((e) => e.log_type !== 'status')
      .map((e) => e.log_message);
    return { argv, exitCode: code === 1 ? 0 : code, report, messages };
  }

  #start(): ChildProcess {
    const child = spawn(this.#program, [], {
      stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
      env: {
        ...process.env,
        LC_ALL: 'C',
        LVM_SUPPRESS_FD_WARNINGS: '1',
        LVM_REPORT_FD: '3',
        LVM_COMMAND_PROFILE: 'lvmdbusd',
      },
    });
    this.starts += 1;
    this.#child = child;
    this.#buffer = '';
    const report = child.stdio[3] as Readable;
    report.setEncoding('utf8');
    report.on('data', (chunk: string) => {
      this.#onReport(child, chunk);
    });
    // stdout and stderr stay empty with the profile (everything goes to the log report); drained
    // so that a stray message can never block the shell on a full pipe.
    child.stdout.resume();
    child.stderr.resume();
    child.stdin.on('error', () => undefined);
    child.on('exit', (code, signal) => {
      if (this.#child === child) this.#child = null;
      this.#fail(new Error(`lvm shell exited (${signal ?? `code ${String(code)}`})`));
    });
    return child;
  }

  #onReport(child: ChildProcess, chunk: string): void {
    if (this.#child !== child) return;
    this.#buffer += chunk;
    if (this.#buffer.length > MAX_REPORT_BYTES) {
      child.kill('SIGKILL');
      this.#fail(new Error(`lvm shell report larger than ${MAX_REPORT_BYTES} bytes`));
      return;
    }
    const { objects, rest } = splitObjects(this.#buffer);
    this.#buffer = rest;
    for (const text of objects) {
      const waiting = this.#waiting;
      this.#waiting = null;
      if (waiting === null) {
        // An object nobody asked for: framing is lost; only a new shell can be trusted.
        child.kill('SIGKILL');
        return;
      }
      waiting.resolve(text);
    }
  }

  #fail(error: Error): void {
    const waiting = this.#waiting;
    this.#waiting = null;
    waiting?.reject(error);
  }

  #exchange(
    child: ChildProcess,
    text: string,
    deadline: number,
    argv: readonly string[],
  ): Promise<string> {
    return new Promise<string>((resolve, reject) => {
      const left = deadline - Date.now();
      const timer = setTimeout(
        () => {
          child.kill('SIGKILL');
          this.#fail(
            new Error(`lvm shell: ${argv.join(' ')} timed out after the deadline; shell killed`),
          );
        },
        Math.max(left, 0),
      );
      this.#waiting = {
        resolve: (t) => {
          clearTimeout(timer);
          resolve(t);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      };
      (child.stdin as Writable).write(text);
    });
  }
}
