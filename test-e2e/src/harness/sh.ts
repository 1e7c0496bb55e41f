import { execa } from 'execa';

/** What a finished command left behind. */
export interface ShResult {
  /** The exact argument vector, program first. */
  readonly argv: readonly string[];
  /** Exit code; -1 when the process was killed by a signal or could not start. */
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Options of {@link sh}. */
export interface ShOptions {
  /** Text written to the command's stdin; stdin is closed otherwise. */
  readonly stdin?: string;
  /** Deadline in milliseconds (default 120 000); the process is killed with SIGKILL after it. */
  readonly timeoutMs?: number;
}

/**
 * Runs a plain command (lvs, dmsetup, blkid, losetup, mount ...) for test
 * set-up and assertions: argv array, no shell, `LC_ALL=C`,
 * `LVM_SUPPRESS_FD_WARNINGS=1`, stdin closed unless given. Never throws on a
 * non-zero exit; the caller asserts the exit code.
 */
export async function sh(argv: readonly string[], options: ShOptions = {}): Promise<ShResult> {
  const [program, ...args] = argv;
  if (program === undefined) throw new Error('sh: empty argv');
  const result = await execa(program, args, {
    reject: false,
    stripFinalNewline: false,
    env: { LC_ALL: 'C', LVM_SUPPRESS_FD_WARNINGS: '1' },
    timeout: options.timeoutMs ?? 120_000,
    killSignal: 'SIGKILL',
    ...(options.stdin === undefined ? { stdin: 'ignore' as const } : { input: options.stdin }),
  });
  return {
    argv: [...argv],
    exitCode: result.exitCode ?? -1,
    stdout: result.stdout,
    stderr: result.stderr,
  };
}

/**
 * Like {@link sh} but for commands that must succeed.
 * @throws Error naming the command, its exit code and stderr when it exits non-zero.
 */
export async function shOk(argv: readonly string[], options: ShOptions = {}): Promise<ShResult> {
  const result = await sh(argv, options);
  if (result.exitCode !== 0) {
    throw new Error(`${argv.join(' ')} exited ${result.exitCode}: ${result.stderr.trim()}`);
  }
  return result;
}
