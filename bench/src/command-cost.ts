// `lvstamp-bench command-cost`: what one lvm command of a create → delete cycle costs, each
// command timed alone, so that the ratio a given process count allows can be read off
// (bench/README.md "What one lvm command costs").
import { renderTable } from '@lvstamp/app-kit';
import {
  DEFAULT_NAMING,
  lookupArgv,
  lvcreateArgv,
  lvrenameArgv,
  lvNameFor,
  newLvNameFor,
  ownerTagFor,
  volumeIdForName,
  type CommandResult,
  type CommandRunner,
} from '@lvstamp/core';
import type { BenchContext } from './context.js';
import { isLvmCommand } from './exec.js';
import { BENCH_OWNER_ID, cleanUp, createBenchVg, type BenchVg } from './fixture.js';
import { formatMs, median, MiB, round } from './stats.js';

/**
 * Where the commands run: `full` activates (device-mapper, udev) as the driver does;
 * `metadata-only` is for a host without device-mapper: every lvm command gets
 * `--driverloaded n` and lvcreate `--activate n --zero n --wipesignatures n` (lvm(8)), so
 * only lvm's scan and metadata work is measured, on the host's own CPU.
 */
export type CostMode = 'full' | 'metadata-only';

/** lvm(8): "If set to no, the command will not attempt to use device-mapper." */
const NO_DM = ['--driverloaded', 'n'];

/**
 * A runner that adds `--driverloaded n` to every lvm2 command (after `lvm <command>` for
 * `lvm fullreport`), so that the benchmark VG can be made and removed on a host without
 * device-mapper. Other programs (losetup) run unchanged.
 */
export class NoDeviceMapperRunner implements CommandRunner {
  readonly #runner: CommandRunner;

  constructor(runner: CommandRunner) {
    this.#runner = runner;
  }

  run(
    argv: readonly string[],
    options?: Parameters<CommandRunner['run']>[1],
  ): Promise<CommandResult> {
    return this.#runner.run(withoutDeviceMapper(argv), options);
  }
}

/** `argv` with `--driverloaded n` after the lvm2 command name (isLvmCommand); other programs unchanged. */
export function withoutDeviceMapper(argv: readonly string[]): string[] {
  if (!isLvmCommand(argv)) return [...argv];
  const at = argv[0] === 'lvm' ? 2 : 1;
  return [...argv.slice(0, at), ...NO_DM, ...argv.slice(at)];
}

/** The argv of one volume's cycle: the driver's look-up, lvcreate, lvrename, lvremove. */
export function cycleArgv(
  vg: Pick<BenchVg, 'name' | 'extentBytes'>,
  name: string,
  mode: CostMode,
): { lookup: string[]; create: string[]; rename: string[]; remove: string[] } {
  const volumeId = volumeIdForName(name);
  const newName = newLvNameFor(volumeId);
  const finalName = lvNameFor(volumeId);
  const create = lvcreateArgv({
    vgName: vg.name,
    lvName: newName,
    sizeBytes: 16 * MiB + vg.extentBytes,
    tags: [DEFAULT_NAMING.tag, ownerTagFor(BENCH_OWNER_ID)],
  });
  if (mode === 'metadata-only') {
    for (const [flag, value] of [
      ['--activate', 'n'],
      ['--zero', 'n'],
      ['--wipesignatures', 'n'],
    ] as const) {
      const at = create.indexOf(flag);
      if (at < 0) throw new Error(`lvcreateArgv has no ${flag}: update command-cost`);
      create[at + 1] = value;
    }
  }
  return {
    lookup: lookupArgv([vg.name], { names: [finalName, newName] }),
    create,
    rename: lvrenameArgv(vg.name, newName, finalName),
    remove: ['lvremove', '--yes', `${vg.name}/${finalName}`],
  };
}

/**
 * `rounds` cycles each way after one warm-up, order alternating: bare (lvcreate, lvrename,
 * lvremove) and the driver's commands for a thick volume in a one-group scope (lvcreate,
 * lvrename, look-up, lvremove: DESIGN.md §5 "Create" needs no look-up there), every
 * command timed alone. Headers are not written (the same in-process work on both sides). Prints
 * the median of each command and the ratio the two sequences' medians give.
 * @returns 0 (a failing command throws).
 */
export async function commandCost(
  context: BenchContext,
  mode: CostMode,
  rounds: number,
): Promise<number> {
  const runner = mode === 'full' ? context.runner : new NoDeviceMapperRunner(context.runner);
  // Ctrl-C or a kill: stop before the next command, then remove the VG (the `finally` below);
  // without a handler Node would exit at once and leave the loop device, the VG and its file.
  let interrupted: NodeJS.Signals | null = null;
  const onSignal = (signal: NodeJS.Signals): void => {
    interrupted = signal;
    context.progress(`${signal}: stopping after this command, then removing the benchmark VG`);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  let vg: BenchVg;
  try {
    vg = await createBenchVg(runner, { sizeBytes: 1024 * MiB });
  } catch (error) {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    throw error;
  }
  const ms: Record<'lookup' | 'create' | 'rename' | 'remove' | 'bare' | 'driver', number[]> = {
    lookup: [],
    create: [],
    rename: [],
    remove: [],
    bare: [],
    driver: [],
  };
  const time = async (argv: readonly string[]): Promise<number> => {
    if (interrupted !== null) throw new Error(`interrupted by ${interrupted}`);
    const start = performance.now();
    await runner.run(argv);
    return performance.now() - start;
  };
  const cycle = async (side: 'bare' | 'driver', name: string, record: boolean): Promise<void> => {
    const argv = cycleArgv(vg, name, mode);
    const steps: [keyof typeof ms, string[]][] =
      side === 'bare'
        ? [
            ['create', argv.create],
            ['rename', argv.rename],
            ['remove', argv.remove],
          ]
        : [
            ['create', argv.create],
            ['rename', argv.rename],
            ['lookup', argv.lookup],
            ['remove', argv.remove],
          ];
    let total = 0;
    for (const [kind, command] of steps) {
      const took = await time(command);
      total += took;
      if (record) ms[kind].push(took);
    }
    if (record) ms[side].push(total);
  };
  try {
    await cycle('bare', `${vg.name}-cc-warm-b`, false);
    await cycle('driver', `${vg.name}-cc-warm-d`, false);
    for (let i = 0; i < rounds; i++) {
      const sides = i % 2 === 0 ? (['bare', 'driver'] as const) : (['driver', 'bare'] as const);
      for (const side of sides) await cycle(side, `${vg.name}-cc-${side}${i}`, true);
      context.progress(`command-cost ${i + 1}/${rounds}`);
    }
  } finally {
    await cleanUp({ runner, cleanupProblems: context.cleanupProblems }, vg);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  const m = (key: keyof typeof ms): number => median(ms[key]);
  const rows = (['lookup', 'create', 'rename', 'remove'] as const).map((key) => [
    {
      lookup: 'look-up (lvm fullreport)',
      create: 'lvcreate',
      rename: 'lvrename',
      remove: 'lvremove',
    }[key],
    formatMs(m(key)),
  ]);
  const floor =
    (m('lookup') + m('create') + m('rename') + m('remove')) /
    (m('create') + m('rename') + m('remove'));
  process.stdout.write(
    `${renderTable(['command', `median of ${rounds}`], rows)}\n` +
      `bare cycle (3 lvm) ${formatMs(m('bare'))}, driver cycle (4 lvm) ${formatMs(m('driver'))}: ` +
      `ratio ${round(m('driver') / m('bare'), 2)}× (from the per-command medians ${round(floor, 2)}×); mode ${mode}\n`,
  );
  return context.cleanupProblems.length === 0 ? 0 : 1;
}
