// How the benchmarks run programs: the core's own runner (argv arrays, LC_ALL=C, deadline), observed
// so that every bench section can count the processes it started.
import {
  ProcessRunner,
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

/** One command as a span of time (epoch milliseconds). */
export interface CommandSpan {
  readonly argv: readonly string[];
  readonly startMs: number;
  readonly endMs: number;
}

/** How the lvm processes of a phase overlapped in time. */
export interface Overlap {
  /** lvm processes running at the same time, at most. */
  readonly maxConcurrent: number;
  /** Milliseconds during which at least one lvm process ran (the union of the spans). */
  readonly busyMs: number;
  /** Sum of the lvm processes' own wall times, in milliseconds. */
  readonly sumMs: number;
}

/**
 * The overlap of the lvm processes among `spans` (others are ignored): a
 * sweep over start and end points; a process ending at the instant another
 * starts does not count as overlapping.
 */
export function lvmOverlap(spans: readonly CommandSpan[]): Overlap {
  const lvm = spans.filter((s) => isLvmCommand(s.argv) && s.endMs >= s.startMs);
  const points = lvm
    .flatMap((s) => [
      { at: s.startMs, step: 1 },
      { at: s.endMs, step: -1 },
    ])
    .sort((a, b) => a.at - b.at || a.step - b.step);
  let running = 0;
  let maxConcurrent = 0;
  let busyMs = 0;
  let since = 0;
  for (const point of points) {
    if (running > 0) busyMs += point.at - since;
    since = point.at;
    running += point.step;
    maxConcurrent = Math.max(maxConcurrent, running);
  }
  const sumMs = lvm.reduce((sum, s) => sum + (s.endMs - s.startMs), 0);
  return { maxConcurrent, busyMs, sumMs };
}

/** A runner that records every command it ran (for counting), on the production ProcessRunner. */
export class CountingRunner implements CommandRunner {
  readonly events: CommandEvent[] = [];
  readonly #runner: CommandRunner;

  constructor(timeoutMs = 600_000) {
    this.#runner = new ObservingRunner(new ProcessRunner({ timeoutMs }), (event) =>
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
