import { DURATION_SYNTAX, EXIT_OK, EXIT_USAGE } from '@lvstamp/app-kit';
import { Command, CommanderError } from 'commander';
import { registerClusterCommand } from './commands/cluster.js';
import { registerLiveSetCommand } from './commands/live-set.js';
import { registerNodeCommand } from './commands/node.js';
import type { GcJobDeps } from './deps.js';
import { describeFailure } from './errors.js';

export type { GcJobDeps, Output } from './deps.js';

/** Builds the `lvstamp-gc` program (commander); each action sets `state.exitCode`. */
export function buildProgram(
  deps: GcJobDeps,
  state: { exitCode: number } = { exitCode: EXIT_OK },
): Command {
  const program = new Command('lvstamp-gc')
    .description(
      'Finds and removes leaked lvstamp volumes in a Kubernetes cluster; dry run unless --apply.',
    )
    .version(deps.version)
    .exitOverride()
    .configureOutput({
      writeOut: (text) => deps.stdout.write(text),
      writeErr: (text) => deps.stderr.write(text),
    })
    .addHelpText(
      'after',
      '\nA volume is removed only when its LV name has the lvstamp prefix AND its sector-0 header is valid,\n' +
        "matches the name and carries this installation's owner ID; no PV of the driver and no PVC names it;\n" +
        'it is not open or mounted; and it is older than the grace period. Everything else is kept, with the reason.\n' +
        `Durations: ${DURATION_SYNTAX}.\n` +
        'Exit codes: 0 ok, 1 a node or removal failed or the run was refused, 2 bad usage,\n' +
        '3 (cluster) the only failures are nodes that never ran their Job (not-started: unschedulable, image not pulled, ...).',
    );

  registerNodeCommand(program, deps, state);
  registerLiveSetCommand(program, deps, state);
  registerClusterCommand(program, deps, state);

  for (const command of program.commands) {
    command.exitOverride();
    command.configureOutput(program.configureOutput());
  }
  return program;
}

/**
 * Runs `lvstamp-gc` with `argv` (without node and script) and returns the
 * exit code: 0 ok, 1 failed or refused, 2 bad usage, 3 nodes not started
 * (`cluster`). Never throws.
 */
export async function runGc(argv: readonly string[], deps: GcJobDeps): Promise<number> {
  const state = { exitCode: EXIT_OK };
  const program = buildProgram(deps, state);
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return state.exitCode;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
    const { exitCode, message } = describeFailure(error);
    deps.stderr.write(`lvstamp-gc: ${message}\n`);
    return exitCode;
  }
}
