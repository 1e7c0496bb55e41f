// The peer group's figures as metrics for bench:check and as the table `lvstamp-bench peer`
// prints (bench/README.md "Peer group").
import type { ProcessCount } from './exec.js';
import { formatMs, median, round } from './stats.js';
import type { Metric } from './types.js';

/** How much a peer run does. */
export interface PeerScale {
  /** Create → remove cycles per side, after one warm-up each. */
  readonly cycles: number;
  /** Concurrent creates, then removes, per burst. */
  readonly burst: number;
  /** Bursts per side, the first side alternating. */
  readonly burstRounds: number;
  /** RPCs that need no lvm before the second RSS reading. */
  readonly rpcs: number;
}

/** Settle time before an RSS reading, in ms (as group footprint). */
export const SETTLE_MS = 2_000;

/** One timed operation and the processes behind it. */
export interface Op {
  readonly ms: number;
  readonly processes: ProcessCount;
}

/** One side's figures. */
export interface Side {
  readonly create: Op[];
  readonly remove: Op[];
  readonly bursts: {
    createMs: number;
    removeMs: number;
    lvm: number;
    maxLvm: number;
    /** lvstamp only: each command of the burst, `[program, start ms after the burst began, ms]`. */
    commands?: [string, number, number][];
    /** lvstamp only: how long at least one lvm process ran (lvmOverlap), in ms. */
    lvmBusyMs?: number;
  }[];
  rssIdle: number;
  rssAfterRpcs: number;
  rssAfterWork: number;
}

/** Both sides' figures. */
export type Sides = Record<'lvstamp' | 'lvmd', Side>;

/**
 * The figures as metrics of group `peer`. Ratios are lvstamp-csi over lvmd,
 * each against the target of lvstamp ≤ 1.0× lvmd where it sets
 * one: create → remove as the median of the per-cycle ratios (each pair ran
 * back to back, so a load that changes between cycles hits both sides
 * alike), the burst as the median over rounds of creates + removes. Counts
 * are lvm processes per operation, from each daemon's log.
 */
export function peerMetrics(sides: Sides, options: PeerScale): Metric[] {
  const cycles = (s: Side): number[] => s.create.map((c, i) => c.ms + (s.remove[i]?.ms ?? 0));
  const bursts = (s: Side): number[] => s.bursts.map((b) => b.createMs + b.removeMs);
  const a = sides.lvstamp;
  const b = sides.lvmd;
  const perCycle = cycles(a).map((ms, i) => ms / (cycles(b)[i] ?? Number.NaN));
  const ratio = (
    id: string,
    label: string,
    value: number,
    note: string,
    target?: number,
  ): Metric => ({
    id: `peer.${id}`,
    group: 'peer',
    label,
    value: round(value, 2),
    unit: 'ratio',
    better: 'lower',
    ...(target === undefined ? {} : { target: { op: '<=' as const, value: target } }),
    compared: true,
    note,
  });
  const lvmCount = (id: string, label: string, ops: Op[], compared: boolean): Metric => ({
    id: `peer.${id}`,
    group: 'peer',
    label,
    value: ops[0]?.processes.lvm ?? Number.NaN,
    unit: 'count',
    better: 'lower',
    compared,
    note: ops[0]?.processes.sequence ?? '',
  });
  const burstNote = (s: Side): string =>
    s.bursts
      .map(
        (x) =>
          `${formatMs(x.createMs)} + ${formatMs(x.removeMs)}, lvm at once ≤ ${x.maxLvm}` +
          (x.lvmBusyMs === undefined
            ? ''
            : `, lvm busy ${Math.round((100 * x.lvmBusyMs) / (x.createMs + x.removeMs))} %`),
      )
      .join('; ');
  return [
    ratio(
      'create-delete.ratio',
      `create → remove / lvmd, median of ${options.cycles} per-cycle ratios`,
      median(perCycle),
      `lvstamp ${spread(cycles(a))}, lvmd ${spread(cycles(b))}; ratio of the medians ${round(median(cycles(a)) / median(cycles(b)), 2)}×, per-cycle ${round(Math.min(...perCycle), 2)}–${round(Math.max(...perCycle), 2)}×`,
      1.0,
    ),
    ratio(
      'create.ratio',
      'CreateVolume / CreateLV, ratio of the medians',
      median(a.create.map((c) => c.ms)) / median(b.create.map((c) => c.ms)),
      `lvstamp ${spread(a.create.map((c) => c.ms))}, lvmd ${spread(b.create.map((c) => c.ms))}`,
    ),
    ratio(
      'remove.ratio',
      'DeleteVolume / RemoveLV, ratio of the medians',
      median(a.remove.map((c) => c.ms)) / median(b.remove.map((c) => c.ms)),
      `lvstamp ${spread(a.remove.map((c) => c.ms))}, lvmd ${spread(b.remove.map((c) => c.ms))}`,
    ),
    ratio(
      'burst.ratio',
      `burst of ${options.burst} creates, then removes / lvmd, median of ${options.burstRounds} round(s)`,
      median(bursts(a)) / median(bursts(b)),
      `lvstamp ${burstNote(a)}; lvmd ${burstNote(b)}`,
      1.0,
    ),
    lvmCount(
      'create.lvm-processes',
      'lvm processes per CreateVolume (lvstamp-csi)',
      a.create,
      true,
    ),
    lvmCount('create.lvm-processes.lvmd', 'lvm processes per CreateLV (lvmd)', b.create, false),
    lvmCount(
      'remove.lvm-processes',
      'lvm processes per DeleteVolume (lvstamp-csi)',
      a.remove,
      true,
    ),
    lvmCount('remove.lvm-processes.lvmd', 'lvm processes per RemoveLV (lvmd)', b.remove, false),
    ratio(
      'rss.idle.ratio',
      'RSS idle after start / lvmd',
      a.rssIdle / b.rssIdle,
      `lvstamp ${a.rssIdle.toFixed(1)} MiB, lvmd ${b.rssIdle.toFixed(1)} MiB`,
    ),
    ratio(
      'rss.after-rpcs.ratio',
      `RSS after ${options.rpcs} RPCs without lvm / lvmd`,
      a.rssAfterRpcs / b.rssAfterRpcs,
      `lvstamp ${a.rssAfterRpcs.toFixed(1)} MiB, lvmd ${b.rssAfterRpcs.toFixed(1)} MiB; after all the volume work (${SETTLE_MS / 1000} s settle) ${a.rssAfterWork.toFixed(1)} and ${b.rssAfterWork.toFixed(1)} MiB`,
    ),
  ];
}

/** Median, minimum and maximum of `values` as "812 ms (700–950)". */
function spread(values: readonly number[]): string {
  return `${formatMs(median(values))} (${formatMs(Math.min(...values))}–${formatMs(Math.max(...values))})`;
}

export function render(sides: Sides, options: PeerScale): string {
  const cycle = (s: Side): number[] => s.create.map((c, i) => c.ms + (s.remove[i]?.ms ?? 0));
  const burst = (s: Side): number[] => s.bursts.map((b) => b.createMs + b.removeMs);
  const ratio = (a: number[], b: number[]): string => `${round(median(a) / median(b), 2)}×`;
  const seq = (ops: Op[]): string => {
    const p = ops[0]?.processes;
    return p === undefined ? '-' : `${p.lvm} lvm + ${p.other} other (${p.sequence})`;
  };
  const rows: [string, string, string, string][] = [
    [
      `create → remove, median of ${options.cycles} (min–max)`,
      spread(cycle(sides.lvstamp)),
      spread(cycle(sides.lvmd)),
      ratio(cycle(sides.lvstamp), cycle(sides.lvmd)),
    ],
    [
      'create',
      spread(sides.lvstamp.create.map((c) => c.ms)),
      spread(sides.lvmd.create.map((c) => c.ms)),
      ratio(
        sides.lvstamp.create.map((c) => c.ms),
        sides.lvmd.create.map((c) => c.ms),
      ),
    ],
    [
      'remove',
      spread(sides.lvstamp.remove.map((c) => c.ms)),
      spread(sides.lvmd.remove.map((c) => c.ms)),
      ratio(
        sides.lvstamp.remove.map((c) => c.ms),
        sides.lvmd.remove.map((c) => c.ms),
      ),
    ],
    [
      `burst of ${options.burst}, creates + removes (${options.burstRounds} round(s))`,
      spread(burst(sides.lvstamp)),
      spread(burst(sides.lvmd)),
      ratio(burst(sides.lvstamp), burst(sides.lvmd)),
    ],
    ['create: processes', seq(sides.lvstamp.create), seq(sides.lvmd.create), ''],
    ['remove: processes', seq(sides.lvstamp.remove), seq(sides.lvmd.remove), ''],
    [
      'burst: lvm per volume; at once, at most',
      sides.lvstamp.bursts.map((b) => `${b.lvm / options.burst}; ${b.maxLvm}`).join(', '),
      sides.lvmd.bursts.map((b) => `${b.lvm / options.burst}; ${b.maxLvm}`).join(', '),
      '',
    ],
    [
      'RSS idle / after RPCs / after the work, MiB',
      rss(sides.lvstamp),
      rss(sides.lvmd),
      `${round(sides.lvstamp.rssIdle / sides.lvmd.rssIdle, 2)}× idle`,
    ],
  ];
  const widths = [0, 1, 2].map((i) =>
    Math.max(...rows.map((r) => r[i]?.length ?? 0), ['', 'lvstamp-csi', 'lvmd'][i]?.length ?? 0),
  );
  const line = (cells: readonly string[]): string =>
    `${cells.map((c, i) => (i < 3 ? c.padEnd(widths[i] ?? 0) : c)).join('  ')}\n`;
  return line(['', 'lvstamp-csi', 'lvmd', 'lvstamp/lvmd']) + rows.map(line).join('');
}

function rss(s: Side): string {
  return [s.rssIdle, s.rssAfterRpcs, s.rssAfterWork].map((v) => v.toFixed(1)).join(' / ');
}
