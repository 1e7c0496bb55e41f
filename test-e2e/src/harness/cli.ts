import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';

/** Root of the repository (this file is `test-e2e/src/harness/cli.ts`). */
export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** The built `lvstamp` entrypoint the e2e tests drive. */
export const CLI_MAIN = `${REPO_ROOT}apps/cli/dist/lvstamp.mjs`;

/** What one CLI run left behind. */
export interface CliResult {
  /** Exit code; -1 when the process was killed by a signal. */
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Options of {@link runCli}. */
export interface CliOptions {
  /** Text for the CLI's stdin (e.g. `gc --live -`); stdin is closed otherwise. */
  readonly stdin?: string;
  /** Deadline in milliseconds (default 300 000); the CLI is killed with SIGKILL after it. */
  readonly timeoutMs?: number;
  /** Extra environment variables. */
  readonly env?: Readonly<Record<string, string>>;
}

/**
 * Runs `node <repo>/apps/cli/dist/lvstamp.mjs ...args` with the same node binary
 * as the tests; never throws on a non-zero exit.
 * @throws Error when the CLI is not built (run `pnpm exec turbo run build`).
 */
export async function runCli(
  args: readonly string[],
  options: CliOptions = {},
): Promise<CliResult> {
  if (!existsSync(CLI_MAIN)) throw new Error(`${CLI_MAIN} is missing: build the CLI first`);
  const result = await execa(process.execPath, [CLI_MAIN, ...args], {
    reject: false,
    env: { LC_ALL: 'C', ...options.env },
    timeout: options.timeoutMs ?? 300_000,
    killSignal: 'SIGKILL',
    ...(options.stdin === undefined ? { stdin: 'ignore' as const } : { input: options.stdin }),
  });
  return { exitCode: result.exitCode ?? -1, stdout: result.stdout, stderr: result.stderr };
}

/**
 * Runs the CLI with `--json` appended and parses stdout.
 * @throws Error with exit code, stdout and stderr when the CLI exits non-zero or stdout is not JSON.
 */
export async function runCliJson(
  args: readonly string[],
  options: CliOptions = {},
): Promise<CliResult & { readonly json: unknown }> {
  const result = await runCli([...args, '--json'], options);
  const context = `lvstamp ${args.join(' ')} --json exited ${result.exitCode}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`;
  if (result.exitCode !== 0) throw new Error(context);
  try {
    return { ...result, json: JSON.parse(result.stdout) as unknown };
  } catch {
    throw new Error(`stdout is not JSON: ${context}`);
  }
}
