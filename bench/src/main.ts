#!/usr/bin/env node
// lvstamp-bench: `run` measures (inside the test VM or on a host with device-mapper, see
// scripts/run-bench.sh), `check` compares the latest run with bench/baseline.json, `baseline` takes
// the latest full run as the new baseline.
import { access, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { messageOf } from '@lvstamp/app-kit';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { checkHostCanActivate } from '@lvstamp/core';
import {
  compareWithBaseline,
  environmentWarning,
  parseGroups,
  parseTolerance,
  renderComparison,
  takeBaseline,
} from './check.js';
import { FULL, SMOKE, type BenchContext, type GroupRun } from './context.js';
import { collectEnvironment } from './environment.js';
import { CountingRunner } from './exec.js';
import { burst } from './groups/burst.js';
import { createDelete } from './groups/create-delete.js';
import { datapath } from './groups/datapath.js';
import { footprint } from './groups/footprint.js';
import { listing } from './groups/listing.js';
import { snapshots } from './groups/snapshots.js';
import { commandCost } from './command-cost.js';
import { shellMode } from './shell-mode.js';
import { lvmdFromEnvironment, peer, peerGroup } from './peer.js';
import { latestResults, readBaseline, readResults, renderTable, writeResults } from './results.js';
import { GROUPS, type BenchResults, type Group, type Metric } from './types.js';

const BENCH_DIR = fileURLToPath(new URL('../', import.meta.url));
const RESULTS_DIR = join(BENCH_DIR, 'results');
const BASELINE = join(BENCH_DIR, 'baseline.json');

const RUNS: Record<Group, GroupRun> = {
  'create-delete': createDelete,
  snapshots,
  listing,
  burst,
  datapath,
  footprint,
  peer: peerGroup,
};

/** A failure meant for the user: one line on stderr, exit `code`. */
class UsageFailure extends Error {
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message);
  }
}

async function run(options: {
  smoke: boolean;
  only?: string[];
  resultsDir: string;
  checkUsage?: boolean;
}): Promise<number> {
  // Names first: a typo says "unknown group" wherever it is run.
  let groups: Group[];
  try {
    groups = options.only === undefined ? [...GROUPS] : parseGroups(options.only);
  } catch (error) {
    throw new UsageFailure(messageOf(error), 2);
  }
  if (options.checkUsage === true) {
    process.stdout.write(`${groups.join(' ')}\n`);
    return 0;
  }
  const can = await checkHostCanActivate();
  if (!can.ok) {
    throw new UsageFailure(
      `cannot benchmark here: ${can.reason}; use pnpm bench (it boots the test VM when needed)`,
      2,
    );
  }
  const mode: 'full' | 'smoke' = options.smoke ? 'smoke' : 'full';
  const runner = new CountingRunner();
  const context: BenchContext = {
    scale: options.smoke ? SMOKE : FULL,
    runner,
    progress: (line) => process.stderr.write(`bench: ${line}\n`),
    cleanupProblems: [],
  };
  const startedAt = new Date();
  // The lvmd version only for a run of group peer: another run's figures do not depend on it.
  const environment = await collectEnvironment(
    runner,
    groups.includes('peer') ? process.env.LVSTAMP_BENCH_LVMD : undefined,
  );
  context.progress(
    `${mode} run on ${environment.kernel}, ${environment.lvm2}, ${environment.cpus} × ${environment.cpuModel}${environment.emulated ? ' (emulated)' : ''}`,
  );
  const metrics: Metric[] = [];
  const failures: string[] = [];
  for (const group of groups) {
    const start = performance.now();
    const cleanupBefore = context.cleanupProblems.length;
    context.progress(`${group}: start`);
    try {
      metrics.push(...(await RUNS[group](context)));
      context.progress(`${group}: done in ${((performance.now() - start) / 1000).toFixed(1)} s`);
    } catch (error) {
      const message = messageOf(error);
      failures.push(`${group}: ${firstLine(message)}`);
      context.progress(`${group}: FAILED: ${message}`);
    }
    for (const problem of context.cleanupProblems.slice(cleanupBefore)) {
      failures.push(`${group}: cleanup: ${firstLine(problem)}`);
      context.progress(`${group}: cleanup FAILED: ${problem}`);
    }
  }
  const results: BenchResults = {
    schema: 1,
    startedAt: startedAt.toISOString(),
    durationMs: Math.round(Date.now() - startedAt.getTime()),
    mode: mode,
    environment,
    metrics,
    groups,
    failures,
  };
  const path = await writeResults(options.resultsDir, results);
  process.stdout.write(renderTable(results));
  process.stdout.write(`results: ${path}\n`);
  if (failures.length > 0) {
    process.stderr.write(
      `bench: ${failures.length} group(s) failed:\n${failures.map((f) => `  ${f}`).join('\n')}\n`,
    );
    return 1;
  }
  return 0;
}

async function check(options: {
  results?: string;
  baseline: string;
  tolerance: number;
}): Promise<number> {
  const path = options.results ?? (await latestResults(RESULTS_DIR));
  if (path === null)
    throw new UsageFailure(`no full run in ${RESULTS_DIR}: run pnpm bench first`, 2);
  const latest = await readResults(path);
  if (latest.mode !== 'full') {
    throw new UsageFailure(
      `${path} is a smoke run; the baseline is compared with full runs only`,
      2,
    );
  }
  try {
    await access(options.baseline);
  } catch (error) {
    if (isErrnoException(error) && error.code === 'ENOENT') {
      const shown = options.baseline === BASELINE ? 'bench/baseline.json' : options.baseline;
      throw new UsageFailure(`${shown} is missing: run pnpm bench, then pnpm bench:baseline`, 2);
    }
    throw error;
  }
  const base = await readBaseline(options.baseline);
  const warning = environmentWarning(latest.environment, base.environment);
  if (warning !== null) process.stderr.write(`lvstamp-bench: ${warning}\n`);
  const comparison = compareWithBaseline(latest, base, options.tolerance);
  process.stdout.write(renderComparison(comparison));
  process.stdout.write(`compared ${path} with ${options.baseline}\n`);
  return comparison.failed ? 1 : 0;
}

async function baseline(options: { from?: string; baseline: string }): Promise<number> {
  const path = options.from ?? (await latestResults(RESULTS_DIR));
  if (path === null)
    throw new UsageFailure(`no full run in ${RESULTS_DIR}: run pnpm bench first`, 2);
  const results = await readResults(path);
  let taken;
  try {
    taken = takeBaseline(results, relative(BENCH_DIR, path), path);
  } catch (error) {
    // Not baseline material (a smoke, failed or partial run): a usage error, exit 2 like check.
    throw new UsageFailure(messageOf(error), 2);
  }
  await writeFile(options.baseline, `${JSON.stringify(taken, null, 2)}\n`);
  process.stdout.write(
    `baseline ${options.baseline} now holds ${taken.metrics.length} metrics from ${path}\n`,
  );
  return 0;
}

function program(): Command {
  const root = new Command('lvstamp-bench')
    .description('lvstamp benchmarks: what LVM costs and what lvstamp adds on top')
    .exitOverride()
    .showHelpAfterError();
  root
    .command('run')
    .description('measure every group (needs root and device-mapper: pnpm bench boots the VM)')
    .option('--smoke', 'N = 10, one round: keeps the harness working (CI)', false)
    .addOption(new Option('--only <groups...>', `run only these groups (${GROUPS.join(', ')})`))
    .option('--results-dir <dir>', 'where the JSON goes', RESULTS_DIR)
    .addOption(checkUsageOption())
    .action(
      async (o: { smoke: boolean; only?: string[]; resultsDir: string; checkUsage?: boolean }) => {
        process.exitCode = await run(o);
      },
    );
  root
    .command('shell-mode')
    .description(
      "evaluate lvm's shell mode against a process per call (needs root and device-mapper: bench/scripts/run-shell-mode.sh boots the VM)",
    )
    .option('--cycles <n>', 'create → report → remove sequences per side', '5')
    .action(async (o: { cycles: string }) => {
      const cycles = positiveCount('cycles', o.cycles);
      const can = await checkHostCanActivate();
      if (!can.ok) throw new UsageFailure(`cannot benchmark here: ${can.reason}`, 2);
      const context = standaloneContext();
      process.exitCode = await shellMode(context, cycles);
    });
  root
    .command('command-cost')
    .description(
      'time each lvm command of a create → delete cycle alone, bare and as the driver runs them (needs root; bench/scripts/run-command-cost.sh boots the VM when the host has no device-mapper)',
    )
    .option('--rounds <n>', 'cycles per side', '10')
    .option(
      '--metadata-only',
      'on a host without device-mapper: lvm --driverloaded n, LVs never activated (scan and metadata work only)',
      false,
    )
    .action(async (o: { rounds: string; metadataOnly: boolean }) => {
      const rounds = positiveCount('rounds', o.rounds);
      if (process.getuid?.() !== 0) throw new UsageFailure('command-cost must run as root', 2);
      const can = await checkHostCanActivate();
      if (!can.ok && !o.metadataOnly) {
        throw new UsageFailure(`cannot activate here (${can.reason}): use --metadata-only`, 2);
      }
      const context = standaloneContext();
      process.exitCode = await commandCost(
        context,
        o.metadataOnly ? 'metadata-only' : 'full',
        rounds,
      );
    });
  root
    .command('peer')
    .description(
      "lvstamp-csi next to TopoLVM's lvmd on one VG (needs root and device-mapper, and LVSTAMP_BENCH_LVMD, LVSTAMP_BENCH_LVMD_PROTO: bench/scripts/run-peer.sh boots the VM)",
    )
    .option('--cycles <n>', 'create → remove cycles per side', '20')
    .option('--burst <n>', 'concurrent creates, then removes', '64')
    .option('--burst-rounds <n>', 'bursts per side', '2')
    .option('--rpcs <n>', 'RPCs without lvm before the second RSS reading', '1000')
    .addOption(checkUsageOption())
    .action(async (o: PeerArguments) => {
      const options = {
        cycles: positiveCount('cycles', o.cycles),
        burst: positiveCount('burst', o.burst),
        burstRounds: positiveCount('burst-rounds', o.burstRounds),
        rpcs: positiveCount('rpcs', o.rpcs),
      };
      if (o.checkUsage === true) return;
      let lvmd: string, proto: string;
      try {
        ({ lvmd, proto } = lvmdFromEnvironment());
      } catch (error) {
        throw new UsageFailure(messageOf(error), 2);
      }
      const can = await checkHostCanActivate();
      if (!can.ok) throw new UsageFailure(`cannot benchmark here: ${can.reason}`, 2);
      const context = standaloneContext();
      process.exitCode = await peer(context, { lvmd, proto, ...options });
    });
  root
    .command('check')
    .description(
      'compare the latest full run with the baseline; exit 1 when a ratio is >20 % worse, a count grows, a met target is missed or a metric is missing',
    )
    .option('--results <file>', 'results file (default: the newest full run in bench/results)')
    .option('--baseline <file>', 'baseline file', BASELINE)
    .addOption(
      new Option('--tolerance <fraction>', 'allowed worsening')
        .default(0.2)
        .argParser((value: string) => {
          try {
            return parseTolerance(value);
          } catch (error) {
            throw new InvalidArgumentError(messageOf(error));
          }
        }),
    )
    .action(async (o: { results?: string; baseline: string; tolerance: number }) => {
      process.exitCode = await check(o);
    });
  root
    .command('baseline')
    .description('make the latest full run (or --from FILE) the new baseline')
    .option('--from <file>', 'results file (default: the newest full run in bench/results)')
    .option('--baseline <file>', 'baseline file', BASELINE)
    .action(async (o: { from?: string; baseline: string }) => {
      process.exitCode = await baseline(o);
    });
  return root;
}

/** `peer`'s options as commander gives them. */
interface PeerArguments {
  cycles: string;
  burst: string;
  burstRounds: string;
  rpcs: string;
  checkUsage?: boolean;
}

/**
 * `--check-usage` (hidden): parse and check the arguments, then exit 0
 * without measuring (`run` prints the groups it would run, one line), so
 * that bench/scripts refuse a typo before they boot the test VM.
 */
function checkUsageOption(): Option {
  return new Option('--check-usage', 'check the arguments only, exit 0').hideHelp();
}

/** The context of a subcommand outside `run`: full scale, progress on stderr. */
function standaloneContext(): BenchContext {
  return {
    scale: FULL,
    runner: new CountingRunner(),
    progress: (line) => process.stderr.write(`bench: ${line}\n`),
    cleanupProblems: [],
  };
}

/**
 * Option `--<name>`'s value as a positive whole number.
 * @throws UsageFailure (exit 2) for anything else.
 */
function positiveCount(name: string, value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1) {
    throw new UsageFailure(`--${name} must be a positive whole number, got "${value}"`, 2);
  }
  return n;
}

function firstLine(text: string): string {
  return text.split('\n')[0] ?? '';
}

function isErrnoException(error: unknown): error is NodeJS.ErrnoException {
  return error instanceof Error && 'code' in error;
}

try {
  await program().parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    process.exitCode = error.exitCode === 0 ? 0 : 2;
  } else if (error instanceof UsageFailure) {
    process.stderr.write(`lvstamp-bench: ${error.message}\n`);
    process.exitCode = error.code;
  } else {
    process.stderr.write(`lvstamp-bench: ${messageOf(error)}\n`);
    process.exitCode = 1;
  }
}
