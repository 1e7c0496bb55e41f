import {
  VolumeGroupUnusableError,
  type ThinClassPool,
  type Volume,
  type VolumeStatus,
} from '@lvstamp/core';
import type { DriverCore } from './ports.js';

/**
 * The volume condition of NodeGetVolumeStats (CSI spec VolumeCondition;
 * node capability VOLUME_CONDITION): abnormal, with the reason, when the LV
 * is not active, its volume group is broken (docs/LVM-CONFIG.md) or its thin
 * pool cannot take writes (DESIGN.md §4 "Thin capacity"); else `ok`.
 * @param volumeId the requested volume ID, as the message names it.
 */
export async function volumeCondition(
  core: Pick<DriverCore, 'volumes'>,
  status: VolumeStatus,
  volumeId: string,
  thinPools: readonly ThinClassPool[],
): Promise<{ abnormal: boolean; message: string }> {
  const broken =
    (await volumeGroupProblem(core, status.volume.vgName)) ??
    (await thinPoolProblem(core, status.volume, thinPools));
  return !status.volume.active
    ? { abnormal: true, message: `the logical volume of ${volumeId} is not active` }
    : broken !== null
      ? { abnormal: true, message: broken }
      : { abnormal: false, message: 'ok' };
}

/**
 * Why the volume group cannot be changed (a PV missing or seen twice,
 * read-only, shared: docs/LVM-CONFIG.md), or null when it can: the volume
 * still serves I/O, but cannot be expanded or deleted until it is repaired.
 */
async function volumeGroupProblem(
  core: Pick<DriverCore, 'volumes'>,
  vgName: string,
): Promise<string | null> {
  try {
    await core.volumes.capacity(vgName);
    return null;
  } catch (error) {
    if (error instanceof VolumeGroupUnusableError) return error.message;
    throw error;
  }
}

/**
 * Why the thin pool of a thin volume cannot take writes, or null: the pool
 * out of data space, its metadata at or above 80 % or read-only, or
 * unhealthy (DESIGN.md §4 "Thin capacity"). A thick volume, or a thin one in
 * a pool no class names, has no pool problem to report.
 */
async function thinPoolProblem(
  core: Pick<DriverCore, 'volumes'>,
  volume: Volume,
  thinPools: readonly ThinClassPool[],
): Promise<string | null> {
  if (!volume.attr.startsWith('V')) return null;
  for (const { vgName, thin } of thinPools) {
    if (vgName !== volume.vgName) continue;
    const pool = await core.volumes.thinPoolCapacity(vgName, thin);
    if (!pool.thinLvNames.includes(volume.lvName)) continue;
    const full = ['data-full', 'metadata-full', 'failed'].includes(pool.condition);
    return full ? (pool.detail ?? pool.condition) : null;
  }
  return null;
}
