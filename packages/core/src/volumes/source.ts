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
import {
  failedHeaderCheck,
  notOwned,
  ownedHeaderOf,
  requireCapacity,
  type OwnedHeader,
} from './ownership.js';
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
 * Requires a decoded sector 0 to be `volumeId`'s header of `ownerId` (the
 * header check of ownership.ts) with lvstamp's data offset, before `act`.
 * `lv` is the LV the refusal names; `readFrom` says where sector 0 was read
 * when that is another LV (a copy of `lv`).
 * @returns the header, its version and the capacity it gives `lv`.
 * @throws NotOwnedError ('header', 'header-id', 'header-owner'), the same
 *   refusal as attach, expand and delete; FailedPreconditionError for
 *   another data offset.
 */
export function requireSourceHeader(
  decoded: DecodeResult,
  lv: LogicalVolume,
  expected: { readonly volumeId: string; readonly ownerId: string },
  act: string,
  readFrom = '',
): OwnedHeader {
  const failed = failedHeaderCheck(decoded, expected.volumeId, expected.ownerId);
  if (failed !== null || decoded.status !== 'ok') {
    const { check, detail } = failed ?? { check: 'header' as const, detail: 'no header' };
    throw notOwned(lv, { check, detail: `${detail}${readFrom}` }, act);
  }
  if (decoded.header.dataOffsetBytes !== DATA_OFFSET_BYTES) {
    throw new FailedPreconditionError(
      `${lv.vgName}/${lv.lvName}: its data offset is ${decoded.header.dataOffsetBytes}, not ${DATA_OFFSET_BYTES}${readFrom}; refusing to ${act}`,
    );
  }
  return ownedHeaderOf(decoded, lv.sizeBytes);
}

/**
 * The header of an active source LV (requireSourceHeader) and the capacity
 * it gives.
 * @throws as requireSourceHeader; FailedPreconditionError when the header
 *   does not fit the LV (requireCapacity).
 */
export async function sourceHeader(
  p: CoreParts,
  lv: LogicalVolume,
  expected: { readonly volumeId: string; readonly ownerId: string },
  act: string,
): Promise<{ name: string; capacityBytes: number }> {
  const decoded = await p.headers.readHeader(lv.dmPath ?? '');
  const owned = requireSourceHeader(decoded, lv, expected, act);
  return { name: owned.header.name, capacityBytes: requireCapacity(owned, lv) };
}
