// Group 2: ListVolumes, GetCapacity (through the driver) and the GC inventory + plan (the core, as
// lvstamp-gc runs it) with 10, 100 and 1,000 volumes in the group, against one bare
// `lvs --reportformat json` of the same group: wall time and the processes each call starts.
import { join } from 'node:path';
import { createNodeServices } from '@lvstamp/core';
import type { BenchContext } from '../context.js';
import { BenchDriver } from '../driver.js';
import { CountingRunner, countCommands, type ProcessCount } from '../exec.js';
import { BENCH_OWNER_ID, cleanUp, createBenchVg, createDataMaps, populate } from '../fixture.js';
import { formatMs, median, MiB, round, timed } from '../stats.js';
import type { Metric } from '../types.js';

/** Extents per volume: 2 × 4 MiB (1 MiB header area + 7 MiB data). */
const EXTENTS_PER_VOLUME = 2;
const EXTENT_BYTES = 4 * MiB;
/** Headers say the volumes were made two days ago: past any grace period. */
const AGE_MS = 2 * 24 * 3600 * 1000;

/** The calls this group times, with their labels. */
const CALLS = [
  { key: 'list-volumes', label: 'ListVolumes' },
  { key: 'get-capacity', label: 'GetCapacity' },
  { key: 'gc-plan', label: 'GC inventory + plan' },
] as const;
type CallKey = (typeof CALLS)[number]['key'];

interface SizeResult {
  readonly count: number;
  readonly bareMs: number;
  readonly ms: Record<CallKey, number>;
  readonly processes: Record<CallKey, ProcessCount>;
}

export async function listing(context: BenchContext): Promise<Metric[]> {
  const results: SizeResult[] = [];
  for (const count of context.scale.listingSizes) {
    results.push(await measureSize(context, count));
  }
  const metrics: Metric[] = [];
  const largest = results.at(-1);
  for (const r of results) {
    const isTargetSize = r.count === 1000;
    metrics.push({
      id: `listing.n${r.count}.bare-lvs.ms`,
      group: 'listing',
      label: `bare lvs, ${r.count} volumes`,
      value: round(r.bareMs, 1),
      unit: 'ms',
      better: 'lower',
      compared: false,
    });
    for (const call of CALLS) {
      const target =
        isTargetSize && call.key === 'list-volumes'
          ? { op: '<=' as const, value: 1.5 }
          : isTargetSize && call.key === 'gc-plan'
            ? { op: '<=' as const, value: 2 }
            : undefined;
      const p = r.processes[call.key];
      metrics.push({
        id: `listing.n${r.count}.${call.key}.ratio`,
        group: 'listing',
        label: `${call.label} / bare lvs, ${r.count} volumes`,
        value: round(r.ms[call.key] / r.bareMs),
        unit: 'ratio',
        better: 'lower',
        ...(target ? { target } : {}),
        compared: true,
        note: `${formatMs(r.ms[call.key])} (in processes ${formatMs(p.ms)}) vs ${formatMs(r.bareMs)}; ${p.lvm} lvm + ${p.other} other: ${abbreviate(p.sequence)}`,
      });
    }
  }
  const smallest = results[0];
  if (smallest !== undefined && largest !== undefined) {
    for (const call of CALLS) {
      const first = smallest.processes[call.key];
      const last = largest.processes[call.key];
      metrics.push({
        id: `listing.${call.key}.lvm-processes`,
        group: 'listing',
        label: `${call.label}: lvm processes per call`,
        value: last.lvm,
        unit: 'count',
        better: 'lower',
        compared: true,
        note: `${first.lvm} at ${smallest.count} volumes, ${last.lvm} at ${largest.count}`,
      });
      metrics.push({
        id: `listing.${call.key}.process-growth`,
        group: 'listing',
        label: `${call.label}: extra processes at ${largest.count} vs ${smallest.count} volumes`,
        value: last.lvm + last.other - (first.lvm + first.other),
        unit: 'count',
        better: 'lower',
        target: { op: '<=', value: 0 },
        compared: true,
      });
    }
  }
  return metrics;
}

async function measureSize(context: BenchContext, count: number): Promise<SizeResult> {
  const { runner } = context;
  const vg = await createBenchVg(runner, {
    sizeBytes: (count * EXTENTS_PER_VOLUME + 16) * EXTENT_BYTES,
    extentBytes: EXTENT_BYTES,
  });
  let driver: BenchDriver | null = null;
  let mapped: string[] = [];
  try {
    const setup = await timed(async () => {
      const volumes = await populate(runner, vg, {
        count,
        extentsPerVolume: EXTENTS_PER_VOLUME,
        ageMs: AGE_MS,
      });
      // Every other volume is attached (has its data map), as on a node where half are in use.
      const attached = volumes.filter((_, i) => i % 2 === 0);
      // Known before the create: maps of a partly failed create are removed too.
      mapped = attached.map((v) => v.volumeId);
      await createDataMaps(runner, attached, EXTENTS_PER_VOLUME * EXTENT_BYTES);
      return { volumes, attached };
    });
    context.progress(`listing: ${count} volumes in place in ${formatMs(setup.ms)}`);
    const liveSet = new Set(setup.value.attached.map((v) => v.volumeId));
    driver = await BenchDriver.start({ dir: vg.dir, vgName: vg.name });
    const d = driver;
    const gcRunner = new CountingRunner();
    const core = createNodeServices({ runner: gcRunner, lockFile: join(vg.dir, 'gc.lock') });

    const bare = async (): Promise<number> =>
      (await timed(() => runner.run(['lvs', '--reportformat', 'json', vg.name]))).ms;
    const listVolumes = async (): Promise<{ ms: number; processes: ProcessCount }> => {
      const m = await d.measure('Controller', 'ListVolumes', {});
      const entries = (m.response as { entries: unknown[] }).entries;
      if (entries.length !== count) {
        throw new Error(`ListVolumes returned ${entries.length} entries, expected ${count}`);
      }
      return m;
    };
    const getCapacity = async (): Promise<{ ms: number; processes: ProcessCount }> =>
      d.measure('Controller', 'GetCapacity', {});
    const gcPlan = async (): Promise<{ ms: number; processes: ProcessCount }> => {
      const mark = gcRunner.events.length;
      const { ms, value } = await timed(() =>
        core.gc.plan({
          liveSet,
          allowEmptyLiveSet: false,
          policy: {
            ownerId: BENCH_OWNER_ID,
            minAgeMs: 3600_000,
            maxDeletions: count,
            dryRun: true,
          },
          nowMs: Date.now(),
        }),
      );
      const okHeaders = value.inventory.volumes.filter((v) => v.header.status === 'ok').length;
      const removals = value.plan.entries.filter((e) => e.action === 'remove-volume').length;
      if (okHeaders !== count || removals !== count - liveSet.size) {
        throw new Error(
          `GC plan read ${okHeaders}/${count} headers and planned ${removals} removals, expected ${count - liveSet.size}`,
        );
      }
      return { ms, processes: countCommands(gcRunner.since(mark)) };
    };
    const calls: Record<CallKey, () => Promise<{ ms: number; processes: ProcessCount }>> = {
      'list-volumes': listVolumes,
      'get-capacity': getCapacity,
      'gc-plan': gcPlan,
    };

    // Warm-up round, not counted.
    await bare();
    for (const call of CALLS) await calls[call.key]();
    const bareMs: number[] = [];
    const ms: Record<CallKey, number[]> = { 'list-volumes': [], 'get-capacity': [], 'gc-plan': [] };
    const processes = {} as Record<CallKey, ProcessCount>;
    for (let rep = 0; rep < context.scale.listingReps; rep++) {
      bareMs.push(await bare());
      for (const call of CALLS) {
        const m = await calls[call.key]();
        ms[call.key].push(m.ms);
        processes[call.key] = m.processes;
      }
    }
    const result: SizeResult = {
      count,
      bareMs: median(bareMs),
      ms: {
        'list-volumes': median(ms['list-volumes']),
        'get-capacity': median(ms['get-capacity']),
        'gc-plan': median(ms['gc-plan']),
      },
      processes,
    };
    context.progress(
      `listing ${count}: bare lvs ${formatMs(result.bareMs)}, ListVolumes ${formatMs(result.ms['list-volumes'])}, GetCapacity ${formatMs(result.ms['get-capacity'])}, GC ${formatMs(result.ms['gc-plan'])}`,
    );
    return result;
  } finally {
    await driver?.stop();
    await cleanUp(context, vg, mapped);
  }
}

/** A process sequence for a note: runs of the same program folded, e.g. `lvs dmsetup dmsetup×500`. */
function abbreviate(sequence: string): string {
  const out: string[] = [];
  let last = '';
  let n = 0;
  for (const program of [...sequence.split(' '), '']) {
    if (program === last) {
      n++;
      continue;
    }
    if (last !== '') out.push(n > 1 ? `${last}×${n}` : last);
    last = program;
    n = 1;
  }
  return out.join(' ');
}
