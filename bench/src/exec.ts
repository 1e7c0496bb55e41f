// How the benchmarks run programs: the core's own runner (argv arrays, LC_ALL=C, deadline), observed
// so that every bench section can count the processes it started.
import {
  ExecaRunner,
  ObservingRunner,
  type CommandEvent,
  type CommandResult,
  type CommandRunner,
} from '@lvstamp/core';

/** lvm2 programs (lvm(8) COMMANDS) as argv[0]; the core calls them by these names. */
const LVM_PROGRAMS = new Set([
  'lvm',
  'lvs',
  'vgs',
  'pvs',
  'lvcreate',
  'lvremove',
  'lvrename',
  'lvextend',
  'lvchange',
  'vgchange',
  'vgcreate',
  'vgremove',
  'pvcreate',
  'pvremove',
  'vgcfgrestore',
  'vgcfgbackup',
]);

/** Whether argv[0] of a command is an lvm2 program (a path's last component counts). */
export function isLvmCommand(argv: readonly string[]): boolean {
  const program = (argv[0] ?? '').split('/').pop() ?? '';
  return LVM_PROGRAMS.has(program);
}

/** Processes started, split as the issue counts them. */
export interface ProcessCount {
  readonly lvm: number;
  readonly other: number;
  /** The programs in the order they ran, e.g. `vgs lvs lvcreate lvrename`. */
  readonly sequence: string;
  /** Sum of their wall times in milliseconds (the rest of a call is the caller's own work). */
  readonly ms: number;
}

/** Counts commands by kind. */
export function countCommands(
  commands: readonly { argv: readonly string[]; durationMs: number }[],
): ProcessCount {
  const lvm = commands.filter((c) => isLvmCommand(c.argv)).length;
  const sequence = commands.map((c) => (c.argv[0] ?? '').split('/').pop() ?? '').join(' ');
  const ms = commands.reduce((sum, c) => sum + c.durationMs, 0);
  return { lvm, other: commands.length - lvm, sequence, ms };
}

/** A runner that records every command it ran (for counting), on the production ExecaRunner. */
export class CountingRunner implements CommandRunner {
  readonly events: CommandEvent[] = [];
  readonly #runner: CommandRunner;

  constructor(timeoutMs = 600_000) {
    this.#runner = new ObservingRunner(new ExecaRunner({ timeoutMs }), (event) =>
      this.events.push(event),
    );
  }

  run(argv: readonly string[]): Promise<CommandResult> {
    return this.#runner.run(argv);
  }

  /** The commands since `mark` (an earlier `events.length`). */
  since(mark: number): CommandEvent[] {
    return this.events.slice(mark);
  }
}

/** Runs one command that must succeed; its stdout. */
export async function sh(runner: CommandRunner, argv: readonly string[]): Promise<string> {
  return (await runner.run(argv)).stdout;
}
