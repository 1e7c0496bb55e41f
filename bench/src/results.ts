/**
 * The results side of the benchmark: validating, reading and writing
 * bench/results/<date>.json and bench/baseline.json, and rendering a run as
 * a text table. The shapes are those of types.ts (schema version 1).
 */
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { messageOf, oneLine, renderTable as renderRows } from '@lvstamp/app-kit';
import { z } from 'zod';
import {
  GROUPS,
  type BenchBaseline,
  type BenchEnvironment,
  type BenchResults,
  type Metric,
  type Unit,
} from './types.js';

// z.number() rejects NaN and ±Infinity in zod 4, so every number below is finite.

const targetSchema = z.strictObject({
  op: z.enum(['<=', '>=']),
  value: z.number(),
});

const metricSchema = z.strictObject({
  id: z.string().min(1),
  group: z.enum(GROUPS),
  label: z.string().min(1),
  value: z.number(),
  unit: z.enum(['ratio', 'ms', 'MiB', 'count', 'MiB/s', 'per-min']),
  better: z.enum(['lower', 'higher']),
  // exactOptional: absent is allowed, `undefined` is not (exactOptionalPropertyTypes).
  target: targetSchema.exactOptional(),
  compared: z.boolean(),
  note: z.string().exactOptional(),
});

const environmentSchema = z.strictObject({
  kernel: z.string(),
  lvm2: z.string(),
  cpuModel: z.string(),
  cpus: z.number().int().nonnegative(),
  memoryBytes: z.number().int().nonnegative(),
  vm: z.boolean(),
  emulated: z.boolean(),
  node: z.string(),
  commit: z.string().nullable(),
  fio: z.string().nullable(),
  lvmd: z.string().nullable().exactOptional(),
});

/** Metric ids are the key that bench:check matches on, so a run may not repeat one. */
const metricsSchema = z.array(metricSchema).superRefine((metrics, ctx) => {
  const seen = new Set<string>();
  metrics.forEach((metric, index) => {
    if (seen.has(metric.id)) {
      ctx.addIssue({
        code: 'custom',
        path: [index, 'id'],
        message: `duplicate metric id "${metric.id}"`,
      });
    }
    seen.add(metric.id);
  });
});

/** Zod schema of a run file (bench/results/<date>.json): BenchResults, strict, numbers finite. */
export const resultsSchema = z.strictObject({
  schema: z.literal(1),
  startedAt: z.iso.datetime(),
  durationMs: z.number().nonnegative(),
  mode: z.enum(['full', 'smoke']),
  environment: environmentSchema,
  metrics: metricsSchema,
  groups: z.array(z.enum(GROUPS)).exactOptional(),
  failures: z.array(z.string().min(1)).exactOptional(),
});

/**
 * Zod schema of bench/baseline.json: BenchBaseline, strict, numbers finite,
 * at least one metric (an empty baseline would pass every check), and every
 * metric `compared: true` (the baseline holds nothing else).
 */
export const baselineSchema = z.strictObject({
  schema: z.literal(1),
  source: z.string().min(1),
  startedAt: z.iso.datetime(),
  environment: environmentSchema,
  metrics: metricsSchema
    .min(1, 'a baseline needs at least one metric')
    .superRefine((metrics, ctx) => {
      metrics.forEach((metric, index) => {
        if (!metric.compared) {
          ctx.addIssue({
            code: 'custom',
            path: [index, 'compared'],
            message: `baseline metric "${metric.id}" must have compared: true`,
          });
        }
      });
    }),
});

/** One line naming the file and the first problem zod found. */
function firstIssue(path: string, error: z.ZodError): string {
  const [issue] = error.issues;
  if (issue === undefined) return `${path}: does not match the schema`;
  const where = issue.path.map(String).join('.');
  return `${path}: ${where === '' ? '(top level)' : where}: ${issue.message}`;
}

async function readJson<T>(path: string, schema: z.ZodType<T>, what: string): Promise<T> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if (isErrnoException(error) && error.code === 'ENOENT') {
      throw new Error(`${path}: no such file (expected ${what})`);
    }
    throw new Error(`${path}: cannot read: ${oneLine(messageOf(error))}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new Error(`${path}: not valid JSON: ${oneLine(messageOf(error))}`);
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new Error(firstIssue(path, parsed.error));
  return parsed.data;
}

/**
 * Reads and validates a run file (bench/results/<date>.json).
 * @throws Error with one line `<path>: <problem>` when the file is missing,
 *   unreadable, not JSON, or does not match {@link resultsSchema}.
 */
export function readResults(path: string): Promise<BenchResults> {
  return readJson(path, resultsSchema, 'a benchmark results file');
}

/**
 * Reads and validates bench/baseline.json.
 * @throws Error with one line `<path>: <problem>` when the file is missing,
 *   unreadable, not JSON, or does not match {@link baselineSchema}.
 */
export function readBaseline(path: string): Promise<BenchBaseline> {
  return readJson(path, baselineSchema, 'a benchmark baseline');
}

/**
 * The file name of a run: the UTC start time to the second without colons or
 * milliseconds, `-smoke` for smoke runs, e.g. `2026-11-29T221503Z.json` and
 * `2026-11-29T221503Z-smoke.json`. Names of one mode sort by time.
 * @throws RangeError when `startedAt` is an invalid Date.
 */
export function resultsFileName(startedAt: Date, mode: BenchResults['mode']): string {
  // 2026-11-29T22:15:03.123Z -> 2026-11-29T221503Z
  const stamp = `${startedAt.toISOString().slice(0, 19).replaceAll(':', '')}Z`;
  return `${stamp}${mode === 'smoke' ? '-smoke' : ''}.json`;
}

const RESULTS_FILE = /^\d{4}-\d{2}-\d{2}T\d{6}Z(-smoke)?\.json$/;

/**
 * Writes a run as pretty JSON (2 spaces, trailing newline) to
 * `<dir>/<resultsFileName(startedAt, mode)>`, creating `dir` when needed.
 * Never overwrites: a second run started in the same second fails.
 * @returns the path written.
 * @throws Error when `results` does not match {@link resultsSchema} (nothing
 *   is written) or the file already exists (EEXIST).
 */
export async function writeResults(dir: string, results: BenchResults): Promise<string> {
  const parsed = resultsSchema.safeParse(results);
  if (!parsed.success) throw new Error(firstIssue('results to write', parsed.error));
  const path = join(dir, resultsFileName(new Date(results.startedAt), results.mode));
  await mkdir(dir, { recursive: true });
  await writeFile(path, `${JSON.stringify(results, null, 2)}\n`, { flag: 'wx' });
  return path;
}

/**
 * The path of the newest run file of `mode` in `dir`, chosen by name (names
 * sort by start time); files not named by {@link resultsFileName} are ignored.
 * @returns null when there is none, including when `dir` does not exist yet
 *   (git keeps no empty bench/results/).
 * @throws the fs error when `dir` exists but cannot be listed.
 */
export async function latestResults(
  dir: string,
  mode: BenchResults['mode'] = 'full',
): Promise<string | null> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if (isErrnoException(error) && error.code === 'ENOENT') return null;
    throw error;
  }
  const latest = names
    .filter((name) => {
      const match = RESULTS_FILE.exec(name);
      return match !== null && (match[1] === undefined ? 'full' : 'smoke') === mode;
    })
    .sort()
    .at(-1);
  return latest === undefined ? null : join(dir, latest);
}

/**
 * Whether a metric meets the issue's target: `value <= target` or
 * `value >= target`, in the metric's unit.
 * @returns null when the metric has no target.
 */
export function meetsTarget(metric: Metric): boolean | null {
  if (metric.target === undefined) return null;
  return metric.target.op === '<='
    ? metric.value <= metric.target.value
    : metric.value >= metric.target.value;
}

/**
 * A value with its unit, for tables: ratio `1.23×`; ms `1234 ms`, or `12.3 s`
 * above 10 s; MiB `61.2 MiB`; MiB/s `512.0 MiB/s`; count `42` (rounded);
 * per-min `0/min` (one decimal when not whole).
 */
export function formatValue(value: number, unit: Unit): string {
  switch (unit) {
    case 'ratio':
      return `${value.toFixed(2)}×`;
    case 'ms':
      return formatMs(value);
    case 'MiB':
      return `${value.toFixed(1)} MiB`;
    case 'MiB/s':
      return `${value.toFixed(1)} MiB/s`;
    case 'count':
      return String(Math.round(value) + 0); // + 0 turns -0 into 0
    case 'per-min':
      return `${Number.isInteger(value) ? String(value + 0) : value.toFixed(1)}/min`;
  }
}

/** Milliseconds as `1234 ms`, or `12.3 s` above 10 s. */
function formatMs(ms: number): string {
  return ms > 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms) + 0} ms`;
}

/** A run's wall time: `45.2 s`, `12 min 3 s`, `1 h 2 min`. */
function formatDuration(ms: number): string {
  const seconds = Math.round(ms / 1000);
  if (seconds < 60) return formatMs(ms);
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
  return `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} min`;
}

/** `kernel …, lvm2 …, <cpu> × <n>, <vm>, node …` for the line under a table. */
export function describeEnvironment(env: BenchEnvironment): string {
  // `lvm version` prints "  LVM version:     2.03.16(2) (2022-05-18)".
  const lvm2 = env.lvm2
    .replace(/^\s*LVM version:\s*/, '')
    .replace(/\s+/g, ' ')
    .trim();
  const machine = `${env.vm ? 'VM' : 'host'}${env.emulated ? ', emulated CPU' : ''}`;
  return [
    `kernel ${env.kernel}`,
    `lvm2 ${lvm2}`,
    `${env.cpuModel} × ${env.cpus}`,
    machine,
    `node ${env.node}`,
  ].join(', ');
}

/**
 * A run as text: one row per metric, grouped in GROUPS order (run order
 * within a group), columns GROUP, MEASUREMENT, VALUE (see
 * {@link formatValue}), TARGET (`≤ 1.3`, `≥ 0.97` or empty), OK (`yes`,
 * `MISSED`, or empty without a target), NOTE; then one line with the mode,
 * the wall time and the environment. Ends with a newline.
 */
export function renderTable(results: BenchResults): string {
  const rows = GROUPS.flatMap((group) =>
    results.metrics
      .filter((metric) => metric.group === group)
      .map((metric) => {
        const ok = meetsTarget(metric);
        return [
          metric.group,
          metric.label,
          formatValue(metric.value, metric.unit),
          metric.target === undefined
            ? ''
            : `${metric.target.op === '<=' ? '≤' : '≥'} ${metric.target.value}`,
          ok === null ? '' : ok ? 'yes' : 'MISSED',
          metric.note ?? '',
        ];
      }),
  );
  const table = renderRows(['group', 'measurement', 'value', 'target', 'ok', 'note'], rows);
  const run = `${results.mode} run, ${formatDuration(results.durationMs)}`;
  const processes = renderProcessTable(results.metrics);
  const perRpc = processes === '' ? '' : `\nprocesses per RPC (one call each):\n${processes}`;
  return `${table}${perRpc}\n${run}; ${describeEnvironment(results.environment)}\n`;
}

/** `rpc.<Rpc>.<kind>` metric ids of the per-RPC process counts (groups/rpc-processes.ts). */
const RPC_METRIC = /^rpc\.([A-Za-z]+)\.(lvm-processes|other-processes|ms)$/;

/**
 * The per-RPC process counts of a run as a table, in run order: RPC, LVM
 * (lvm processes), OTHER (every other program), MEDIAN (wall time), PROGRAMS
 * (the sequence, from the lvm metric's note). Empty when the run has none.
 */
export function renderProcessTable(metrics: readonly Metric[]): string {
  const byRpc = new Map<
    string,
    Partial<Record<'lvm-processes' | 'other-processes' | 'ms', Metric>>
  >();
  for (const metric of metrics) {
    const match = RPC_METRIC.exec(metric.id);
    if (match === null) continue;
    const [, rpc = '', kind = 'ms'] = match;
    const entry = byRpc.get(rpc) ?? {};
    entry[kind as 'lvm-processes' | 'other-processes' | 'ms'] = metric;
    byRpc.set(rpc, entry);
  }
  if (byRpc.size === 0) return '';
  const rows = [...byRpc].map(([rpc, m]) => [
    rpc,
    m['lvm-processes'] === undefined ? '' : String(m['lvm-processes'].value),
    m['other-processes'] === undefined ? '' : String(m['other-processes'].value),
    m.ms === undefined ? '' : formatValue(m.ms.value, 'ms'),
    m['lvm-processes']?.note ?? '',
  ]);
  return renderRows(['rpc', 'lvm', 'other', 'median', 'programs'], rows);
}

function isErrnoException(error: unknown): error is NodeJS.ErrnoException {
  return error instanceof Error && 'code' in error;
}
