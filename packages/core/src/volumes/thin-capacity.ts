import { OutOfSpaceError, ThinPoolUnusableError } from '../errors.js';
import { DATA_OFFSET_BYTES } from '../header/constants.js';
import type { Lvm } from '../lvm/lvm.js';
import type { ThinPoolReport } from '../lvm/types.js';
import type { ThinProvisioning } from '../provisioning.js';
import { CAPACITY_BLOCK_BYTES, roundUp } from './size.js';

/** Metadata use (hundredths of a percent) at and above which a pool takes nothing new: 80 %. */
export const THIN_METADATA_LIMIT_HUNDREDTHS = 8000;

/**
 * lvm's default metadata size of a pool lvstamp creates, and of its spare
 * (`[lvol0_pmspare]`), in bytes: one 4 MiB extent each (lvmthin(7),
 * measured for 1 and 4 GiB pools).
 */
export const THIN_POOL_METADATA_BYTES = 4 * 1024 * 1024;

/**
 * What a thin pool can take, and why not:
 * - `ok`: measured; `limitBytes` may still be 0 (budget or data used up);
 * - `prospective`: the pool is absent and the class has `thinPoolSize`: what
 *   the pool will offer once the first create makes it;
 * - `absent`: no pool and no `thinPoolSize`;
 * - `unusable`: the LV of that name is not a thin pool, or its chunk zeroing is off;
 * - `inactive`: usage unknown (`data_percent` ""): activate the pool and measure again;
 * - `data-full`: data at 100 %, `out_of_data`, or `lv_attr` char 9 `D`;
 * - `metadata-full`: metadata ≥ 80 %, or `metadata_read_only`/`M`;
 * - `failed`: any other `lv_health_status`, or `F`.
 */
export type ThinPoolCondition =
  | 'ok'
  | 'prospective'
  | 'absent'
  | 'unusable'
  | 'inactive'
  | 'data-full'
  | 'metadata-full'
  | 'failed';

/** A thin pool's capacity (docs/DESIGN.md §4 "Thin capacity"). All sizes in bytes. */
export interface ThinPoolCapacity {
  readonly condition: ThinPoolCondition;
  /** Why the pool takes nothing (null when `ok` or `prospective`). */
  readonly detail: string | null;
  /** P: the pool's data size. */
  readonly poolBytes: number;
  /** U: used data, rounded against lvstamp (`data_percent` + 0.01). */
  readonly usedBytes: number;
  /** V: sum of the virtual sizes of the pool's writable thin LVs. */
  readonly promisedBytes: number;
  /** B = floor(P × ratio) − V: signed, negative when over-promised. */
  readonly budgetBytes: number;
  /** L = min(B, floor(F × ratio), P), whole extents, ≥ 0: the largest LV size a create admits. */
  readonly limitBytes: number;
  /** max(0, L − data offset) in whole 4 KiB blocks: GetCapacity's answer. */
  readonly capacityBytes: number;
  /** The pool's `lv_when_full`: `error` (writes fail when full), `queue` (writes block), null when absent. */
  readonly whenFull: string | null;
  /** Names of the thin LVs in the pool (to tell which pool a volume is in). */
  readonly thinLvNames: readonly string[];
  /** data_percent / 100 and metadata_percent / 100, null when unknown. */
  readonly dataRatio: number | null;
  readonly metadataRatio: number | null;
}

/**
 * GetCapacity of a thin class, a pure function of one pool report
 * (docs/DESIGN.md §4 "Thin capacity"):
 *
 * ```
 * U = ceil(P × (d + 0.01) / 100)        F = max(0, P − U)
 * B = floor(P × ratio) − V              (signed: never an unsigned wrap)
 * L = min(B, floor(F × ratio), P) rounded down to whole extents, ≥ 0
 * capacity = max(0, L − dataOffset) in whole 4 KiB blocks
 * ```
 *
 * 0 with a condition when the pool is full (data 100 %, metadata ≥ 80 %,
 * lvm's health status or `lv_attr` char 9), unusable, absent without
 * `thinPoolSize`, or inactive (never a guess from an empty field). Pool
 * absent with `thinPoolSize`: P = thinPoolSize (whole extents), U = V = 0,
 * but 0 when the group's free space is below P + 2 × 4 MiB (metadata and
 * its spare). The same L bounds what CreateVolume admits (thinAdmits), so
 * the answer is exactly what a create can get.
 * @param report the pool report (ThinPools.report); for an absent pool its
 *   `vgFreeBytes`/`extentSizeBytes` must be filled from `vgs`.
 */
export function thinPoolCapacity(thin: ThinProvisioning, report: ThinPoolReport): ThinPoolCapacity {
  const extent = report.extentSizeBytes ?? 1;
  const promisedBytes = report.thinLvs
    .filter((lv) => lv.writeable)
    .reduce((sum, lv) => sum + lv.sizeBytes, 0);
  const pool = report.pool;
  const thinLvNames = report.thinLvs.map((lv) => lv.lvName);
  const none = (condition: ThinPoolCondition, detail: string, poolBytes = 0) => ({
    condition,
    detail,
    poolBytes,
    usedBytes: 0,
    promisedBytes,
    budgetBytes: 0,
    limitBytes: 0,
    capacityBytes: 0,
    whenFull: pool?.whenFull ?? null,
    thinLvNames,
    dataRatio: pool?.dataHundredths == null ? null : pool.dataHundredths / 10000,
    metadataRatio: pool?.metadataHundredths == null ? null : pool.metadataHundredths / 10000,
  });
  if (pool === null) {
    if (thin.thinPoolSizeBytes === null) {
      return none('absent', 'the pool does not exist and the class has no thinPoolSize');
    }
    const poolBytes = roundUp(thin.thinPoolSizeBytes, extent);
    const needed = poolBytes + 2 * roundUp(THIN_POOL_METADATA_BYTES, extent);
    const free = report.vgFreeBytes ?? 0;
    if (free < needed) {
      return none(
        'absent',
        `the pool does not exist and its volume group has ${free} bytes free, creating it needs ${needed}`,
        poolBytes,
      );
    }
    return {
      ...measured('prospective', poolBytes, 0, 0, thin, extent, null, null),
      whenFull: null,
      thinLvNames,
    };
  }
  const where = `${pool.vgName}/${pool.poolName}`;
  if (!pool.isThinPool) {
    return none('unusable', `${where} is not a thin pool (lv_attr ${pool.attr})`, pool.sizeBytes);
  }
  if (!pool.zero) {
    return none(
      'unusable',
      `${where} does not zero new chunks (zero off): a new volume could read a deleted one's data`,
      pool.sizeBytes,
    );
  }
  const state = pool.attr[8] ?? '-';
  if (pool.healthStatus === 'out_of_data' || state === 'D' || pool.dataHundredths === 10000) {
    return none(
      'data-full',
      `thin pool ${where} is out of data space: writes fail`,
      pool.sizeBytes,
    );
  }
  if (pool.healthStatus === 'metadata_read_only' || state === 'M') {
    return none('metadata-full', `thin pool ${where} metadata is read-only`, pool.sizeBytes);
  }
  if (pool.healthStatus !== '' || state === 'F') {
    return none(
      'failed',
      `thin pool ${where} is unhealthy (${pool.healthStatus || 'failed'})`,
      pool.sizeBytes,
    );
  }
  if (pool.dataHundredths === null || pool.metadataHundredths === null) {
    return none('inactive', `thin pool ${where} is inactive: its usage is unknown`, pool.sizeBytes);
  }
  if (pool.metadataHundredths >= THIN_METADATA_LIMIT_HUNDREDTHS) {
    return none(
      'metadata-full',
      `thin pool ${where} metadata is ${pool.metadataHundredths / 100} % used (lvstamp stops at ${THIN_METADATA_LIMIT_HUNDREDTHS / 100} %)`,
      pool.sizeBytes,
    );
  }
  // U = ceil(P × (h + 1) / 10000) with h in hundredths of a percent: exact in BigInt.
  const usedBytes = Number(
    ceilDiv(BigInt(pool.sizeBytes) * BigInt(pool.dataHundredths + 1), 10000n),
  );
  const ok = measured(
    'ok',
    pool.sizeBytes,
    Math.min(usedBytes, pool.sizeBytes),
    promisedBytes,
    thin,
    extent,
    pool.dataHundredths / 10000,
    pool.metadataHundredths / 10000,
  );
  return { ...ok, whenFull: pool.whenFull, thinLvNames };
}

function measured(
  condition: 'ok' | 'prospective',
  poolBytes: number,
  usedBytes: number,
  promisedBytes: number,
  thin: ThinProvisioning,
  extent: number,
  dataRatio: number | null,
  metadataRatio: number | null,
): Omit<ThinPoolCapacity, 'thinLvNames' | 'whenFull'> {
  const freeBytes = Math.max(0, poolBytes - usedBytes);
  const budgetBytes = Math.floor(poolBytes * thin.overprovisionRatio) - promisedBytes;
  const bound = Math.min(budgetBytes, Math.floor(freeBytes * thin.overprovisionRatio), poolBytes);
  const limitBytes = Math.max(0, Math.floor(bound / extent) * extent);
  return {
    condition,
    detail: null,
    poolBytes,
    usedBytes,
    promisedBytes,
    budgetBytes,
    limitBytes,
    capacityBytes: Math.max(
      0,
      Math.floor((limitBytes - DATA_OFFSET_BYTES) / CAPACITY_BLOCK_BYTES) * CAPACITY_BLOCK_BYTES,
    ),
    dataRatio,
    metadataRatio,
  };
}

function ceilDiv(a: bigint, b: bigint): bigint {
  return (a + b - 1n) / b;
}

/**
 * Whether a thin pool admits `growBytes` more of virtual size for a volume
 * whose LV would then be `lvSizeBytes` (a create: both the new LV's size;
 * an expansion: the growth and the new size), by the rule of
 * thinPoolCapacity: the pool measured `ok` or `prospective`, growth ≤ L's
 * budget and free-space bounds, and the LV no larger than the pool.
 * @returns null when admitted, else why not (for OutOfSpaceError).
 */
export function thinAdmits(
  capacity: ThinPoolCapacity,
  growBytes: number,
  lvSizeBytes: number,
): string | null {
  if (capacity.condition !== 'ok' && capacity.condition !== 'prospective') {
    return capacity.detail ?? capacity.condition;
  }
  if (lvSizeBytes > capacity.poolBytes) {
    return `a ${lvSizeBytes}-byte volume is larger than its ${capacity.poolBytes}-byte thin pool`;
  }
  if (growBytes > capacity.limitBytes) {
    return `the thin pool admits ${capacity.limitBytes} bytes more (pool ${capacity.poolBytes}, used ${capacity.usedBytes}, promised ${capacity.promisedBytes}, budget ${capacity.budgetBytes}), the volume needs ${growBytes}`;
  }
  return null;
}

/**
 * A thin pool's report, measured: an inactive pool (usage unknown) is
 * activated alone (`lvchange -ay VG/POOL`) and reported again; when the
 * report has no row (pool absent), `vgs` gives the group's free space for a
 * pool still to be created. Changes nothing else.
 * @throws NotFoundError, VolumeGroupUnusableError; CommandFailedError,
 *   CommandTimeoutError, UnparseableOutputError, LockTimeoutError.
 */
export async function measureThinPool(
  lvm: Pick<Lvm, 'thinPools' | 'volumeGroups'>,
  vgName: string,
  thin: ThinProvisioning,
): Promise<ThinPoolReport> {
  let report = await lvm.thinPools.report(vgName, thin.thinPool);
  const pool = report.pool;
  if (pool !== null && pool.isThinPool && pool.dataHundredths === null) {
    await lvm.thinPools.activate(vgName, thin.thinPool);
    report = await lvm.thinPools.report(vgName, thin.thinPool);
  }
  if (report.vgFreeBytes === null) {
    const vg = await lvm.volumeGroups.get(vgName);
    report = { ...report, vgFreeBytes: vg.freeBytes, extentSizeBytes: vg.extentSizeBytes };
  }
  return report;
}

/**
 * The thin-pool admission step of a create, a copy and an expansion
 * (DESIGN.md §4 "Thin capacity"): with `usable`, a pool that is absent or
 * unusable is refused; then thinAdmits for `growBytes` more, the LV then
 * `lvSizeBytes`. `what` completes "thin pool VG/POOL cannot …".
 * @throws ThinPoolUnusableError; OutOfSpaceError with thinAdmits' reason.
 */
export function requireThinAdmits(
  vgName: string,
  thin: ThinProvisioning,
  capacity: ThinPoolCapacity,
  sizes: { readonly growBytes: number; readonly lvSizeBytes: number },
  what: string,
  usable = true,
): void {
  if (usable && (capacity.condition === 'unusable' || capacity.condition === 'absent')) {
    throw new ThinPoolUnusableError(vgName, thin.thinPool, capacity.detail ?? capacity.condition);
  }
  const refused = thinAdmits(capacity, sizes.growBytes, sizes.lvSizeBytes);
  if (refused !== null) {
    throw new OutOfSpaceError(`thin pool ${vgName}/${thin.thinPool} cannot ${what}: ${refused}`);
  }
}
