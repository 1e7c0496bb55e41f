/**
 * bench:check and bench:baseline: comparing a run with bench/baseline.json,
 * and taking a new baseline from a run. Pure functions; reading and writing
 * the files is results.ts's job.
 */
import { formatValue, renderPlainTable } from './results.js';
import type { BenchBaseline, BenchResults, Metric, Unit } from './types.js';

/**
 * How one metric moved: `ok` within tolerance, `worse` / `better` by more than
 * the tolerance, `missing` in the baseline but not in the run (fails the
 * check), `new` compared in the run but not in the baseline (informational).
 */
export type ComparisonStatus = 'ok' | 'worse' | 'better' | 'missing' | 'new';

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
   * (latest − baseline) / baseline as a fraction (0.25 = 25 % higher,
   * whichever direction is better); 0 when both are 0; null when the baseline
   * is 0 and the run is not, or when either value is absent.
   */
  readonly change: number | null;
  readonly status: ComparisonStatus;
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

function statusOf(
  better: Metric['better'],
  baseline: number,
  latest: number,
  tolerance: number,
): 'ok' | 'worse' | 'better' {
  const upper = baseline * (1 + tolerance);
  const lower = baseline * (1 - tolerance);
  const above = latest > upper + Math.abs(upper) * RELATIVE_EPSILON;
  const below = latest < lower - Math.abs(lower) * RELATIVE_EPSILON;
  // With a baseline of 0 both limits are 0: for lower-is-better metrics (idle
  // lvm processes per minute, process-count growth) any value above 0 is worse.
  if (better === 'lower') return above ? 'worse' : below ? 'better' : 'ok';
  return below ? 'worse' : above ? 'better' : 'ok';
}

function changeOf(baseline: number, latest: number): number | null {
  if (baseline === 0) return latest === 0 ? 0 : null;
  return (latest - baseline) / baseline;
}

/**
 * Compares every baseline metric with the run's metric of the same id.
 * Worse means more than `tolerance` worse: for `better: 'lower'`, latest >
 * baseline × (1 + tolerance); for `better: 'higher'`, latest < baseline ×
 * (1 − tolerance); better is the mirror image. Exactly at the limit is ok.
 * A baseline of 0 with `better: 'lower'` fails on any latest value above 0.
 * The direction and unit are the baseline's. Metrics compared in the run but
 * absent from the baseline are listed as `new` and do not fail the check;
 * the run's uncompared metrics (absolute times) are left out.
 * @param tolerance a fraction in [0, 1): 0.2 = 20 %.
 * @throws RangeError when `tolerance` is outside [0, 1).
 */
export function compareWithBaseline(
  latest: BenchResults,
  baseline: BenchBaseline,
  tolerance = 0.2,
): Comparison {
  if (!(tolerance >= 0 && tolerance < 1)) {
    throw new RangeError(`tolerance must be a fraction in [0, 1), got ${tolerance}`);
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
      status: statusOf(base.better, base.value, now.value, tolerance),
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

function formatChange(row: ComparisonRow): string {
  if (row.change === null) return row.baseline === 0 && row.latest !== null ? 'from 0' : '';
  const percent = (row.change * 100).toFixed(1);
  return `${row.change > 0 ? '+' : ''}${percent === '-0.0' ? '0.0' : percent} %`;
}

/**
 * A comparison as text: columns MEASUREMENT, BASELINE, LATEST, CHANGE
 * (`+25.0 %`, `-3.1 %`, `from 0`), STATUS (`ok`, `WORSE`, `better`,
 * `MISSING`, `new`), ID; then one summary line. Ends with a newline.
 */
export function renderComparison(comparison: Comparison): string {
  const rows = comparison.rows.map((row) => [
    row.label,
    row.baseline === null ? '' : formatValue(row.baseline, row.unit),
    row.latest === null ? '' : formatValue(row.latest, row.unit),
    formatChange(row),
    STATUS_TEXT[row.status],
    row.id,
  ]);
  const table = renderPlainTable(
    ['measurement', 'baseline', 'latest', 'change', 'status', 'id'],
    rows,
  );
  const count = (status: ComparisonStatus): number =>
    comparison.rows.filter((row) => row.status === status).length;
  const compared = comparison.rows.length - count('new');
  const limit = `${Math.round(comparison.tolerance * 1000) / 10} %`;
  const summary = comparison.failed
    ? `FAILED: ${count('worse')} of ${compared} compared metrics more than ${limit} worse, ${count('missing')} missing`
    : compared === 1
      ? `ok: the 1 compared metric is within ${limit} of the baseline or better`
      : `ok: all ${compared} compared metrics within ${limit} of the baseline or better`;
  return `${table}\n${summary}\n`;
}

/**
 * A new baseline from a full run: its start time and environment, and only
 * the metrics with `compared: true`.
 * @param source the results file the baseline comes from, relative to bench/
 *   (e.g. `results/2026-11-29T221503Z.json`).
 * @throws Error for a smoke run (N = 10, one round: not a baseline) or a run
 *   without compared metrics (the check would pass vacuously).
 */
export function takeBaseline(results: BenchResults, source: string): BenchBaseline {
  if (results.mode !== 'full') {
    throw new Error(
      `${source}: a baseline must come from a full run (pnpm bench), not a ${results.mode} run`,
    );
  }
  const metrics = results.metrics.filter((metric) => metric.compared);
  if (metrics.length === 0) {
    throw new Error(`${source}: the run has no compared metrics; nothing to take as a baseline`);
  }
  return {
    schema: 1,
    source,
    startedAt: results.startedAt,
    environment: results.environment,
    metrics,
  };
}
