import { describe, expect, it } from 'vitest';
import { parseStat } from './lvm-children.js';
import { lvmdFromEnvironment, type PeerOptions } from './peer.js';
import { peerMetrics, type Sides } from './peer-report.js';

const OPTIONS: PeerOptions = {
  lvmd: '/parts/lvmd',
  proto: '/parts/lvmd.proto',
  cycles: 3,
  burst: 64,
  burstRounds: 2,
  rpcs: 1000,
};

/** One side: its cycles' create and remove times with their programs, bursts `[create, remove, most lvm at once]`, RSS. */
const side = (
  create: { ms: number[]; programs: string },
  remove: { ms: number[]; programs: string },
  bursts: [number, number, number][],
  [rssIdle, rssAfterRpcs, rssAfterWork]: [number, number, number],
): Sides['lvmd'] => {
  const ops = ({ ms, programs }: { ms: number[]; programs: string }) =>
    ms.map((t) => ({
      ms: t,
      processes: { lvm: programs.split(' ').length, other: 0, sequence: programs, ms: t - 10 },
    }));
  return {
    create: ops(create),
    remove: ops(remove),
    bursts: bursts.map(([createMs, removeMs, maxLvm]) => ({
      createMs,
      removeMs,
      lvm: 320,
      maxLvm,
      ...(maxLvm === 1 ? { lvmBusyMs: (createMs + removeMs) * 0.9 } : {}),
    })),
    rssIdle,
    rssAfterRpcs,
    rssAfterWork,
  };
};

const SIDES: Sides = {
  lvstamp: side(
    { ms: [900, 800, 1000], programs: 'lvm lvcreate lvrename' },
    { ms: [600, 500, 700], programs: 'lvm lvremove' },
    [
      [100_000, 80_000, 1],
      [140_000, 100_000, 1],
    ],
    [60, 70, 110],
  ),
  lvmd: side(
    { ms: [600, 700, 650], programs: 'vgs lvcreate lvs' },
    { ms: [500, 400, 450], programs: 'vgs lvremove' },
    [
      [30_000, 20_000, 65],
      [32_000, 22_000, 64],
    ],
    [30, 35, 40],
  ),
};

describe('peerMetrics', () => {
  const metrics = peerMetrics(SIDES, OPTIONS);
  const byId = new Map(metrics.map((m) => [m.id, m]));

  it('gives create → remove as the median of the per-cycle ratios, against ≤ 1.0', () => {
    // cycles: lvstamp 1500, 1300, 1700; lvmd 1100, 1100, 1100 → 1.364, 1.182, 1.545
    expect(byId.get('peer.create-delete.ratio')).toMatchObject({
      group: 'peer',
      value: 1.36,
      unit: 'ratio',
      better: 'lower',
      target: { op: '<=', value: 1.0 },
      compared: true,
    });
    expect(byId.get('peer.create-delete.ratio')?.note).toBe(
      'lvstamp 1500 ms (1300 ms–1700 ms), lvmd 1100 ms (1100 ms–1100 ms); ratio of the medians 1.36×, per-cycle 1.18–1.55×',
    );
  });

  it('gives the burst as the median over rounds of creates + removes', () => {
    // lvstamp 180 s, 240 s → 210 s; lvmd 50 s, 54 s → 52 s
    expect(byId.get('peer.burst.ratio')).toMatchObject({
      value: 4.04,
      target: { op: '<=', value: 1.0 },
      compared: true,
    });
    expect(byId.get('peer.burst.ratio')?.note).toBe(
      'lvstamp 100.0 s + 80.0 s, lvm at once ≤ 1, lvm busy 90 %; 140.0 s + 100.0 s, lvm at once ≤ 1, lvm busy 90 %; lvmd 30.0 s + 20.0 s, lvm at once ≤ 65; 32.0 s + 22.0 s, lvm at once ≤ 64',
    );
  });

  it('gives create and remove alone as ratios of the medians, without a target', () => {
    expect(byId.get('peer.create.ratio')?.value).toBe(1.38); // 900 / 650
    expect(byId.get('peer.remove.ratio')?.value).toBe(1.33); // 600 / 450
    expect(byId.get('peer.create.ratio')?.target).toBeUndefined();
  });

  it("counts both sides' lvm processes; only lvstamp's are compared", () => {
    expect(byId.get('peer.create.lvm-processes')).toMatchObject({
      value: 3,
      unit: 'count',
      compared: true,
      note: 'lvm lvcreate lvrename',
    });
    expect(byId.get('peer.create.lvm-processes.lvmd')).toMatchObject({
      value: 3,
      compared: false,
      note: 'vgs lvcreate lvs',
    });
    expect(byId.get('peer.remove.lvm-processes')?.value).toBe(2);
    expect(byId.get('peer.remove.lvm-processes.lvmd')?.value).toBe(2);
  });

  it('gives RSS as ratios with both absolute figures', () => {
    expect(byId.get('peer.rss.idle.ratio')).toMatchObject({
      value: 2,
      note: 'lvstamp 60.0 MiB, lvmd 30.0 MiB',
    });
    expect(byId.get('peer.rss.after-rpcs.ratio')?.value).toBe(2);
  });

  it('has one metric per id, all in group peer', () => {
    expect(new Set(metrics.map((m) => m.id)).size).toBe(metrics.length);
    expect(metrics.every((m) => m.group === 'peer')).toBe(true);
  });
});

describe('lvmdFromEnvironment', () => {
  it('takes both paths', () => {
    expect(
      lvmdFromEnvironment({
        LVSTAMP_BENCH_LVMD: '/a/lvmd',
        LVSTAMP_BENCH_LVMD_PROTO: '/a/lvmd.proto',
      }),
    ).toEqual({ lvmd: '/a/lvmd', proto: '/a/lvmd.proto' });
  });

  it('says what is missing and where it comes from', () => {
    expect(() => lvmdFromEnvironment({ LVSTAMP_BENCH_LVMD: '/a/lvmd' })).toThrow(
      /needs LVSTAMP_BENCH_LVMD .* and LVSTAMP_BENCH_LVMD_PROTO .*test-e2e\/parts\/build.sh lvmd/,
    );
  });
});

describe('lvmdFromEnvironment when the part could not be built', () => {
  it('names the build failure that run-bench.sh passed on', () => {
    expect(() => lvmdFromEnvironment({ LVSTAMP_BENCH_LVMD_ERROR: 'parts: go is missing' })).toThrow(
      /\(here it failed: parts: go is missing\)$/,
    );
  });
});

describe('parseStat', () => {
  it('reads comm, state and parent PID', () => {
    expect(parseStat('4242 (lvm) R 4100 4242 1 0 -1 4194560 98 0 0 0')).toEqual({
      comm: 'lvm',
      state: 'R',
      ppid: 4100,
    });
  });

  it('takes a comm with spaces and parentheses whole', () => {
    expect(parseStat('7 (a) b (c) Z 1 7 7 0')).toEqual({ comm: 'a) b (c', state: 'Z', ppid: 1 });
  });

  it('gives null for anything else', () => {
    expect(parseStat('')).toBeNull();
    expect(parseStat('12 (lvm')).toBeNull();
    expect(parseStat('12 (lvm) S x')).toBeNull();
  });
});
