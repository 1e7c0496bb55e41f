import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, expectTypeOf, it } from 'vitest';
import type { z } from 'zod';
import {
  formatValue,
  latestResults,
  meetsTarget,
  readBaseline,
  readResults,
  renderProcessTable,
  renderTable,
  resultsSchema,
  baselineSchema,
  resultsFileName,
  writeResults,
} from './results.js';
import type { BenchBaseline, BenchEnvironment, BenchResults, Metric, Target } from './types.js';

const ENVIRONMENT: BenchEnvironment = {
  kernel: '6.8.0-49-generic',
  lvm2: '  LVM version:     2.03.16(2) (2022-05-18)',
  cpuModel: 'AMD EPYC 7B13',
  cpus: 4,
  memoryBytes: 8 * 1024 ** 3,
  vm: true,
  emulated: true,
  node: 'v20.19.0',
  commit: '788b824',
  fio: 'fio-3.36',
};

const RSS: Metric = {
  id: 'footprint.driver.rss',
  group: 'footprint',
  label: 'driver RSS, idle',
  value: 61.23,
  unit: 'MiB',
  better: 'lower',
  compared: true,
};

const LIST_RATIO: Metric = {
  id: 'listing.n1000.list-volumes.ratio',
  group: 'listing',
  label: 'ListVolumes / bare lvs, 1000 volumes',
  value: 1.234,
  unit: 'ratio',
  better: 'lower',
  target: { op: '<=', value: 1.3 },
  compared: true,
  note: '812 ms vs 658 ms',
};

const CREATE_P50: Metric = {
  id: 'create-delete.n100.create.ms',
  group: 'create-delete',
  label: 'CreateVolume p50, 100 volumes',
  value: 1234.4,
  unit: 'ms',
  better: 'lower',
  compared: false,
};

const RESULTS: BenchResults = {
  schema: 1,
  startedAt: '2026-11-29T22:15:03.456Z',
  durationMs: 723_400,
  mode: 'full',
  environment: ENVIRONMENT,
  // Deliberately out of GROUPS order: the table sorts by group, keeps run order within one.
  metrics: [
    RSS,
    LIST_RATIO,
    CREATE_P50,
    {
      id: 'create-delete.n100.total.ms',
      group: 'create-delete',
      label: 'create + delete, 100 volumes',
      value: 12_345,
      unit: 'ms',
      better: 'lower',
      compared: false,
    },
    {
      id: 'datapath.randread.ratio',
      group: 'datapath',
      label: 'random read / bare LV',
      value: 0.95,
      unit: 'ratio',
      better: 'higher',
      target: { op: '>=', value: 0.97 },
      compared: true,
    },
    {
      id: 'datapath.seqwrite.mibs',
      group: 'datapath',
      label: 'sequential write',
      value: 512,
      unit: 'MiB/s',
      better: 'higher',
      compared: false,
    },
    {
      id: 'footprint.idle.lvm-per-min',
      group: 'footprint',
      label: 'lvm processes per minute, idle',
      value: 0,
      unit: 'per-min',
      better: 'lower',
      target: { op: '<=', value: 0 },
      compared: true,
    },
    {
      id: 'burst.n50.processes',
      group: 'burst',
      label: 'lvm processes, burst of 50',
      value: 57,
      unit: 'count',
      better: 'lower',
      compared: true,
    },
  ],
};

const BASELINE: BenchBaseline = {
  schema: 1,
  source: 'results/2026-11-29T221503Z.json',
  startedAt: RESULTS.startedAt,
  environment: ENVIRONMENT,
  metrics: RESULTS.metrics.filter((m) => m.compared),
};

/** T without readonly anywhere: zod infers mutable types. */
type DeepMutable<T> = T extends readonly (infer E)[]
  ? DeepMutable<E>[]
  : T extends object
    ? { -readonly [K in keyof T]: DeepMutable<T[K]> }
    : T;

describe('schemas', () => {
  it('mirror types.ts exactly (checked by tsc)', () => {
    expectTypeOf<z.infer<typeof resultsSchema>>().toEqualTypeOf<DeepMutable<BenchResults>>();
    expectTypeOf<z.infer<typeof baselineSchema>>().toEqualTypeOf<DeepMutable<BenchBaseline>>();
  });
});

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lvstamp-bench-results-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Writes `value` (JSON text as is, anything else stringified) to dir/<name>. */
async function writeRaw(value: unknown, name = 'run.json'): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, typeof value === 'string' ? value : JSON.stringify(value));
  return path;
}

/** RESULTS with `patch` applied to its first metric. */
function withMetric(patch: Record<string, unknown>): unknown {
  const [first, ...rest] = RESULTS.metrics;
  return { ...RESULTS, metrics: [{ ...first, ...patch }, ...rest] };
}

describe('readResults', () => {
  it('accepts a valid run and returns it unchanged', async () => {
    const path = await writeRaw(RESULTS);
    await expect(readResults(path)).resolves.toEqual(RESULTS);
  });

  it.each<[string, unknown, string]>([
    [
      'an unknown top-level key',
      { ...RESULTS, extra: 1 },
      '(top level): Unrecognized key: "extra"',
    ],
    [
      'an unknown metric key',
      withMetric({ colour: 'red' }),
      'metrics.0: Unrecognized key: "colour"',
    ],
    [
      'an unknown environment key',
      { ...RESULTS, environment: { ...ENVIRONMENT, gpu: 'none' } },
      'environment: Unrecognized key: "gpu"',
    ],
    [
      'a string value',
      withMetric({ value: '61.2' }),
      'metrics.0.value: Invalid input: expected number, received string',
    ],
    ['an unknown unit', withMetric({ unit: 'GiB' }), 'metrics.0.unit: Invalid option'],
    ['an unknown group', withMetric({ group: 'misc' }), 'metrics.0.group: Invalid option'],
    ['schema 2', { ...RESULTS, schema: 2 }, 'schema: Invalid input: expected 1'],
    [
      'a local start time',
      { ...RESULTS, startedAt: '2026-11-29 22:15' },
      'startedAt: Invalid ISO datetime',
    ],
    ['a missing field', { ...RESULTS, mode: undefined }, 'mode: Invalid option'],
    [
      'a null target',
      withMetric({ target: null }),
      'metrics.0.target: Invalid input: expected object, received null',
    ],
    [
      'a repeated metric id',
      { ...RESULTS, metrics: [RESULTS.metrics[0], RESULTS.metrics[0]] },
      'metrics.1.id: duplicate metric id "footprint.driver.rss"',
    ],
  ])('rejects %s with one line naming the file', async (_what, value, problem) => {
    const path = await writeRaw(value);
    const error = await readResults(path).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(Error);
    const message = (error as Error).message;
    expect(message.startsWith(`${path}: ${problem}`)).toBe(true);
    expect(message).not.toContain('\n');
  });

  it('accepts the groups that ran and the failures, and files that predate them', async () => {
    const recorded: BenchResults = {
      ...RESULTS,
      groups: ['listing', 'burst'],
      failures: ['burst: lvcreate failed'],
    };
    await expect(readResults(await writeRaw(recorded))).resolves.toEqual(recorded);
    await expect(readResults(await writeRaw(RESULTS, 'old.json'))).resolves.not.toHaveProperty(
      'groups',
    );
  });

  it("accepts group peer's lvmd version, unknown (null) or absent", async () => {
    for (const lvmd of ['lvmd version v0.41.0', null]) {
      const recorded: BenchResults = { ...RESULTS, environment: { ...RESULTS.environment, lvmd } };
      await expect(readResults(await writeRaw(recorded, `lvmd-${lvmd}.json`))).resolves.toEqual(
        recorded,
      );
    }
  });

  it.each<[string, unknown, string]>([
    ['an unknown group', { ...RESULTS, groups: ['misc'] }, 'groups.0: Invalid option'],
    ['a null groups', { ...RESULTS, groups: null }, 'groups: Invalid input'],
    ['an empty failure line', { ...RESULTS, failures: [''] }, 'failures.0: Too small'],
  ])('rejects %s', async (_what, value, problem) => {
    const path = await writeRaw(value);
    await expect(readResults(path)).rejects.toThrow(`${path}: ${problem}`);
  });

  it('rejects a value that is not finite (JSON 1e999 parses as Infinity)', async () => {
    const path = await writeRaw(JSON.stringify(RESULTS).replace('"value":61.23', '"value":1e999'));
    await expect(readResults(path)).rejects.toThrow(`${path}: metrics.0.value: Invalid input`);
  });

  it('names a missing file', async () => {
    const path = join(dir, 'nope.json');
    await expect(readResults(path)).rejects.toThrow(
      `${path}: no such file (expected a benchmark results file)`,
    );
  });

  it('names a file that is not JSON', async () => {
    const path = await writeRaw('{ "schema": 1,');
    await expect(readResults(path)).rejects.toThrow(new RegExp(`^${path}: not valid JSON: `));
  });
});

describe('readBaseline', () => {
  it('accepts a valid baseline', async () => {
    const path = await writeRaw(BASELINE, 'baseline.json');
    await expect(readBaseline(path)).resolves.toEqual(BASELINE);
  });

  it('rejects a run file given as a baseline', async () => {
    const path = await writeRaw(RESULTS, 'baseline.json');
    await expect(readBaseline(path)).rejects.toThrow(
      `${path}: source: Invalid input: expected string, received undefined`,
    );
  });

  it('rejects an uncompared metric', async () => {
    const metrics: Metric[] = [...BASELINE.metrics, { ...CREATE_P50, compared: false }];
    const path = await writeRaw({ ...BASELINE, metrics }, 'baseline.json');
    await expect(readBaseline(path)).rejects.toThrow(
      `${path}: metrics.5.compared: baseline metric "create-delete.n100.create.ms" must have compared: true`,
    );
  });

  it('rejects an empty baseline (it would pass every run)', async () => {
    const path = await writeRaw({ ...BASELINE, metrics: [] }, 'baseline.json');
    await expect(readBaseline(path)).rejects.toThrow(
      `${path}: metrics: a baseline needs at least one metric`,
    );
  });

  it('names a missing baseline', async () => {
    const path = join(dir, 'baseline.json');
    await expect(readBaseline(path)).rejects.toThrow(
      `${path}: no such file (expected a benchmark baseline)`,
    );
  });
});

describe('resultsFileName', () => {
  const startedAt = new Date('2026-11-29T22:15:03.456Z');

  it('is the UTC start to the second, without colons', () => {
    expect(resultsFileName(startedAt, 'full')).toBe('2026-11-29T221503Z.json');
    expect(resultsFileName(startedAt, 'smoke')).toBe('2026-11-29T221503Z-smoke.json');
  });

  it('uses UTC whatever the offset the date was written with', () => {
    expect(resultsFileName(new Date('2026-11-30T00:15:03+02:00'), 'full')).toBe(
      '2026-11-29T221503Z.json',
    );
  });
});

describe('writeResults', () => {
  it('writes pretty JSON named after the start time and mode, readable again', async () => {
    const path = await writeResults(join(dir, 'results'), RESULTS);
    expect(path).toBe(join(dir, 'results', '2026-11-29T221503Z.json'));
    const text = await readFile(path, 'utf8');
    expect(text).toBe(`${JSON.stringify(RESULTS, null, 2)}\n`);
    expect(text.split('\n')[1]).toBe('  "schema": 1,');
    await expect(readResults(path)).resolves.toEqual(RESULTS);
  });

  it('never overwrites an earlier run', async () => {
    await writeResults(dir, RESULTS);
    await expect(writeResults(dir, RESULTS)).rejects.toThrow(/EEXIST/);
  });

  it('refuses results that would not read back, writing nothing', async () => {
    const bad = withMetric({ value: Number.NaN }) as BenchResults;
    await expect(writeResults(dir, bad)).rejects.toThrow(
      'results to write: metrics.0.value: Invalid input: expected number, received NaN',
    );
    await expect(latestResults(dir)).resolves.toBeNull();
  });
});

describe('latestResults', () => {
  it('picks the newest file of the mode by name and ignores other files', async () => {
    for (const name of [
      '2026-11-28T090000Z.json',
      '2026-11-29T221503Z.json',
      '2026-11-29T080000Z.json',
      '2026-11-30T010000Z-smoke.json',
      '2026-11-29T230000Z-smoke.json',
      'baseline.json',
      'zzz.json',
      '2026-12-01T000000Z.json.tmp',
      '2026-12-01T00:00:00Z.json',
    ]) {
      await writeFile(join(dir, name), '{}');
    }
    await expect(latestResults(dir)).resolves.toBe(join(dir, '2026-11-29T221503Z.json'));
    await expect(latestResults(dir, 'full')).resolves.toBe(join(dir, '2026-11-29T221503Z.json'));
    await expect(latestResults(dir, 'smoke')).resolves.toBe(
      join(dir, '2026-11-30T010000Z-smoke.json'),
    );
  });

  it('is null when there is no run of the mode', async () => {
    await writeFile(join(dir, '2026-11-29T221503Z-smoke.json'), '{}');
    await expect(latestResults(dir, 'full')).resolves.toBeNull();
  });

  it('is null when the directory does not exist yet', async () => {
    await expect(latestResults(join(dir, 'results'))).resolves.toBeNull();
  });

  it('fails when the path is not a directory', async () => {
    const file = await writeRaw(RESULTS);
    await expect(latestResults(file)).rejects.toThrow(/ENOTDIR/);
  });
});

describe('meetsTarget', () => {
  it('is null without a target', () => {
    expect(meetsTarget(RSS)).toBeNull();
  });

  it.each<[Target, number, boolean]>([
    [{ op: '<=', value: 1.3 }, 1.3, true],
    [{ op: '<=', value: 1.3 }, 1.31, false],
    [{ op: '>=', value: 0.97 }, 0.97, true],
    [{ op: '>=', value: 0.97 }, 0.969, false],
    [{ op: '<=', value: 0 }, 0, true],
  ])('%o with value %d: %s', (target, value, ok) => {
    expect(meetsTarget({ ...LIST_RATIO, target, value })).toBe(ok);
  });
});

describe('formatValue', () => {
  it.each<[number, Metric['unit'], string]>([
    [1.234, 'ratio', '1.23×'],
    [1, 'ratio', '1.00×'],
    [1234.4, 'ms', '1234 ms'],
    [10_000, 'ms', '10000 ms'],
    [10_001, 'ms', '10.0 s'],
    [12_345, 'ms', '12.3 s'],
    [61.23, 'MiB', '61.2 MiB'],
    [512, 'MiB/s', '512.0 MiB/s'],
    [57.4, 'count', '57'],
    [-0.2, 'count', '0'],
    [0, 'per-min', '0/min'],
    [2.25, 'per-min', '2.3/min'],
  ])('%d %s is %s', (value, unit, text) => {
    expect(formatValue(value, unit)).toBe(text);
  });
});

describe('renderTable', () => {
  it('lists the metrics by group with formatted values, targets and the environment', () => {
    expect(renderTable(RESULTS)).toBe(
      [
        'GROUP          MEASUREMENT                           VALUE        TARGET  OK      NOTE',
        'create-delete  CreateVolume p50, 100 volumes         1234 ms',
        'create-delete  create + delete, 100 volumes          12.3 s',
        'listing        ListVolumes / bare lvs, 1000 volumes  1.23×        ≤ 1.3   yes     812 ms vs 658 ms',
        'burst          lvm processes, burst of 50            57',
        'datapath       random read / bare LV                 0.95×        ≥ 0.97  MISSED',
        'datapath       sequential write                      512.0 MiB/s',
        'footprint      driver RSS, idle                      61.2 MiB',
        'footprint      lvm processes per minute, idle        0/min        ≤ 0     yes',
        '',
        'full run, 12 min 3 s; kernel 6.8.0-49-generic, lvm2 2.03.16(2) (2022-05-18), AMD EPYC 7B13 × 4, VM, emulated CPU, node v20.19.0',
        '',
      ].join('\n'),
    );
  });

  it('says host for a run outside the VM and a short run in seconds', () => {
    const text = renderTable({
      ...RESULTS,
      mode: 'smoke',
      durationMs: 45_230,
      environment: { ...ENVIRONMENT, vm: false, emulated: false, lvm2: '2.03.16(2)' },
      metrics: [],
    });
    expect(text.split('\n').at(-2)).toBe(
      'smoke run, 45.2 s; kernel 6.8.0-49-generic, lvm2 2.03.16(2), AMD EPYC 7B13 × 4, host, node v20.19.0',
    );
  });
});

describe('renderProcessTable', () => {
  const rpcMetric = (id: string, value: number, note?: string): Metric => ({
    id,
    group: 'create-delete',
    label: id,
    value,
    unit: id.endsWith('.ms') ? 'ms' : 'count',
    better: 'lower',
    compared: !id.endsWith('.ms'),
    ...(note === undefined ? {} : { note }),
  });

  it('is one row per RPC in run order with counts, median time and the programs', () => {
    const metrics = [
      CREATE_P50,
      rpcMetric('rpc.CreateVolume.lvm-processes', 6, 'vgs vgs lvs lvcreate lvs lvrename'),
      rpcMetric('rpc.CreateVolume.other-processes', 0),
      rpcMetric('rpc.CreateVolume.ms', 4321.4),
      rpcMetric('rpc.NodeStageVolume.lvm-processes', 2, 'vgs lvs dmsetup blkid mkfs.ext4 mount'),
      rpcMetric('rpc.NodeStageVolume.other-processes', 4),
      rpcMetric('rpc.NodeStageVolume.ms', 12_345),
    ];
    expect(renderProcessTable(metrics)).toBe(
      [
        'RPC              LVM  OTHER  MEDIAN   PROGRAMS',
        'CreateVolume     6    0      4321 ms  vgs vgs lvs lvcreate lvs lvrename',
        'NodeStageVolume  2    4      12.3 s   vgs lvs dmsetup blkid mkfs.ext4 mount',
        '',
      ].join('\n'),
    );
  });

  it('is empty without per-RPC metrics, and renderTable then prints no process table', () => {
    expect(renderProcessTable(RESULTS.metrics)).toBe('');
    expect(renderTable(RESULTS)).not.toContain('processes per RPC');
  });

  it('is printed under the main table by renderTable', () => {
    const text = renderTable({
      ...RESULTS,
      metrics: [rpcMetric('rpc.DeleteVolume.lvm-processes', 3, 'vgs lvs lvremove')],
    });
    expect(text).toContain(
      'processes per RPC (one call each):\nRPC           LVM  OTHER  MEDIAN  PROGRAMS\nDeleteVolume  3',
    );
  });
});
