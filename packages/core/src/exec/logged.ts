import type { CommandResult, CommandRunner, RunOptions, WarnLogger } from './runner.js';

/**
 * Runs `argv` and passes stderr of a successful command (a warning) to
 * `logger` with the argv; everything else as `runner.run`.
 * @throws CommandFailedError, CommandTimeoutError (the runner's).
 */
export async function runLogged(
  runner: CommandRunner,
  logger: WarnLogger | undefined,
  argv: readonly string[],
  options: RunOptions = {},
): Promise<CommandResult> {
  const result = await runner.run(argv, options);
  if (result.stderr.trim() !== '') {
    logger?.warn('command succeeded with output on stderr', {
      argv: result.argv,
      stderr: result.stderr,
    });
  }
  return result;
}
