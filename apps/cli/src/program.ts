import {
  DEFAULT_HOST_LOCK_PATH,
  LvstampError,
  parseOwnerId,
  STANDALONE_OWNER_ID,
} from '@lvstamp/core';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { DURATION_SYNTAX, EXIT_OK, EXIT_USAGE } from '@lvstamp/app-kit';
import { describeFailure } from './errors.js';
import { refuseInDriverPod } from './driver-pod.js';
import type { CliDeps, CommandContext } from './context.js';
import type { CliServices, GlobalOptions } from './services.js';
import { registerVolumeGroupCommands } from './commands/vg.js';
import { registerVolumeCommands } from './commands/volume.js';
import { registerSnapshotCommands } from './commands/snapshot.js';
import { registerGcCommand } from './commands/gc.js';
import { registerQuarantineCommands } from './commands/quarantine.js';
import { registerDemoCommand } from './commands/demo.js';

export type { CliDeps, CommandContext } from './context.js';

const SIZE_HELP =
  'Sizes are Kubernetes quantities, as on a PVC: 512Mi, 1Gi (binary), 1G (10^9 bytes), or plain bytes.';

/** Builds the `lvstamp` program (commander). */
export function buildProgram(deps: CliDeps): Command {
  const program = new Command('lvstamp')
    .description('Node-local LVM volumes stamped with a provenance header, for node admins.')
    .version(deps.version)
    .addOption(
      new Option('--owner-id <hex>', 'owner ID of this installation (32 hex digits)')
        .env('LVSTAMP_OWNER_ID')
        .default(STANDALONE_OWNER_ID, 'standalone: all zeros')
        .argParser(ownerIdOption),
    )
    .addOption(
      new Option('--lock-file <path>', 'host lock shared with the CSI driver and the GC job')
        .env('LVSTAMP_LOCK_FILE')
        .default(DEFAULT_HOST_LOCK_PATH),
    )
    .addOption(
      new Option(
        '--json',
        'print machine-readable JSON on stdout instead of tables; errors stay one line on stderr',
      ).default(false, 'tables'),
    )
    .addHelpText(
      'after',
      `\n${SIZE_HELP}\nDurations: ${DURATION_SYNTAX}.\nExit codes: 0 ok, 1 failed, 2 bad usage (an ambiguous name included: name its volume group).`,
    )
    .showSuggestionAfterError()
    .exitOverride()
    .configureOutput({
      writeOut: (text) => deps.io.stdout.write(text),
      writeErr: (text) => deps.io.stderr.write(text),
      // commander's own parse errors ("error: unknown option ...") in the one style of every
      // other failure: "lvstamp: <message>" on one line, exit 2 (runCli)
      outputError: (text, write) => {
        write(text.replace(/^error: /, 'lvstamp: '));
      },
    });

  let cachedServices: CliServices | undefined;
  const globals = (): GlobalOptions => {
    const opts = program.opts<{ ownerId: string; lockFile: string; json: boolean }>();
    return { ownerId: opts.ownerId, lockFile: opts.lockFile, json: opts.json };
  };
  const context: CommandContext = {
    deps,
    globals,
    services: () => (cachedServices ??= deps.services(globals())),
  };
  registerVolumeGroupCommands(program, context);
  registerVolumeCommands(program, context);
  registerSnapshotCommands(program, context);
  registerGcCommand(program, context);
  registerQuarantineCommands(program, context);
  registerDemoCommand(program, context);
  // inside a driver pod, the commands that make volumes are refused before they run
  program.hook('preAction', (_program, action) => {
    const path: string[] = [];
    for (let c: Command | null = action; c !== null && c !== program; c = c.parent)
      path.unshift(c.name());
    refuseInDriverPod(deps.env, path);
  });
  for (const command of program.commands) inheritOutput(command, program);
  return program;
}

/** Checks `--owner-id` before any command runs: a bad ID is a usage error (exit 2). */
function ownerIdOption(value: string): string {
  try {
    return parseOwnerId(value);
  } catch (error) {
    if (error instanceof LvstampError) throw new InvalidArgumentError(error.message);
    throw error;
  }
}

function inheritOutput(command: Command, parent: Command): void {
  command.exitOverride();
  command.configureOutput(parent.configureOutput());
  command.showSuggestionAfterError();
  for (const child of command.commands) inheritOutput(child, command);
}

/**
 * Runs `lvstamp` with the given arguments (without node and script) and
 * returns the exit code: 0 ok, 1 failed, 2 bad usage. Never throws.
 */
export async function runCli(argv: readonly string[], deps: CliDeps): Promise<number> {
  const program = buildProgram(deps);
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return EXIT_OK;
  } catch (error) {
    if (error instanceof CommanderError) {
      // help and version exit 0; every parse problem is a usage error, already printed
      return error.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
    }
    const { exitCode, message } = describeFailure(error, deps.env.LVSTAMP_DEBUG === '1');
    deps.io.stderr.write(`lvstamp: ${message}\n`);
    return exitCode;
  }
}
