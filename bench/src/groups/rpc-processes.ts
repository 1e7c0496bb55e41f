// The processes behind each RPC of a volume's whole life on a node (part of the `create-delete` group): CreateVolume,
// NodeStageVolume (data device, mkfs, mount), NodePublishVolume (bind mount), NodeUnpublishVolume,
// NodeUnstageVolume, DeleteVolume, through the built driver, counted from its debug log. Counts are
// compared with the baseline (a count that grows fails `bench:check`); times are context.
import { join } from 'node:path';
import type { BenchContext } from '../context.js';
import { MOUNT_CAPABILITY, type BenchDriver } from '../driver.js';
import type { ProcessCount } from '../exec.js';
import type { BenchVg } from '../fixture.js';
import { formatMs, median, MiB, round } from '../stats.js';
import type { Metric } from '../types.js';

/** The RPCs of one life cycle, in the order a CO calls them. */
export const LIFECYCLE_RPCS = [
  'CreateVolume',
  'NodeStageVolume',
  'NodePublishVolume',
  'NodeUnpublishVolume',
  'NodeUnstageVolume',
  'DeleteVolume',
] as const;
export type LifecycleRpc = (typeof LIFECYCLE_RPCS)[number];

/**
 * The issue's ceilings on lvm processes per RPC: CreateVolume one report,
 * lvcreate, lvrename; DeleteVolume one report and lvremove (a `dmsetup
 * remove` when a map exists is not an lvm process).
 */
const LVM_CEILING: Partial<Record<LifecycleRpc, number>> = { CreateVolume: 3, DeleteVolume: 2 };

/** Requested capacity: 16 MiB (ext4 formats it in well under a second even emulated). */
const REQUESTED_BYTES = 16 * MiB;

interface Call {
  readonly ms: number;
  readonly processes: ProcessCount;
}

/**
 * Runs `cycles` life cycles of fresh volumes (each one formatted by its
 * first stage, as in a cluster) after one warm-up cycle, and returns per
 * RPC: lvm processes and other processes (`rpc.<Rpc>.lvm-processes`,
 * `rpc.<Rpc>.other-processes`, counts of the first measured cycle, the
 * program sequence in the note) and the median wall time (`rpc.<Rpc>.ms`).
 * @throws Error when an RPC fails (the group fails).
 */
export async function rpcProcesses(
  context: BenchContext,
  driver: BenchDriver,
  vg: BenchVg,
  cycles: number,
): Promise<Metric[]> {
  await lifecycle(driver, vg, `${vg.name}-life-warmup`);
  const calls: Record<LifecycleRpc, Call[]> = {
    CreateVolume: [],
    NodeStageVolume: [],
    NodePublishVolume: [],
    NodeUnpublishVolume: [],
    NodeUnstageVolume: [],
    DeleteVolume: [],
  };
  for (let i = 0; i < cycles; i++) {
    const cycle = await lifecycle(driver, vg, `${vg.name}-life-${i}`);
    for (const rpc of LIFECYCLE_RPCS) calls[rpc].push(cycle[rpc]);
    context.progress(
      `life cycle ${i + 1}/${cycles}: ${LIFECYCLE_RPCS.map((rpc) => `${rpc} ${formatMs(cycle[rpc].ms)}`).join(', ')}`,
    );
  }
  return LIFECYCLE_RPCS.flatMap((rpc): Metric[] => {
    const first = calls[rpc][0]?.processes ?? { lvm: 0, other: 0, sequence: '', ms: 0 };
    const ms = median(calls[rpc].map((c) => c.ms));
    return rpcMetrics(
      rpc,
      'create-delete',
      first,
      ms,
      `median of ${calls[rpc].length}; in processes ${formatMs(median(calls[rpc].map((c) => c.processes.ms)))}`,
      LVM_CEILING[rpc],
    );
  });
}

/**
 * The three metrics of one RPC in `group`: `rpc.<RPC>.lvm-processes` and
 * `.other-processes` (counts of its first call; lvm ones held to
 * `lvmCeiling` when given) and `.ms` (wall time in milliseconds, `msNote`
 * saying how it was taken).
 */
export function rpcMetrics(
  rpc: string,
  group: Metric['group'],
  first: ProcessCount,
  ms: number,
  msNote: string,
  lvmCeiling?: number,
): Metric[] {
  return [
    {
      id: `rpc.${rpc}.lvm-processes`,
      group,
      label: `${rpc}: lvm processes`,
      value: first.lvm,
      unit: 'count',
      better: 'lower',
      ...(lvmCeiling === undefined ? {} : { target: { op: '<=' as const, value: lvmCeiling } }),
      compared: true,
      note: first.sequence === '' ? 'none' : first.sequence,
    },
    {
      id: `rpc.${rpc}.other-processes`,
      group,
      label: `${rpc}: other processes`,
      value: first.other,
      unit: 'count',
      better: 'lower',
      compared: true,
    },
    {
      id: `rpc.${rpc}.ms`,
      group,
      label: `${rpc}: wall time`,
      value: round(ms, 1),
      unit: 'ms',
      better: 'lower',
      compared: false,
      note: msNote,
    },
  ];
}

/** One volume from CreateVolume to DeleteVolume, a filesystem volume mounted at a target. */
async function lifecycle(
  driver: BenchDriver,
  vg: BenchVg,
  name: string,
): Promise<Record<LifecycleRpc, Call>> {
  const created = await driver.measure('Controller', 'CreateVolume', {
    name,
    capacity_range: { required_bytes: String(REQUESTED_BYTES) },
    volume_capabilities: [MOUNT_CAPABILITY],
  });
  const volumeId = (created.response as { volume: { volume_id: string } }).volume.volume_id;
  const staging = join(vg.dir, `staging-${volumeId}`);
  const target = join(vg.dir, `target-${volumeId}`);
  const stage = await driver.measure('Node', 'NodeStageVolume', {
    volume_id: volumeId,
    staging_target_path: staging,
    volume_capability: MOUNT_CAPABILITY,
  });
  const publish = await driver.measure('Node', 'NodePublishVolume', {
    volume_id: volumeId,
    staging_target_path: staging,
    target_path: target,
    volume_capability: MOUNT_CAPABILITY,
    readonly: false,
  });
  const unpublish = await driver.measure('Node', 'NodeUnpublishVolume', {
    volume_id: volumeId,
    target_path: target,
  });
  const unstage = await driver.measure('Node', 'NodeUnstageVolume', {
    volume_id: volumeId,
    staging_target_path: staging,
  });
  const deleted = await driver.measure('Controller', 'DeleteVolume', { volume_id: volumeId });
  return {
    CreateVolume: created,
    NodeStageVolume: stage,
    NodePublishVolume: publish,
    NodeUnpublishVolume: unpublish,
    NodeUnstageVolume: unstage,
    DeleteVolume: deleted,
  };
}
