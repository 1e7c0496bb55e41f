import { describe, expect, it } from 'vitest';
import { compareWithBaseline, renderComparison, takeBaseline } from './check.js';
import type { BenchBaseline, BenchEnvironment, BenchResults, Metric } from './types.js';

const ENVIRONMENT: BenchEnvironment = {
  kernel: '6.8.0-49-generic',
  lvm2: 'LVM version: 2.03.16(2) (2022-05-18)',
  cpuModel: 'AMD EPYC 7B13',
  cpus: 4,
  memoryBytes: 8 * 1024 ** 3,
  vm: true,
  emulated: false,
  node: 'v20.19.0',
  commit: null,
  fio: null,
};

function metric(
  id: string,
  value: number,
  better: Metric['better'] = 'lower',
  extra: Partial<Metric> = {},
): Metric {
  return {
    id,
    group: 'listing',
    label: id,
    value,
    unit: 'ratio',
    better,
    compared: true,
    ...extra,
  };
}

function run(metrics: Metric[], mode: BenchResults['mode'] = 'full'): BenchResults {
  return {
    schema: 1,
    startedAt: '2026-11-29T22:15:03.000Z',
    durationMs: 600_000,
    mode,
    environment: ENVIRONMENT,
    metrics,
  };
}

function baseline(metrics: Metric[]): BenchBaseline {
  return {
    schema: 1,
    source: 'results/2026-11-28T090000Z.json',
    startedAt: '2026-11-28T09:00:00.000Z',
    environment: ENVIRONMENT,
    metrics,
  };
}

/** The status of one metric moving from `before` to `after`. */
function statusOf(
  before: number,
  after: number,
  better: Metric['better'] = 'lower',
  tolerance?: number,
): string {
  const result = compareWithBaseline(
    run([metric('m', after, better)]),
    baseline([metric('m', before, better)]),
    tolerance,
  );
  const statuses = result.rows.map((row) => row.status);
  expect(statuses).toHaveLength(1);
  return statuses.join();
}

describe('compareWithBaseline, lower is better', () => {
  it.each<[number, number, string]>([
    [1.0, 1.0, 'ok'],
    [1.0, 1.1, 'ok'],
    [1.0, 1.2, 'ok'], // exactly 20 % worse
    [1.0, 1.201, 'worse'], // 20.1 % worse
    [0.7, 0.84, 'ok'], // exactly 20 %, though 0.7 × 1.2 is 0.8399999999999999
    [0.7, 0.8407, 'worse'], // 20.1 %
    [1.05, 1.26, 'ok'],
    [1.0, 0.8, 'ok'], // exactly 20 % better
    [1.0, 0.79, 'better'],
  ])('%d -> %d is %s', (before, after, status) => {
    expect(statusOf(before, after)).toBe(status);
  });
});

describe('compareWithBaseline, higher is better', () => {
  it.each<[number, number, string]>([
    [1.0, 1.0, 'ok'],
    [1.0, 0.8, 'ok'], // exactly 20 % worse
    [1.0, 0.799, 'worse'], // 20.1 % worse
    [0.97, 0.776, 'ok'],
    [0.97, 0.77503, 'worse'],
    [1.0, 1.2, 'ok'],
    [1.0, 1.25, 'better'],
  ])('%d -> %d is %s', (before, after, status) => {
    expect(statusOf(before, after, 'higher')).toBe(status);
  });
});

describe('compareWithBaseline, zero baseline', () => {
  it('stays ok at 0 and is worse at anything above 0 when lower is better', () => {
    expect(statusOf(0, 0)).toBe('ok');
    expect(statusOf(0, 1)).toBe('worse');
    expect(statusOf(0, 0.01)).toBe('worse');
  });

  it('reports the change as 0 when both are 0 and as unknown otherwise', () => {
    const result = compareWithBaseline(
      run([metric('idle', 0), metric('growth', 3)]),
      baseline([metric('idle', 0), metric('growth', 0)]),
    );
    expect(result.rows.map((r) => [r.id, r.change, r.status])).toEqual([
      ['idle', 0, 'ok'],
      ['growth', null, 'worse'],
    ]);
    expect(result.failed).toBe(true);
  });
});

describe('compareWithBaseline', () => {
  it('honours another tolerance', () => {
    expect(statusOf(1.0, 1.1, 'lower', 0.05)).toBe('worse');
    expect(statusOf(1.0, 1.05, 'lower', 0.05)).toBe('ok');
    expect(statusOf(1.0, 1.0, 'lower', 0)).toBe('ok');
    expect(statusOf(1.0, 1.001, 'lower', 0)).toBe('worse');
  });

  it.each([-0.1, 1, Number.NaN, Number.POSITIVE_INFINITY])('refuses tolerance %d', (tolerance) => {
    expect(() => compareWithBaseline(run([]), baseline([]), tolerance)).toThrow(RangeError);
  });

  it('compares every baseline metric, fails on a missing one, lists new ones', () => {
    const result = compareWithBaseline(
      run([
        metric('listing.ratio', 1.1),
        metric('burst.processes', 80, 'lower', { unit: 'count', label: 'lvm processes, burst' }),
        metric('datapath.ratio', 1.3, 'higher'),
        metric('footprint.new', 2, 'lower', { unit: 'count' }),
        metric('create.ms', 1234, 'lower', { unit: 'ms', compared: false }),
      ]),
      baseline([
        metric('listing.ratio', 1.0),
        metric('burst.processes', 50, 'lower', { unit: 'count', label: 'lvm processes, burst' }),
        metric('datapath.ratio', 1.0, 'higher'),
        metric('footprint.rss.ratio', 1.0),
      ]),
    );
    expect(result.rows).toEqual([
      {
        id: 'listing.ratio',
        label: 'listing.ratio',
        unit: 'ratio',
        better: 'lower',
        baseline: 1.0,
        latest: 1.1,
        change: expect.closeTo(0.1, 10) as unknown,
        status: 'ok',
      },
      {
        id: 'burst.processes',
        label: 'lvm processes, burst',
        unit: 'count',
        better: 'lower',
        baseline: 50,
        latest: 80,
        change: 0.6,
        status: 'worse',
      },
      {
        id: 'datapath.ratio',
        label: 'datapath.ratio',
        unit: 'ratio',
        better: 'higher',
        baseline: 1.0,
        latest: 1.3,
        change: expect.closeTo(0.3, 10) as unknown,
        status: 'better',
      },
      {
        id: 'footprint.rss.ratio',
        label: 'footprint.rss.ratio',
        unit: 'ratio',
        better: 'lower',
        baseline: 1.0,
        latest: null,
        change: null,
        status: 'missing',
      },
      {
        id: 'footprint.new',
        label: 'footprint.new',
        unit: 'count',
        better: 'lower',
        baseline: null,
        latest: 2,
        change: null,
        status: 'new',
      },
    ]);
    expect(result.failed).toBe(true);
    expect(result.tolerance).toBe(0.2);
  });

  it('fails on a missing metric alone', () => {
    const result = compareWithBaseline(run([]), baseline([metric('a', 1)]));
    expect(result.rows.map((r) => r.status)).toEqual(['missing']);
    expect(result.failed).toBe(true);
  });

  it('passes when everything is ok, better or new', () => {
    const result = compareWithBaseline(
      run([metric('a', 1.1), metric('b', 0.5), metric('c', 9)]),
      baseline([metric('a', 1), metric('b', 1)]),
    );
    expect(result.rows.map((r) => r.status)).toEqual(['ok', 'better', 'new']);
    expect(result.failed).toBe(false);
  });
});

describe('renderComparison', () => {
  it('shows formatted values, the change and a failing summary', () => {
    const result = compareWithBaseline(
      run([
        metric('listing.ratio', 1.1, 'lower', { label: 'ListVolumes / lvs' }),
        metric('burst.processes', 80, 'lower', { unit: 'count', label: 'lvm processes' }),
        metric('idle.per-min', 2, 'lower', { unit: 'per-min', label: 'idle lvm' }),
        metric('rss', 58, 'lower', { unit: 'MiB', label: 'RSS' }),
      ]),
      baseline([
        metric('listing.ratio', 1.0, 'lower', { label: 'ListVolumes / lvs' }),
        metric('burst.processes', 50, 'lower', { unit: 'count', label: 'lvm processes' }),
        metric('idle.per-min', 0, 'lower', { unit: 'per-min', label: 'idle lvm' }),
        metric('datapath.ratio', 0.98, 'higher', { label: 'random read' }),
        metric('rss', 61.2, 'lower', { unit: 'MiB', label: 'RSS' }),
      ]),
    );
    expect(renderComparison(result)).toBe(
      [
        'MEASUREMENT        BASELINE  LATEST    CHANGE   STATUS   ID',
        'ListVolumes / lvs  1.00×     1.10×     +10.0 %  ok       listing.ratio',
        'lvm processes      50        80        +60.0 %  WORSE    burst.processes',
        'idle lvm           0/min     2/min     from 0   WORSE    idle.per-min',
        'random read        0.98×                        MISSING  datapath.ratio',
        'RSS                61.2 MiB  58.0 MiB  -5.2 %   ok       rss',
        '',
        'FAILED: 2 of 5 compared metrics more than 20 % worse, 1 missing',
        '',
      ].join('\n'),
    );
  });

  it('says ok when nothing is worse or missing', () => {
    const result = compareWithBaseline(
      run([metric('a', 1), metric('b', 2)]),
      baseline([metric('a', 1)]),
      0.1,
    );
    expect(renderComparison(result)).toBe(
      [
        'MEASUREMENT  BASELINE  LATEST  CHANGE  STATUS  ID',
        'a            1.00×     1.00×   0.0 %   ok      a',
        'b                      2.00×           new     b',
        '',
        'ok: the 1 compared metric is within 10 % of the baseline or better',
        '',
      ].join('\n'),
    );
  });
});

describe('takeBaseline', () => {
  const ratio = metric('listing.ratio', 1.1);
  const createMs = metric('create.ms', 1234, 'lower', { unit: 'ms', compared: false });
  const idle = metric('idle.per-min', 0, 'lower', { unit: 'per-min' });
  const metrics = [ratio, createMs, idle];

  it('keeps the start, environment and compared metrics of a full run', () => {
    const results = run(metrics);
    expect(takeBaseline(results, 'results/2026-11-29T221503Z.json')).toEqual({
      schema: 1,
      source: 'results/2026-11-29T221503Z.json',
      startedAt: results.startedAt,
      environment: ENVIRONMENT,
      metrics: [ratio, idle],
    });
  });

  it('refuses a smoke run', () => {
    expect(() => takeBaseline(run(metrics, 'smoke'), 'results/x-smoke.json')).toThrow(
      'results/x-smoke.json: a baseline must come from a full run (pnpm bench), not a smoke run',
    );
  });

  it('refuses a run without compared metrics', () => {
    expect(() => takeBaseline(run([createMs]), 'results/x.json')).toThrow(
      'results/x.json: the run has no compared metrics',
    );
  });
});
