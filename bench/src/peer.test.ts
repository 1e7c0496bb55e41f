import { describe, expect, it } from 'vitest';
import { lvmdFromEnvironment, peerMetrics, type PeerOptions, type Sides } from './peer.js';

const OPTIONS: PeerOptions = {
  lvmd: '/parts/lvmd',
  proto: '/parts/lvmd.proto',
  cycles: 3,
  burst: 64,
  burstRounds: 2,
  rpcs: 1000,
};

const op = (ms: number, sequence: string) => ({
  ms,
  processes: { lvm: sequence.split(' ').length, other: 0, sequence, ms: ms - 10 },
});

const SIDES: Sides = {
  lvstamp: {
    create: [
      op(900, 'lvm lvcreate lvrename'),
      op(800, 'lvm lvcreate lvrename'),
      op(1000, 'lvm lvcreate lvrename'),
    ],
    remove: [op(600, 'lvm lvremove'), op(500, 'lvm lvremove'), op(700, 'lvm lvremove')],
    bursts: [
      { createMs: 100_000, removeMs: 80_000, lvm: 320, maxLvm: 1 },
      { createMs: 140_000, removeMs: 100_000, lvm: 320, maxLvm: 1 },
    ],
    rssIdle: 60,
    rssAfterRpcs: 70,
    rssAfterWork: 110,
  },
  lvmd: {
    create: [op(600, 'vgs lvcreate lvs'), op(700, 'vgs lvcreate lvs'), op(650, 'vgs lvcreate lvs')],
    remove: [op(500, 'vgs lvremove'), op(400, 'vgs lvremove'), op(450, 'vgs lvremove')],
    bursts: [
      { createMs: 30_000, removeMs: 20_000, lvm: 320, maxLvm: 65 },
      { createMs: 32_000, removeMs: 22_000, lvm: 320, maxLvm: 64 },
    ],
    rssIdle: 30,
    rssAfterRpcs: 35,
    rssAfterWork: 40,
  },
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
