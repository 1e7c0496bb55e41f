// Group 1: a CreateVolume → DeleteVolume cycle through the driver's gRPC API against the bare lvm
// sequence the design requires for the same work (DESIGN.md §5): lvcreate, clear the data area's
// first and last MiB and write the header, lvrename, lvremove, run from a plain script.
import type { BenchContext } from '../context.js';
import { BenchDriver, MOUNT_CAPABILITY } from '../driver.js';
import { countCommands, type ProcessCount } from '../exec.js';
import { bareCreate, REQUESTED_BYTES } from '../bare-create.js';
import { cleanUp, createBenchVg, type BenchVg } from '../fixture.js';
import { formatMs, median, MiB, round } from '../stats.js';
import type { Metric } from '../types.js';
import { rpcProcesses } from './rpc-processes.js';

/** One cycle: wall time in ms and the processes it started. */
interface Cycle {
  readonly ms: number;
  readonly processes: ProcessCount;
}

export async function createDelete(context: BenchContext): Promise<Metric[]> {
  const vg = await createBenchVg(context.runner, { sizeBytes: 1024 * MiB });
  let driver: BenchDriver | null = null;
  try {
    driver = await BenchDriver.start({ dir: vg.dir, vgName: vg.name });
    const driverCycles: Cycle[] = [];
    const bareCycles: Cycle[] = [];
    // A warm-up cycle each (first lvm run reads its caches, first gRPC call connects), not counted.
    await driverCycle(driver, `${vg.name}-cd-warmup`);
    await bareCycle(context, vg, `${vg.name}-bare-warmup`);
    for (let i = 0; i < context.scale.cycles; i++) {
      // Alternate the order so that drift on a noisy machine hits both sides alike.
      const runDriver = async (): Promise<void> => {
        driverCycles.push(await driverCycle(driver as BenchDriver, `${vg.name}-cd-${i}`));
      };
      const runBare = async (): Promise<void> => {
        bareCycles.push(await bareCycle(context, vg, `${vg.name}-bare-${i}`));
      };
      if (i % 2 === 0) {
        await runDriver();
        await runBare();
      } else {
        await runBare();
        await runDriver();
      }
      context.progress(
        `create-delete ${i + 1}/${context.scale.cycles}: driver ${formatMs(driverCycles.at(-1)?.ms ?? 0)}, bare ${formatMs(bareCycles.at(-1)?.ms ?? 0)}`,
      );
    }
    // The whole life of a volume on this node, per RPC (not part of the ratio above).
    const perRpc = await rpcProcesses(context, driver, vg, context.scale.cycles);
    const driverMs = median(driverCycles.map((c) => c.ms));
    const bareMs = median(bareCycles.map((c) => c.ms));
    const driverProcesses = driverCycles[0]?.processes ?? { lvm: 0, other: 0, sequence: '', ms: 0 };
    const bareProcesses = bareCycles[0]?.processes ?? { lvm: 0, other: 0, sequence: '', ms: 0 };
    return [
      {
        id: 'create-delete.ratio',
        group: 'create-delete',
        label: 'CreateVolume+DeleteVolume / bare sequence',
        value: round(driverMs / bareMs),
        unit: 'ratio',
        better: 'lower',
        target: { op: '<=', value: 1.4 },
        compared: true,
        note: `median of ${context.scale.cycles}: driver ${formatMs(driverMs)} (in processes ${formatMs(median(driverCycles.map((c) => c.processes.ms)))}), bare ${formatMs(bareMs)} (in processes ${formatMs(median(bareCycles.map((c) => c.processes.ms)))})`,
      },
      {
        id: 'create-delete.driver.lvm-processes',
        group: 'create-delete',
        label: 'lvm processes per driver cycle',
        value: driverProcesses.lvm,
        unit: 'count',
        better: 'lower',
        compared: true,
        note: `driver: ${driverProcesses.sequence}; bare: ${bareProcesses.sequence}`,
      },
      {
        id: 'create-delete.driver.ms',
        group: 'create-delete',
        label: 'driver cycle, wall time',
        value: round(driverMs, 1),
        unit: 'ms',
        better: 'lower',
        compared: false,
      },
      {
        id: 'create-delete.bare.ms',
        group: 'create-delete',
        label: 'bare cycle, wall time',
        value: round(bareMs, 1),
        unit: 'ms',
        better: 'lower',
        compared: false,
      },
      ...perRpc,
    ];
  } finally {
    await driver?.stop();
    await cleanUp(context, vg);
  }
}

async function driverCycle(driver: BenchDriver, name: string): Promise<Cycle> {
  const created = await driver.measure('Controller', 'CreateVolume', {
    name,
    capacity_range: { required_bytes: String(REQUESTED_BYTES) },
    volume_capabilities: [MOUNT_CAPABILITY],
  });
  const volumeId = (created.response as { volume: { volume_id: string } }).volume.volume_id;
  const deleted = await driver.measure('Controller', 'DeleteVolume', { volume_id: volumeId });
  return {
    ms: created.ms + deleted.ms,
    processes: {
      lvm: created.processes.lvm + deleted.processes.lvm,
      other: created.processes.other + deleted.processes.other,
      sequence: `${created.processes.sequence} | ${deleted.processes.sequence}`,
      ms: created.processes.ms + deleted.processes.ms,
    },
  };
}

/**
 * The bare sequence for the same volume: lvcreate with the driver's argv,
 * the data area's first and last MiB cleared and the header written
 * in-process through the LV's /dev/mapper node, lvrename, lvremove.
 */
export async function bareCycle(context: BenchContext, vg: BenchVg, name: string): Promise<Cycle> {
  const { runner } = context;
  const mark = runner.events.length;
  const start = performance.now();
  const finalName = await bareCreate((argv) => runner.run(argv), vg, name);
  await runner.run(['lvremove', '--yes', `${vg.name}/${finalName}`]);
  return { ms: performance.now() - start, processes: countCommands(runner.since(mark)) };
}
