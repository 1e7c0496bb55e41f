import { describe, expect, it } from 'vitest';
import {
  compareWithBaseline,
  environmentWarning,
  parseGroups,
  parseTolerance,
  renderComparison,
  takeBaseline,
} from './check.js';
import {
  GROUPS,
  type BenchBaseline,
  type BenchEnvironment,
  type BenchResults,
  type Metric,
} from './types.js';

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
    expect(() => compareWithBaseline(run([]), baseline([metric('a', 1)]), tolerance)).toThrow(
      RangeError,
    );
  });

  it('refuses an empty baseline (it would pass every run)', () => {
    expect(() => compareWithBaseline(run([metric('a', 1)]), baseline([]))).toThrow(
      'the baseline (results/2026-11-28T090000Z.json) has no metrics; nothing to compare',
    );
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
        reason: 'exact',
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

/** The row of one metric moving from `before` to `after` with `extra` on both sides. */
function rowOf(before: number, after: number, extra: Partial<Metric>, tolerance?: number) {
  const result = compareWithBaseline(
    run([metric('m', after, extra.better ?? 'lower', extra)]),
    baseline([metric('m', before, extra.better ?? 'lower', extra)]),
    tolerance,
  );
  expect(result.rows).toHaveLength(1);
  return { ...result.rows[0], failed: result.failed };
}

describe('compareWithBaseline, counts and rates are exact', () => {
  it.each<[Metric['unit'], Metric['better'], number, number, string, string | undefined]>([
    ['count', 'lower', 50, 50, 'ok', undefined],
    ['count', 'lower', 50, 51, 'worse', 'exact'], // one more lvm process: 2 %, still a regression
    ['count', 'lower', 3, 4, 'worse', 'exact'],
    ['count', 'lower', 50, 49, 'better', undefined],
    ['per-min', 'lower', 0.5, 0.6, 'worse', 'exact'],
    ['per-min', 'lower', 0, 0, 'ok', undefined],
    ['count', 'higher', 10, 9, 'worse', 'exact'],
    ['ratio', 'lower', 1.0, 1.19, 'ok', undefined], // ratios keep the 20 % band
    ['MiB', 'lower', 60, 71, 'ok', undefined],
    ['MiB', 'lower', 60, 73, 'worse', 'tolerance'],
  ])('%s, %s better: %d -> %d is %s', (unit, better, before, after, status, reason) => {
    const row = rowOf(before, after, { unit, better });
    expect(row.status).toBe(status);
    expect(row.reason).toBe(reason);
    expect(row.failed).toBe(status === 'worse');
  });

  it('ignores the tolerance for counts', () => {
    expect(rowOf(10, 11, { unit: 'count' }, 0.5).status).toBe('worse');
  });
});

describe('compareWithBaseline, targets', () => {
  const atMost3 = { target: { op: '<=' as const, value: 3 } };
  const atLeast097 = { better: 'higher' as const, target: { op: '>=' as const, value: 0.97 } };

  it('is worse when a target met in the baseline is missed, even within 20 %', () => {
    const row = rowOf(2.94, 3.2, atMost3);
    expect(row).toMatchObject({
      status: 'worse',
      reason: 'target',
      target: { op: '<=', value: 3 },
    });
    expect(row.failed).toBe(true);
    expect(rowOf(0.98, 0.96, atLeast097)).toMatchObject({ status: 'worse', reason: 'target' });
  });

  it('is ok when the target stays met, or was already missed in the baseline', () => {
    expect(rowOf(2.94, 3, atMost3).status).toBe('ok'); // exactly at the target
    expect(rowOf(2.5, 2.9, atMost3).status).toBe('ok');
    expect(rowOf(3.1, 3.3, atMost3).status).toBe('ok'); // missed before, within 20 %
    expect(rowOf(3.1, 3.3, atMost3).reason).toBeUndefined();
  });

  it('judges both values by the baseline target', () => {
    const result = compareWithBaseline(
      run([metric('m', 3.2, 'lower', { target: { op: '<=', value: 4 } })]),
      baseline([metric('m', 2.94, 'lower', atMost3)]),
    );
    expect(result.rows[0]?.status).toBe('worse');
  });

  it('reports a tolerance breach as such even when the target is missed too', () => {
    expect(rowOf(2.5, 3.5, atMost3).reason).toBe('tolerance');
  });
});

describe('compareWithBaseline, negative baselines', () => {
  it.each<[number, number, Metric['better'], string]>([
    [-1, -1, 'lower', 'ok'],
    [-1, -1, 'higher', 'ok'],
    [-1, -0.8, 'lower', 'ok'], // exactly 20 % of |baseline| higher
    [-1, -0.79, 'lower', 'worse'],
    [-1, -1.2, 'lower', 'ok'],
    [-1, -1.21, 'lower', 'better'],
    [-1, -1.21, 'higher', 'worse'],
    [-1, -0.79, 'higher', 'better'],
  ])('%d -> %d, %s better, is %s', (before, after, better, status) => {
    expect(statusOf(before, after, better)).toBe(status);
  });

  it('signs the change by direction: higher is positive', () => {
    expect(rowOf(-1, -0.5, {}).change).toBeCloseTo(0.5, 10);
    expect(rowOf(-2, -3, {}).change).toBeCloseTo(-0.5, 10);
  });
});

describe('environmentWarning', () => {
  it('is null when emulation, VM and CPUs match, whatever else differs', () => {
    expect(environmentWarning(ENVIRONMENT, { ...ENVIRONMENT, kernel: '6.9', node: 'v22' })).toBe(
      null,
    );
  });

  it('names every difference on one line', () => {
    const warning = environmentWarning(
      { ...ENVIRONMENT, emulated: true, vm: false, cpus: 8 },
      ENVIRONMENT,
    );
    expect(warning).toBe(
      "warning: the run's machine differs from the baseline's: emulated CPU yes (baseline no), host (baseline VM), 8 CPUs (baseline 4); the figures may not be comparable",
    );
  });

  it('names a single difference', () => {
    expect(environmentWarning({ ...ENVIRONMENT, cpus: 2 }, ENVIRONMENT)).toContain(
      ': 2 CPUs (baseline 4);',
    );
  });

  it('names another lvmd in group peer, and is silent when either run has none', () => {
    const v41 = { ...ENVIRONMENT, lvmd: 'lvmd version v0.41.0' };
    expect(environmentWarning({ ...ENVIRONMENT, lvmd: 'lvmd version v0.42.0' }, v41)).toContain(
      ": group peer's lvmd version v0.42.0 (baseline lvmd version v0.41.0);",
    );
    expect(environmentWarning({ ...ENVIRONMENT, lvmd: null }, v41)).toContain(
      ": group peer's lvmd of unknown version (baseline lvmd version v0.41.0);",
    );
    expect(environmentWarning(v41, v41)).toBeNull();
    expect(environmentWarning(ENVIRONMENT, v41)).toBeNull();
    expect(environmentWarning(v41, ENVIRONMENT)).toBeNull();
  });
});

describe('parseTolerance', () => {
  it.each<[string, number]>([
    ['0', 0],
    ['0.2', 0.2],
    [' 0.05 ', 0.05],
    ['0.999', 0.999],
  ])('accepts "%s"', (text, value) => {
    expect(parseTolerance(text)).toBe(value);
  });

  it.each(['', ' ', '1', '1.5', '-0.1', 'abc', 'NaN', 'Infinity', '20%'])(
    'refuses "%s" with one line',
    (text) => {
      expect(() => parseTolerance(text)).toThrow(
        `--tolerance must be a fraction 0 <= n < 1 (0.2 = 20 %), got "${text}"`,
      );
    },
  );
});

describe('parseGroups', () => {
  it('keeps known groups in the order given, once each', () => {
    expect(parseGroups(['burst', 'listing', 'burst'])).toEqual(['burst', 'listing']);
    expect(parseGroups([...GROUPS])).toEqual([...GROUPS]);
  });

  it('names an unknown group and lists the known ones', () => {
    expect(() => parseGroups(['listing', 'lsiting'])).toThrow(
      `unknown group "lsiting"; groups: ${GROUPS.join(', ')}`,
    );
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
        'FAILED: 2 of 5 compared metrics worse (allowed: 20 % on ratios and sizes, none on counts, no newly missed target), 1 missing',
        '',
      ].join('\n'),
    );
  });

  it('names the target a run newly misses', () => {
    const result = compareWithBaseline(
      run([metric('gc', 3.2, 'lower', { label: 'GC', target: { op: '<=', value: 3 } })]),
      baseline([metric('gc', 2.94, 'lower', { label: 'GC', target: { op: '<=', value: 3 } })]),
    );
    expect(renderComparison(result).split('\n').slice(0, 2)).toEqual([
      'MEASUREMENT  BASELINE  LATEST  CHANGE  STATUS             ID',
      'GC           2.94×     3.20×   +8.8 %  WORSE: misses ≤ 3  gc',
    ]);
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
  const createMs = metric('create.ms', 1234, 'lower', {
    group: 'create-delete',
    unit: 'ms',
    compared: false,
  });
  const idle = metric('idle.per-min', 0, 'lower', { group: 'footprint', unit: 'per-min' });
  const others = (['create-delete', 'snapshots', 'burst', 'datapath', 'peer'] as const).map(
    (group) => metric(`${group}.ratio`, 1, 'lower', { group }),
  );
  const metrics = [ratio, createMs, idle, ...others];

  it('keeps the start, environment and compared metrics of a full run', () => {
    const results = run(metrics);
    expect(takeBaseline(results, 'results/2026-11-29T221503Z.json')).toEqual({
      schema: 1,
      source: 'results/2026-11-29T221503Z.json',
      startedAt: results.startedAt,
      environment: ENVIRONMENT,
      metrics: [ratio, idle, ...others],
    });
  });

  it('takes a run that records every group and no failures', () => {
    const results: BenchResults = { ...run(metrics), groups: [...GROUPS], failures: [] };
    expect(takeBaseline(results, 'results/x.json').metrics).toHaveLength(7);
  });

  it('refuses a run with failed groups', () => {
    const results: BenchResults = {
      ...run(metrics),
      groups: [...GROUPS],
      failures: ['burst: lvcreate failed\nstderr: …', 'datapath: fio missing'],
    };
    expect(() => takeBaseline(results, 'results/x.json')).toThrow(
      'results/x.json: 2 group(s) failed in this run (burst: lvcreate failed; …); a baseline must come from a run without failures',
    );
  });

  it('refuses a run --only (groups recorded)', () => {
    const results: BenchResults = { ...run(metrics), groups: ['listing', 'burst'], failures: [] };
    expect(() => takeBaseline(results, 'results/x.json')).toThrow(
      'results/x.json: a partial run (not run: create-delete, snapshots, datapath, footprint, peer); a baseline must cover every group',
    );
  });

  it('refuses a run where a group has no compared metric (older files without groups)', () => {
    expect(() => takeBaseline(run([ratio, createMs, idle]), 'results/x.json')).toThrow(
      'results/x.json: a partial run (no compared metric: create-delete, snapshots, burst, datapath, peer); a baseline must cover every group',
    );
  });

  it('names the file as shown, and records the source', () => {
    expect(() => takeBaseline(run([ratio]), 'results/x.json', '/abs/results/x.json')).toThrow(
      /^\/abs\/results\/x\.json: a partial run/,
    );
    expect(takeBaseline(run(metrics), 'results/x.json', '/abs/results/x.json').source).toBe(
      'results/x.json',
    );
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
