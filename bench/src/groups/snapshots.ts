// Group 6: snapshots on a thin device class through the driver's gRPC API against the bare lvm
// sequences the design requires for the same work (docs/DESIGN.md §5 "Snapshots", "Restore and
// clone"; docs/SNAPSHOTS.md §13): CreateSnapshot against one `lvcreate -s -pr` carrying the
// snapshot's tags; a restore (CreateVolume from the snapshot) against `lvcreate -s -kn -ay -prw`,
// the header written in-process and `lvrename`; DeleteSnapshot against one `lvremove`. Per RPC,
// the processes the driver started.
import {
  BlockHeaderIo,
  DATA_OFFSET_BYTES,
  DEFAULT_NAMING,
  copyCreateArgv,
  fromTagFor,
  lvNameFor,
  lvrenameArgv,
  newLvNameFor,
  ownerTagFor,
  snapshotCreateArgv,
  snapshotIdForName,
  snapshotLvNameFor,
  snapshotTagsFor,
  volumeIdForName,
} from '@lvstamp/core';
import { REQUESTED_BYTES } from '../bare-create.js';
import type { BenchContext } from '../context.js';
import { BenchDriver, MOUNT_CAPABILITY } from '../driver.js';
import { countCommands, type ProcessCount } from '../exec.js';
import { BENCH_OWNER_ID, cleanUp, createBenchVg, type BenchVg } from '../fixture.js';
import { formatMs, median, MiB, round } from '../stats.js';
import type { Metric } from '../types.js';
import { rpcMetrics } from './rpc-processes.js';

/** The thin pool the driver creates for the bench's thin class (512 MiB in a 1 GiB group). */
const THIN_POOL = { pool: 'benchpool', poolSizeBytes: 512 * MiB, overprovisionRatio: 10 };

/** One call: wall time in ms and the processes it started. */
export interface SnapshotCall {
  readonly ms: number;
  readonly processes: ProcessCount;
}

/** One side of a round: snapshot the source, restore the snapshot, delete the snapshot. */
export interface SnapshotSide {
  readonly createSnapshot: SnapshotCall;
  readonly restore: SnapshotCall;
  readonly deleteSnapshot: SnapshotCall;
}

/** One measured round: the driver's RPCs and the bare sequences. */
export interface SnapshotRound {
  readonly driver: SnapshotSide;
  readonly bare: SnapshotSide;
}

/**
 * The design's ceiling on CreateSnapshot's lvm processes: one look-up and
 * one `lvcreate` (docs/DESIGN.md §5 "Snapshots": "two lvm processes").
 */
const CREATE_SNAPSHOT_LVM_CEILING = 2;

const NO_PROCESSES: ProcessCount = { lvm: 0, other: 0, sequence: '', ms: 0 };

/** What each step is compared with, for labels and notes. */
const STEPS = [
  {
    key: 'createSnapshot',
    id: 'create-snapshot',
    rpc: 'CreateSnapshot',
    label: 'CreateSnapshot / bare lvcreate -s -pr (tags)',
  },
  {
    key: 'restore',
    id: 'restore',
    rpc: 'CreateVolumeFromSnapshot',
    label: 'CreateVolume from snapshot / bare lvcreate -s -kn -ay -prw + header + lvrename',
  },
  {
    key: 'deleteSnapshot',
    id: 'delete-snapshot',
    rpc: 'DeleteSnapshot',
    label: 'DeleteSnapshot / bare lvremove',
  },
] as const;

/**
 * The group's metrics from its measured rounds (at least one), per step
 * (CreateSnapshot, restore, DeleteSnapshot): `snapshots.<step>.ratio`, the
 * driver's median over the bare median (compared, no target: neither the
 * issue nor DESIGN.md sets one); `rpc.<Rpc>.lvm-processes` and
 * `rpc.<Rpc>.other-processes` of the first round (compared; CreateSnapshot
 * ≤ 2 lvm processes, DESIGN.md §5 "Snapshots"; the programs in the note,
 * the restore as `CreateVolumeFromSnapshot`); `rpc.<Rpc>.ms`, the driver's
 * median wall time (not compared).
 * @throws Error when `rounds` is empty.
 */
export function snapshotMetrics(rounds: readonly SnapshotRound[]): Metric[] {
  if (rounds.length === 0) throw new Error('no snapshot rounds measured');
  return STEPS.flatMap(({ key, id, rpc, label }): Metric[] => {
    const driver = rounds.map((r) => r.driver[key]);
    const bare = rounds.map((r) => r.bare[key]);
    const driverMs = median(driver.map((c) => c.ms));
    const bareMs = median(bare.map((c) => c.ms));
    const first = rounds[0]?.driver[key].processes ?? NO_PROCESSES;
    const firstBare = rounds[0]?.bare[key].processes ?? NO_PROCESSES;
    const ceiling = key === 'createSnapshot' ? CREATE_SNAPSHOT_LVM_CEILING : undefined;
    return [
      {
        id: `snapshots.${id}.ratio`,
        group: 'snapshots',
        label,
        value: round(driverMs / bareMs),
        unit: 'ratio',
        better: 'lower',
        compared: true,
        note: `median of ${rounds.length}: driver ${formatMs(driverMs)} (in processes ${formatMs(median(driver.map((c) => c.processes.ms)))}), bare ${formatMs(bareMs)} (${firstBare.sequence}, in processes ${formatMs(median(bare.map((c) => c.processes.ms)))})`,
      },
      ...rpcMetrics(
        rpc,
        'snapshots',
        first,
        driverMs,
        `median of ${rounds.length}; bare ${formatMs(bareMs)}`,
        ceiling,
      ),
    ];
  });
}

/**
 * Runs the group: a loop-backed group with the driver's thin class on it, one
 * source volume made by the driver (16 MiB), then one warm-up round (when
 * `scale.snapshotWarmup`) and `scale.snapshotRounds` measured rounds, the side that goes first
 * alternating; each side snapshots the source, restores the snapshot into a
 * new volume, removes that volume (not timed) and deletes the snapshot.
 * @throws Error when a call or command fails (the group fails).
 */
export async function snapshots(context: BenchContext): Promise<Metric[]> {
  const vg = await createBenchVg(context.runner, { sizeBytes: 1024 * MiB });
  let driver: BenchDriver | null = null;
  try {
    driver = await BenchDriver.start({ dir: vg.dir, vgName: vg.name, thin: THIN_POOL });
    const source = await driver.measure('Controller', 'CreateVolume', {
      name: `${vg.name}-source`,
      capacity_range: { required_bytes: String(REQUESTED_BYTES) },
      volume_capabilities: [MOUNT_CAPABILITY],
    });
    const sourceId = (source.response as { volume: { volume_id: string } }).volume.volume_id;
    const run = async (i: number | 'warmup'): Promise<SnapshotRound> => {
      const driverSide = (): Promise<SnapshotSide> =>
        driverRound(driver as BenchDriver, sourceId, `${vg.name}-drv-${i}`);
      const bareSide = (): Promise<SnapshotSide> =>
        bareRound(context, vg, sourceId, `${vg.name}-bare-${i}`);
      // Alternate the order so that drift on a noisy machine hits both sides alike.
      if (i === 'warmup' || i % 2 === 0) {
        const d = await driverSide();
        return { driver: d, bare: await bareSide() };
      }
      const b = await bareSide();
      return { driver: await driverSide(), bare: b };
    };
    // A warm-up round (first lvm runs on the pool, first snapshot RPCs), not counted; the smoke
    // skips it (its figures only show that the harness works).
    if (context.scale.snapshotWarmup) await run('warmup');
    const rounds: SnapshotRound[] = [];
    for (let i = 0; i < context.scale.snapshotRounds; i++) {
      const r = await run(i);
      rounds.push(r);
      context.progress(
        `snapshots ${i + 1}/${context.scale.snapshotRounds}: ${STEPS.map(({ key, rpc }) => `${rpc} ${formatMs(r.driver[key].ms)} (bare ${formatMs(r.bare[key].ms)})`).join(', ')}`,
      );
    }
    return snapshotMetrics(rounds);
  } finally {
    await driver?.stop();
    await cleanUp(context, vg);
  }
}

/** The driver's side: CreateSnapshot, CreateVolume from it, DeleteVolume (not timed), DeleteSnapshot. */
async function driverRound(
  driver: BenchDriver,
  sourceId: string,
  prefix: string,
): Promise<SnapshotSide> {
  const created = await driver.measure('Controller', 'CreateSnapshot', {
    name: `${prefix}-snap`,
    source_volume_id: sourceId,
  });
  const snapshotId = (created.response as { snapshot: { snapshot_id: string } }).snapshot
    .snapshot_id;
  const restored = await driver.measure('Controller', 'CreateVolume', {
    name: `${prefix}-restore`,
    capacity_range: { required_bytes: String(REQUESTED_BYTES) },
    volume_capabilities: [MOUNT_CAPABILITY],
    volume_content_source: { snapshot: { snapshot_id: snapshotId } },
  });
  const volumeId = (restored.response as { volume: { volume_id: string } }).volume.volume_id;
  // measure() also waits for the call's own log line, so the next call's count starts clean.
  await driver.measure('Controller', 'DeleteVolume', { volume_id: volumeId });
  const deleted = await driver.measure('Controller', 'DeleteSnapshot', {
    snapshot_id: snapshotId,
  });
  return { createSnapshot: created, restore: restored, deleteSnapshot: deleted };
}

/**
 * The bare side, the commands and header write a script would need:
 * `lvcreate -s -pr` of the source with the snapshot's tags (the driver's
 * argv); `lvcreate -s -kn -ay -prw` of that snapshot as `lvstamp_new_<id>`
 * (the driver's argv), the new header written in-process through its
 * /dev/mapper node, `lvrename` to `lvstamp_<id>`; `lvremove` of the copy
 * (not timed); `lvremove` of the snapshot.
 */
async function bareRound(
  context: BenchContext,
  vg: BenchVg,
  sourceId: string,
  prefix: string,
): Promise<SnapshotSide> {
  const { runner } = context;
  const timedCommands = async (fn: () => Promise<void>): Promise<SnapshotCall> => {
    const mark = runner.events.length;
    const start = performance.now();
    await fn();
    return { ms: performance.now() - start, processes: countCommands(runner.since(mark)) };
  };
  const owner = [DEFAULT_NAMING.tag, ownerTagFor(BENCH_OWNER_ID)];
  const snapshotId = snapshotIdForName(`${prefix}-snap`);
  const snapshotLv = snapshotLvNameFor(snapshotId);
  const createSnapshot = await timedCommands(async () => {
    const tags = snapshotTagsFor({
      sourceVolumeId: sourceId,
      sizeBytes: REQUESTED_BYTES,
      createdMs: Date.now(),
    });
    await runner.run(
      snapshotCreateArgv({
        vgName: vg.name,
        origin: lvNameFor(sourceId),
        lvName: snapshotLv,
        tags: [...owner, ...tags],
      }),
    );
  });
  const name = `${prefix}-restore`;
  const volumeId = volumeIdForName(name);
  const restore = await timedCommands(async () => {
    const newName = newLvNameFor(volumeId);
    await runner.run(
      copyCreateArgv({
        vgName: vg.name,
        origin: snapshotLv,
        lvName: newName,
        tags: [...owner, fromTagFor({ kind: 'snapshot', id: snapshotId })],
      }),
    );
    // Benchmark VG and LV names hold no '-', so the dm name is <vg>-<lv> (no escaping).
    await new BlockHeaderIo().writeHeader(`/dev/mapper/${vg.name}-${newName}`, {
      volumeId,
      ownerId: BENCH_OWNER_ID,
      createdAtMs: Date.now(),
      dataOffsetBytes: DATA_OFFSET_BYTES,
      requestedBytes: REQUESTED_BYTES,
      name,
    });
    await runner.run(lvrenameArgv(vg.name, newName, lvNameFor(volumeId)));
  });
  await runner.run(['lvremove', '--yes', `${vg.name}/${lvNameFor(volumeId)}`]);
  const deleteSnapshot = await timedCommands(async () => {
    await runner.run(['lvremove', '--yes', `${vg.name}/${snapshotLv}`]);
  });
  return { createSnapshot, restore, deleteSnapshot };
}
