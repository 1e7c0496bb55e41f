/**
 * One clear error for every dmsetup command on a kernel without the
 * device-mapper driver, instead of libdevmapper's five lines
 * (docs/FACTS.md "device-mapper").
 */
import { CommandFailedError, FailedPreconditionError } from '../errors.js';
import type { CommandRunner } from '../exec/runner.js';

/**
 * dmsetup's stderr when the kernel has no device-mapper driver (docs/FACTS.md):
 * the control node cannot be opened, ENODEV. Any other reason (EACCES for
 * a process that is not root) is left as the CommandFailedError it is.
 */
const NO_DRIVER = /\/dev\/mapper\/control: open failed: No such device\b/;

/**
 * The error for a host whose kernel has no device-mapper driver, from the
 * failed dmsetup command's stderr: its first line, then what it means for
 * lvstamp and `consequence`.
 */
export function noDeviceMapperError(
  error: CommandFailedError,
  consequence: string,
): FailedPreconditionError {
  const said = error.stderr.split('\n').find((line) => line.trim() !== '') ?? '';
  return new FailedPreconditionError(
    `this host's kernel has no device-mapper driver (${error.argv.slice(0, 2).join(' ')}: ` +
      `${said.trim() || `exit ${error.exitCode}`}); ${consequence}`,
    { cause: error },
  );
}

/**
 * `runner`, except that a dmsetup command failing because the kernel has no
 * device-mapper driver throws noDeviceMapperError (FailedPreconditionError:
 * CSI FAILED_PRECONDITION, CLI exit 1) rather than CommandFailedError.
 * Every other outcome is `runner`'s own.
 */
export function withDriverCheck(runner: CommandRunner): CommandRunner {
  return {
    run: async (argv, options) => {
      try {
        return await runner.run(argv, options);
      } catch (error) {
        if (
          error instanceof CommandFailedError &&
          argv[0] === 'dmsetup' &&
          NO_DRIVER.test(error.stderr)
        ) {
          throw noDeviceMapperError(
            error,
            'lvstamp volumes cannot be activated or listed with their data devices here: load the driver (modprobe dm_mod) or run lvstamp on a node that has it',
          );
        }
        throw error;
      }
    },
  };
}
