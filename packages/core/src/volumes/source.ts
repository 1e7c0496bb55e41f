/**
 * The source of a snapshot or a copy (docs/DESIGN.md §5 "Snapshots",
 * "Restore and clone"): a thin LV whose sector 0 is this owner's header of
 * the source volume, with lvstamp's data offset (a copy's new header keeps
 * the data where the source had it).
 */
import { FailedPreconditionError, InvalidArgumentError } from '../errors.js';
import { DATA_OFFSET_BYTES } from '../header/constants.js';
import type { DecodeResult } from '../header/types.js';
import type { LogicalVolume } from '../lvm/types.js';
import { failedHeaderCheck, ownedHeaderOf, requireCapacity } from './ownership.js';
import type { CoreParts } from './parts.js';

/**
 * A thick (non-thin) LV was asked to be snapshotted or copied: lvstamp
 * makes no block copies (docs/DESIGN.md §5 "Snapshots").
 */
export class ThickVolumeError extends InvalidArgumentError {
  /** `vg/lv` of the thick LV. */
  readonly lv: string;
  readonly vgName: string;

  constructor(what: string, lv: LogicalVolume) {
    super(
      `${what} is the thick logical volume ${lv.vgName}/${lv.lvName}; snapshots and clones need a thin class (docs/DESIGN.md §5)`,
    );
    this.lv = `${lv.vgName}/${lv.lvName}`;
    this.vgName = lv.vgName;
  }
}

/**
 * Why a decoded sector 0 is not `volumeId`'s header of `ownerId` with
 * lvstamp's data offset (the header check of ownership.ts, then the
 * offset); null when it is.
 */
export function sourceHeaderProblem(
  decoded: DecodeResult,
  volumeId: string,
  ownerId: string,
): string | null {
  const failed = failedHeaderCheck(decoded, volumeId, ownerId);
  if (failed !== null) return failed.detail;
  if (decoded.status === 'ok' && decoded.header.dataOffsetBytes !== DATA_OFFSET_BYTES)
    return `its data offset is ${decoded.header.dataOffsetBytes}, not ${DATA_OFFSET_BYTES}`;
  return null;
}

/**
 * The header of an active source LV (sourceHeaderProblem) and the capacity
 * it gives.
 * @throws FailedPreconditionError naming the LV and the problem, or when
 *   the header does not fit the LV.
 */
export async function sourceHeader(
  p: CoreParts,
  lv: LogicalVolume,
  volumeId: string,
  ownerId: string,
): Promise<{ name: string; capacityBytes: number }> {
  const decoded = await p.headers.readHeader(lv.dmPath ?? '');
  const problem = sourceHeaderProblem(decoded, volumeId, ownerId);
  if (problem !== null || decoded.status !== 'ok') {
    throw new FailedPreconditionError(`${lv.vgName}/${lv.lvName}: ${problem ?? 'header not ok'}`);
  }
  const capacityBytes = requireCapacity(ownedHeaderOf(decoded, lv.sizeBytes), lv);
  return { name: decoded.header.name, capacityBytes };
}
