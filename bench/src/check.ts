/**
 * bench:check and bench:baseline: comparing a run with bench/baseline.json,
 * and taking a new baseline from a run. Pure functions; reading and writing
 * the files is results.ts's job.
 */
import { renderTable } from '@lvstamp/app-kit';
import { formatValue, meetsTarget } from './results.js';
import {
  GROUPS,
  type BenchBaseline,
  type BenchEnvironment,
  type BenchResults,
  type Group,
  type Metric,
  type Target,
  type Unit,
} from './types.js';

/**
 * How one metric moved: `ok` within tolerance, `worse` / `better` by more than
 * the tolerance, `missing` in the baseline but not in the run (fails the
 * check), `new` compared in the run but not in the baseline (informational).
 */
export type ComparisonStatus = 'ok' | 'worse' | 'better' | 'missing' | 'new';

/**
 * Why a row is `worse`: `tolerance` beyond the relative band, `exact` a
 * count or rate (unit `count` / `per-min`) moved the wrong way at all,
 * `target` the baseline met the metric's target and the run misses it.
 */
export type WorseReason = 'tolerance' | 'exact' | 'target';

/** One row of a comparison; values are in the metric's `unit`. */
export interface ComparisonRow {
  readonly id: string;
  readonly label: string;
  readonly unit: Unit;
  readonly better: Metric['better'];
  /** The baseline value; null for a `new` metric. */
  readonly baseline: number | null;
  /** The run's value; null for a `missing` metric. */
  readonly latest: number | null;
  /**
   * (latest − baseline) / |baseline| as a fraction (0.25 = 25 % higher,
   * whichever direction is better); 0 when both are 0; null when the baseline
   * is 0 and the run is not, or when either value is absent.
   */
  readonly change: number | null;
  readonly status: ComparisonStatus;
  /** Only on `worse` rows: why. */
  readonly reason?: WorseReason;
  /** Only on `worse` rows with reason `target`: the baseline's target the run misses. */
  readonly target?: Target;
}

/** The outcome of {@link compareWithBaseline}. */
export interface Comparison {
  /** Baseline metrics in baseline order, then the run's new compared metrics. */
  readonly rows: readonly ComparisonRow[];
  /** True when any row is `worse` or `missing`. */
  readonly failed: boolean;
  /** The tolerance used, as a fraction (0.2 = 20 %). */
  readonly tolerance: number;
}

/**
 * Guards `x > limit` against float noise in the limit itself, so that a run
 * exactly at the tolerance (e.g. 0.84 against a 0.7 baseline at 20 %) is not
 * failed because 0.7 × 1.2 is 0.8399999999999999.
 */
const RELATIVE_EPSILON = 1e-9;

/** Units compared exactly: one more lvm process per call is a regression, not noise. */
const EXACT_UNITS: ReadonlySet<Unit> = new Set<Unit>(['count', 'per-min']);

function statusOf(
  better: Metric['better'],
  baseline: number,
  latest: number,
  tolerance: number,
): 'ok' | 'worse' | 'better' {
  // |baseline|: for a negative baseline the band must still be baseline ± 20 % of its size.
  const upper = baseline + Math.abs(baseline) * tolerance;
  const lower = baseline - Math.abs(baseline) * tolerance;
  const above = latest > upper + Math.abs(upper) * RELATIVE_EPSILON;
  const below = latest < lower - Math.abs(lower) * RELATIVE_EPSILON;
  // With a baseline of 0 both limits are 0: for lower-is-better metrics (idle
  // lvm processes per minute, process-count growth) any value above 0 is worse.
  if (better === 'lower') return above ? 'worse' : below ? 'better' : 'ok';
  return below ? 'worse' : above ? 'better' : 'ok';
}

function changeOf(baseline: number, latest: number): number | null {
  if (baseline === 0) return latest === 0 ? 0 : null;
  return (latest - baseline) / Math.abs(baseline);
}

/** The row of a baseline metric found in the run. */
function compareOne(
  base: Metric,
  now: Metric,
  tolerance: number,
): Pick<ComparisonRow, 'status' | 'reason' | 'target'> {
  const exact = EXACT_UNITS.has(base.unit);
  const status = statusOf(base.better, base.value, now.value, exact ? 0 : tolerance);
  if (status === 'worse') return { status, reason: exact ? 'exact' : 'tolerance' };
  // Judged by the baseline's target, so that both values face the same bar.
  if (
    base.target !== undefined &&
    meetsTarget(base) === true &&
    meetsTarget({ ...base, value: now.value }) === false
  ) {
    return { status: 'worse', reason: 'target', target: base.target };
  }
  return { status };
}

/**
 * Compares every baseline metric with the run's metric of the same id.
 * Worse means more than `tolerance` worse: for `better: 'lower'`, latest >
 * baseline + |baseline| × tolerance; for `better: 'higher'`, latest <
 * baseline − |baseline| × tolerance; better is the mirror image. Exactly at
 * the limit is ok. Counts and rates (unit `count`, `per-min`) are compared
 * exactly: any move the wrong way is worse (a baseline of 0 with
 * `better: 'lower'` fails on any latest value above 0). A metric whose
 * baseline meets its target is also worse when the run misses that target,
 * however small the change. The direction, unit and target are the baseline's. Metrics compared in the run but
 * absent from the baseline are listed as `new` and do not fail the check;
 * the run's uncompared metrics (absolute times) are left out.
 * @param tolerance a fraction in [0, 1): 0.2 = 20 %.
 * @throws RangeError when `tolerance` is outside [0, 1).
 * @throws Error when the baseline has no metrics (the check would pass vacuously).
 */
export function compareWithBaseline(
  latest: BenchResults,
  baseline: BenchBaseline,
  tolerance = 0.2,
): Comparison {
  if (!(tolerance >= 0 && tolerance < 1)) {
    throw new RangeError(`tolerance must be a fraction in [0, 1), got ${tolerance}`);
  }
  if (baseline.metrics.length === 0) {
    throw new Error(`the baseline (${baseline.source}) has no metrics; nothing to compare`);
  }
  const byId = new Map(latest.metrics.map((metric) => [metric.id, metric]));
  const rows: ComparisonRow[] = baseline.metrics.map((base) => {
    const now = byId.get(base.id);
    const common = { id: base.id, label: base.label, unit: base.unit, better: base.better };
    if (now === undefined) {
      return { ...common, baseline: base.value, latest: null, change: null, status: 'missing' };
    }
    return {
      ...common,
      baseline: base.value,
      latest: now.value,
      change: changeOf(base.value, now.value),
      ...compareOne(base, now, tolerance),
    };
  });
  const known = new Set(baseline.metrics.map((metric) => metric.id));
  for (const metric of latest.metrics) {
    if (!metric.compared || known.has(metric.id)) continue;
    rows.push({
      id: metric.id,
      label: metric.label,
      unit: metric.unit,
      better: metric.better,
      baseline: null,
      latest: metric.value,
      change: null,
      status: 'new',
    });
  }
  const failed = rows.some((row) => row.status === 'worse' || row.status === 'missing');
  return { rows, failed, tolerance };
}

const STATUS_TEXT: Readonly<Record<ComparisonStatus, string>> = {
  ok: 'ok',
  worse: 'WORSE',
  better: 'better',
  missing: 'MISSING',
  new: 'new',
};

function formatStatus(row: ComparisonRow): string {
  if (row.reason !== 'target' || row.target === undefined) return STATUS_TEXT[row.status];
  return `${STATUS_TEXT[row.status]}: misses ${row.target.op === '<=' ? '≤' : '≥'} ${row.target.value}`;
}

function formatChange(row: ComparisonRow): string {
  if (row.change === null) return row.baseline === 0 && row.latest !== null ? 'from 0' : '';
  const percent = (row.change * 100).toFixed(1);
  return `${row.change > 0 ? '+' : ''}${percent === '-0.0' ? '0.0' : percent} %`;
}

/**
 * A comparison as text: columns MEASUREMENT, BASELINE, LATEST, CHANGE
 * (`+25.0 %`, `-3.1 %`, `from 0`), STATUS (`ok`, `WORSE`, `WORSE: misses ≤ 3`
 * for a target the baseline met, `better`, `MISSING`, `new`), ID; then one
 * summary line. Ends with a newline.
 */
export function renderComparison(comparison: Comparison): string {
  const rows = comparison.rows.map((row) => [
    row.label,
    row.baseline === null ? '' : formatValue(row.baseline, row.unit),
    row.latest === null ? '' : formatValue(row.latest, row.unit),
    formatChange(row),
    formatStatus(row),
    row.id,
  ]);
  const table = renderTable(['measurement', 'baseline', 'latest', 'change', 'status', 'id'], rows);
  const count = (status: ComparisonStatus): number =>
    comparison.rows.filter((row) => row.status === status).length;
  const compared = comparison.rows.length - count('new');
  const limit = `${Math.round(comparison.tolerance * 1000) / 10} %`;
  const summary = comparison.failed
    ? `FAILED: ${count('worse')} of ${compared} compared metrics worse (allowed: ${limit} on ratios and sizes, none on counts, no newly missed target), ${count('missing')} missing`
    : compared === 1
      ? `ok: the 1 compared metric is within ${limit} of the baseline or better`
      : `ok: all ${compared} compared metrics within ${limit} of the baseline or better`;
  return `${table}\n${summary}\n`;
}

/**
 * A new baseline from a complete full run: its start time and environment,
 * and only the metrics with `compared: true`.
 * @param source the results file the baseline comes from, relative to bench/
 *   (e.g. `results/2026-11-29T221503Z.json`); recorded in the baseline.
 * @param shownAs how error messages name the file (default `source`), e.g.
 *   the path as the user gave it.
 * @throws Error (one line) for a smoke run (N = 10, one round: not a
 *   baseline), a run with failed groups, a run without compared metrics (the
 *   check would pass vacuously), or a partial run (`run --only`): `groups`,
 *   when recorded, must name every group of GROUPS, and every group must have
 *   at least one compared metric.
 */
export function takeBaseline(
  results: BenchResults,
  source: string,
  shownAs: string = source,
): BenchBaseline {
  if (results.mode !== 'full') {
    throw new Error(
      `${shownAs}: a baseline must come from a full run (pnpm bench), not a ${results.mode} run`,
    );
  }
  const failures = results.failures ?? [];
  if (failures.length > 0) {
    const first = (failures[0] ?? '').split('\n')[0] ?? '';
    throw new Error(
      `${shownAs}: ${failures.length} group(s) failed in this run (${first}${failures.length > 1 ? '; …' : ''}); a baseline must come from a run without failures`,
    );
  }
  const metrics = results.metrics.filter((metric) => metric.compared);
  if (metrics.length === 0) {
    throw new Error(`${shownAs}: the run has no compared metrics; nothing to take as a baseline`);
  }
  const notRun =
    results.groups === undefined ? [] : GROUPS.filter((g) => !results.groups?.includes(g));
  const uncovered = GROUPS.filter((g) => !metrics.some((metric) => metric.group === g));
  if (notRun.length > 0 || uncovered.length > 0) {
    const what = [
      notRun.length > 0 ? `not run: ${notRun.join(', ')}` : null,
      uncovered.length > 0 ? `no compared metric: ${uncovered.join(', ')}` : null,
    ].filter((part) => part !== null);
    throw new Error(
      `${shownAs}: a partial run (${what.join('; ')}); a baseline must cover every group`,
    );
  }
  return {
    schema: 1,
    source,
    startedAt: results.startedAt,
    environment: results.environment,
    metrics,
  };
}

/**
 * One warning line when the run and the baseline come from different kinds
 * of machine (emulated CPU or not, VM or host, number of CPUs) or ran
 * different lvmd versions in group peer, whose ratios may not be
 * comparable; null when they match. Not a failure.
 */
export function environmentWarning(
  latest: BenchEnvironment,
  baseline: BenchEnvironment,
): string | null {
  const yesNo = (value: boolean): string => (value ? 'yes' : 'no');
  const differences = [
    latest.emulated === baseline.emulated
      ? null
      : `emulated CPU ${yesNo(latest.emulated)} (baseline ${yesNo(baseline.emulated)})`,
    latest.vm === baseline.vm
      ? null
      : `${latest.vm ? 'VM' : 'host'} (baseline ${baseline.vm ? 'VM' : 'host'})`,
    latest.cpus === baseline.cpus ? null : `${latest.cpus} CPUs (baseline ${baseline.cpus})`,
    latest.lvmd === undefined || baseline.lvmd === undefined || latest.lvmd === baseline.lvmd
      ? null
      : `group peer's ${latest.lvmd ?? 'lvmd of unknown version'} (baseline ${baseline.lvmd ?? 'unknown'})`,
  ].filter((difference) => difference !== null);
  if (differences.length === 0) return null;
  return `warning: the run's machine differs from the baseline's: ${differences.join(', ')}; the figures may not be comparable`;
}

/**
 * Parses `--tolerance`: a fraction in [0, 1), the bound of
 * {@link compareWithBaseline}.
 * @throws Error (one line) for an empty or blank string, a non-number, or a
 *   number outside [0, 1).
 */
export function parseTolerance(value: string): number {
  const n = value.trim() === '' ? Number.NaN : Number(value);
  if (!(n >= 0 && n < 1)) {
    throw new Error(`--tolerance must be a fraction 0 <= n < 1 (0.2 = 20 %), got "${value}"`);
  }
  return n;
}

/**
 * Checks `run --only` names against GROUPS.
 * @returns the groups, in the order given, without repeats.
 * @throws Error (one line) naming the first unknown group and the known ones.
 */
export function parseGroups(names: readonly string[]): Group[] {
  const groups: Group[] = [];
  for (const name of names) {
    const group = GROUPS.find((g) => g === name);
    if (group === undefined) {
      throw new Error(`unknown group "${name}"; groups: ${GROUPS.join(', ')}`);
    }
    if (!groups.includes(group)) groups.push(group);
  }
  return groups;
}
