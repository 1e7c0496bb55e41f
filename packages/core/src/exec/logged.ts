import type { CommandResult, CommandRunner, RunOptions, WarnLogger } from './runner.js';

/**
 * Runs `argv` and passes stderr of a successful command (a warning) to
 * `logger` with the argv, without the lines that match one of `knownNoise`
 * (a warning the caller knows and accepts); nothing is logged when no other
 * line is left. Everything else as `runner.run`.
 * @throws CommandFailedError, CommandTimeoutError (the runner's).
 */
export async function runLogged(
  runner: CommandRunner,
  logger: WarnLogger | undefined,
  argv: readonly string[],
  options: RunOptions = {},
  knownNoise: readonly RegExp[] = [],
): Promise<CommandResult> {
  const result = await runner.run(argv, options);
  const stderr =
    knownNoise.length === 0
      ? result.stderr
      : result.stderr
          .split('\n')
          .filter((line) => !knownNoise.some((noise) => noise.test(line)))
          .join('\n');
  if (stderr.trim() !== '') {
    logger?.warn('command succeeded with output on stderr', {
      argv: result.argv,
      stderr,
    });
  }
  return result;
}
