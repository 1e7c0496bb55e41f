// Group 3: a burst of concurrent CreateVolume calls with distinct names, then as many concurrent
// DeleteVolume calls, against the same number of sequential bare lvcreate/lvremove pairs.
import {
  DATA_OFFSET_BYTES,
  DEFAULT_NAMING,
  lvcreateArgv,
  newLvNameFor,
  ownerTagFor,
  volumeIdForName,
} from '@lvstamp/core';
import * as grpc from '@grpc/grpc-js';
import type { BenchContext } from '../context.js';
import { BenchDriver, MOUNT_CAPABILITY } from '../driver.js';
import { lvmOverlap, type Overlap } from '../exec.js';
import { BENCH_OWNER_ID, cleanUp, createBenchVg } from '../fixture.js';
import { formatMs, MiB, round, timed } from '../stats.js';
import type { Metric } from '../types.js';

const REQUESTED_BYTES = 8 * MiB;

export async function burst(context: BenchContext): Promise<Metric[]> {
  const n = context.scale.burst;
  const { runner } = context;
  const vg = await createBenchVg(runner, { sizeBytes: (n * 3 + 16) * 4 * MiB });
  let driver: BenchDriver | null = null;
  try {
    driver = await BenchDriver.start({ dir: vg.dir, vgName: vg.name });
    const d = driver;
    const names = Array.from({ length: n }, (_, i) => `${vg.name}-burst-${i}`);
    const mark = d.commandMark;
    const rpcMark = d.rpcLines;
    const createStart = Date.now();
    const create = await timed(() =>
      settleAll(
        names.map((name) =>
          d.call('Controller', 'CreateVolume', {
            name,
            capacity_range: { required_bytes: String(REQUESTED_BYTES) },
            volume_capabilities: [MOUNT_CAPABILITY],
          }),
        ),
        'CreateVolume',
      ),
    );
    const ids = create.value.map((r) => (r as { volume: { volume_id: string } }).volume.volume_id);
    if (new Set(ids).size !== n)
      throw new Error(`${n} creates returned ${new Set(ids).size} distinct volume IDs`);
    context.progress(`burst: ${n} concurrent CreateVolume in ${formatMs(create.ms)}`);
    await d.waitForRpcLines(rpcMark + n);
    const deleteMark = d.commandMark;
    const deleteStart = Date.now();
    const remove = await timed(() =>
      settleAll(
        ids.map((volume_id) => d.call('Controller', 'DeleteVolume', { volume_id })),
        'DeleteVolume',
      ),
    );
    context.progress(`burst: ${n} concurrent DeleteVolume in ${formatMs(remove.ms)}`);
    await d.waitForRpcLines(rpcMark + 2 * n);
    const processes = d.commandsSince(mark);
    const driverMs = create.ms + remove.ms;
    // Which step serialises the burst: how many lvm processes ran at once, and how much of each
    // phase had one running (1 at a time and busy ≈ 100 % means the phase is one lvm after another).
    const timedCommands = d.spansSince(mark).length;
    if (timedCommands !== processes.lvm + processes.other) {
      throw new Error(
        `${timedCommands} of ${processes.lvm + processes.other} command lines of the driver carry a time: no overlap can be measured`,
      );
    }
    const createOverlap = lvmOverlap(d.spansSince(mark, deleteMark));
    const deleteOverlap = lvmOverlap(d.spansSince(deleteMark));
    const overlapMetrics = (
      phase: 'create' | 'delete',
      o: Overlap,
      phaseMs: number,
      startedAt: number,
    ): Metric[] => [
      {
        id: `burst.${phase}.max-concurrent-lvm`,
        group: 'burst',
        label: `${phase} phase: lvm processes at once, at most`,
        value: o.maxConcurrent,
        unit: 'count',
        better: 'higher',
        compared: false,
        note: `lvm busy ${formatMs(o.busyMs)} of ${formatMs(phaseMs)} (${Math.round((100 * o.busyMs) / phaseMs)} %), sum of lvm process times ${formatMs(o.sumMs)}; phase started ${new Date(startedAt).toISOString()}`,
      },
    ];

    const lvSizeBytes =
      Math.ceil((REQUESTED_BYTES + DATA_OFFSET_BYTES) / vg.extentBytes) * vg.extentBytes;
    const bare = await timed(async () => {
      for (const name of names) {
        const lvName = newLvNameFor(volumeIdForName(`${name}-bare`));
        await runner.run(
          lvcreateArgv({
            vgName: vg.name,
            lvName,
            sizeBytes: lvSizeBytes,
            tags: [DEFAULT_NAMING.tag, ownerTagFor(BENCH_OWNER_ID)],
          }),
        );
        await runner.run(['lvremove', '--yes', `${vg.name}/${lvName}`]);
      }
    });
    context.progress(`burst: ${n} sequential bare lvcreate/lvremove pairs in ${formatMs(bare.ms)}`);
    return [
      {
        id: 'burst.ratio',
        group: 'burst',
        label: `${n} concurrent creates, then deletes / ${n} bare pairs`,
        value: round(driverMs / bare.ms),
        unit: 'ratio',
        better: 'lower',
        target: { op: '<=', value: 1.5 },
        compared: true,
        note: `driver ${formatMs(create.ms)} + ${formatMs(remove.ms)}, bare ${formatMs(bare.ms)}; all ${n} + ${n} calls OK`,
      },
      {
        id: 'burst.lvm-processes-per-volume',
        group: 'burst',
        label: 'lvm processes per volume (create + delete)',
        value: round(processes.lvm / n, 2),
        unit: 'count',
        better: 'lower',
        compared: true,
        note: `${processes.lvm} lvm + ${processes.other} other for ${n} volumes; bare 2 per volume`,
      },
      ...overlapMetrics('create', createOverlap, create.ms, createStart),
      ...overlapMetrics('delete', deleteOverlap, remove.ms, deleteStart),
      {
        id: 'burst.driver.ms',
        group: 'burst',
        label: 'driver burst, wall time',
        value: round(driverMs, 1),
        unit: 'ms',
        better: 'lower',
        compared: false,
      },
    ];
  } finally {
    await driver?.stop();
    await cleanUp(context, vg);
  }
}

/** All calls must succeed; otherwise one Error listing every failure (code and details). */
export async function settleAll(calls: Promise<unknown>[], method: string): Promise<unknown[]> {
  const settled = await Promise.allSettled(calls);
  const failures = settled.flatMap((s) =>
    s.status === 'rejected'
      ? [
          `${grpc.status[(s.reason as grpc.ServiceError).code]} ${(s.reason as grpc.ServiceError).details}`,
        ]
      : [],
  );
  if (failures.length > 0) {
    throw new Error(
      `${failures.length} of ${calls.length} ${method} calls failed: ${failures.slice(0, 3).join('; ')}`,
    );
  }
  return settled.map((s) => (s.status === 'fulfilled' ? s.value : null));
}
