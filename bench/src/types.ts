/**
 * The shapes of a benchmark run (bench/results/<date>.json) and of the
 * recorded baseline (bench/baseline.json). Schema version 1.
 */

/** The seven measurement groups (bench/README.md), in report order. */
export const GROUPS = [
  'create-delete',
  'snapshots',
  'listing',
  'burst',
  'datapath',
  'footprint',
  'peer',
] as const;
export type Group = (typeof GROUPS)[number];

/** Units a metric value can carry. */
export type Unit = 'ratio' | 'ms' | 'MiB' | 'count' | 'MiB/s' | 'per-min';

/** A target from the issue: `value op target`, e.g. ratio <= 1.3. */
export interface Target {
  readonly op: '<=' | '>=';
  readonly value: number;
}

/** One measured figure. */
export interface Metric {
  /** Stable key across runs, e.g. `listing.n1000.list-volumes.ratio`. */
  readonly id: string;
  readonly group: Group;
  /** Human text for the table, e.g. "ListVolumes / bare lvs, 1000 volumes". */
  readonly label: string;
  readonly value: number;
  readonly unit: Unit;
  /** Whether a larger value is better (throughput ratios) or worse (times, RSS, counts). */
  readonly better: 'lower' | 'higher';
  /** The target, when it sets one. */
  readonly target?: Target;
  /**
   * Whether `bench:check` compares this metric with the baseline. True for
   * ratios and counts (stable across noisy machines); false for absolute
   * times, which are context only.
   */
  readonly compared: boolean;
  /** Context for the table: the absolute figures behind a ratio, the counts. */
  readonly note?: string;
}

/** Where the run happened. */
export interface BenchEnvironment {
  /** `uname -r`. */
  readonly kernel: string;
  /** First line of `lvm version`. */
  readonly lvm2: string;
  readonly cpuModel: string;
  readonly cpus: number;
  /** Total memory in bytes. */
  readonly memoryBytes: number;
  /** Inside the throwaway qemu VM of test-e2e/vm. */
  readonly vm: boolean;
  /** The CPU is emulated (qemu TCG), so every figure is slow in absolute terms. */
  readonly emulated: boolean;
  /** process.version. */
  readonly node: string;
  /** `git rev-parse HEAD` of the tree, when known. */
  readonly commit: string | null;
  readonly fio: string | null;
  /**
   * The lvmd group `peer` ran (`lvmd --version`, e.g. "lvmd version v0.41.0"),
   * null when it does not answer; absent when no lvmd was given.
   */
  readonly lvmd?: string | null;
}

/** A whole run: bench/results/<date>.json. */
export interface BenchResults {
  readonly schema: 1;
  /** ISO 8601, UTC. */
  readonly startedAt: string;
  /** Wall time of the whole run, in milliseconds. */
  readonly durationMs: number;
  /** `full` (pnpm bench) or `smoke` (N = 10, one round; CI). */
  readonly mode: 'full' | 'smoke';
  readonly environment: BenchEnvironment;
  readonly metrics: readonly Metric[];
  /**
   * The groups that were run, in run order (all of GROUPS unless `run --only`).
   * Absent in files written before it was recorded.
   */
  readonly groups?: readonly Group[];
  /**
   * One line per group that failed, `<group>: <error>`; empty when all ran.
   * Absent in files written before it was recorded.
   */
  readonly failures?: readonly string[];
}

/** bench/baseline.json: the compared metrics of one accepted run. */
export interface BenchBaseline {
  readonly schema: 1;
  /** The results file the baseline was taken from (relative to bench/). */
  readonly source: string;
  readonly startedAt: string;
  readonly environment: BenchEnvironment;
  /** Only metrics with `compared: true`; at least one. */
  readonly metrics: readonly Metric[];
}
