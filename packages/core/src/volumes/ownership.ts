/**
 * The one home of DESIGN.md §2.3's ownership proof: the tag rule, the header
 * check and the capacity a header gives. The `failed*` predicates are pure
 * and never throw (the GC planner reports them as reasons); the `require*`
 * forms throw one NotOwnedError per failed signal (the volume operations).
 */
import { FailedPreconditionError, NotOwnedError, type OwnershipCheck } from '../errors.js';
import type { DecodeResult, HeaderFields } from '../header/types.js';
import type { LogicalVolume } from '../lvm/types.js';
import { ownerTagFor, type Naming } from '../naming.js';
import type { HeaderIo } from './header-io.js';
import type { HeaderReading } from './header-reading.js';
import { capacityOf } from './size.js';

/** Active in the kernel with a device lvm reports (an inactive LV keeps its lv_dm_path). */
export function isActive(lv: LogicalVolume): boolean {
  return lv.active && lv.kernelMajor !== null;
}

/** One failed ownership signal: the check's name and what was seen, in words. */
export interface FailedCheck {
  readonly check: OwnershipCheck;
  readonly detail: string;
}

/** An `ok` header that passed the header check. */
export interface OwnedHeader {
  readonly version: 1 | 2;
  readonly header: HeaderFields;
  /** What the header gives the volume (capacityOf), bytes; null when it does not fit the LV. */
  readonly capacityBytes: number | null;
}

/**
 * The tag rule of DESIGN.md §2.3: the first missing tag (`check` 'tag' for
 * the lvstamp tag, then 'owner-tag' for `lvstamp.owner=<ownerId>`), or null
 * when the LV carries both. Pure.
 */
export function failedTagCheck(
  lv: { readonly tags: readonly string[] },
  ownerId: string,
  naming: Naming,
): FailedCheck | null {
  const tags = lv.tags.length === 0 ? 'none' : lv.tags.join(',');
  if (!lv.tags.includes(naming.tag))
    return { check: 'tag', detail: `it lacks the tag ${naming.tag} (tags: ${tags})` };
  const ownerTag = ownerTagFor(ownerId, naming);
  if (!lv.tags.includes(ownerTag))
    return { check: 'owner-tag', detail: `it lacks the owner tag ${ownerTag} (tags: ${tags})` };
  return null;
}

/**
 * The header check of DESIGN.md §2.3 on what sector 0 said: `ok`
 * ('header'), carrying `volumeId` ('header-id': the ID of the LV's name, or
 * for a snapshot its source's) and `ownerId` ('header-owner'). Null when all
 * hold. Pure.
 */
export function failedHeaderCheck(
  reading: HeaderReading,
  volumeId: string,
  ownerId: string,
): FailedCheck | null {
  if (reading.status !== 'ok')
    return { check: 'header', detail: `its header is ${reading.status}` };
  if (reading.header.volumeId !== volumeId) {
    return {
      check: 'header-id',
      detail: `its header belongs to volume ${reading.header.volumeId}, not ${volumeId}`,
    };
  }
  if (reading.header.ownerId !== ownerId) {
    return {
      check: 'header-owner',
      detail: `its header names owner ${reading.header.ownerId}, not ${ownerId}`,
    };
  }
  return null;
}

/** The NotOwnedError of a failed check on `lv`, before `act` (e.g. "delete"). */
export function notOwned(
  lv: { readonly vgName: string; readonly lvName: string },
  failed: FailedCheck,
  act: string,
): NotOwnedError {
  return new NotOwnedError(
    `${lv.vgName}/${lv.lvName}`,
    failed.check,
    `refusing to ${act}: ${failed.detail}`,
  );
}

/**
 * Requires both tags of DESIGN.md §2.3 on the LV before `act`.
 * @throws NotOwnedError naming the LV and the failed check ('tag', 'owner-tag').
 */
export function requireOwnerTags(
  lv: LogicalVolume,
  ownerId: string,
  naming: Naming,
  act: string,
): void {
  const failed = failedTagCheck(lv, ownerId, naming);
  if (failed !== null) throw notOwned(lv, failed, act);
}

/** An `ok` header as owned: its version, fields and the capacity it gives an LV of `lvSizeBytes`. */
export function ownedHeaderOf(
  decoded: DecodeResult & { readonly status: 'ok' },
  lvSizeBytes: number,
): OwnedHeader {
  return {
    version: decoded.version,
    header: decoded.header,
    capacityBytes: capacityOf({ version: decoded.version, ...decoded.header }, lvSizeBytes),
  };
}

/**
 * Reads sector 0 of the active LV and requires the header check of DESIGN.md
 * §2.3 before `act`: `expected.volumeId` is the ID of the LV's name, or for
 * a snapshot LV its source's (sector 0 is the source's header).
 * @returns the header, its version and the capacity it gives (null when it
 *   does not fit the LV; requireCapacity refuses that).
 * @throws NotOwnedError ('header' when inactive or not `ok`, 'header-id',
 *   'header-owner'); what `headers.readHeader` throws.
 */
export async function requireOwnerHeader(
  lv: LogicalVolume,
  expected: { readonly volumeId: string; readonly ownerId: string },
  headers: Pick<HeaderIo, 'readHeader'>,
  act: string,
): Promise<OwnedHeader> {
  if (!isActive(lv) || lv.dmPath === null) {
    throw notOwned(lv, { check: 'header', detail: 'its header cannot be read' }, act);
  }
  const reading = await headers.readHeader(lv.dmPath);
  const failed = failedHeaderCheck(reading, expected.volumeId, expected.ownerId);
  if (failed !== null) throw notOwned(lv, failed, act);
  if (reading.status !== 'ok') throw notOwned(lv, { check: 'header', detail: 'no header' }, act);
  return ownedHeaderOf(reading, lv.sizeBytes);
}

/**
 * The capacity an owned header gives the volume (DESIGN.md §4 "Capacity").
 * @throws FailedPreconditionError when the header does not fit the LV.
 */
export function requireCapacity(
  owned: OwnedHeader,
  lv: { readonly vgName: string; readonly lvName: string; readonly sizeBytes: number },
): number {
  if (owned.capacityBytes === null) {
    throw new FailedPreconditionError(
      `${lv.vgName}/${lv.lvName}: its v${owned.version} header (data offset ${owned.header.dataOffsetBytes}, capacity ${owned.header.requestedBytes}) does not fit its ${lv.sizeBytes}-byte LV; refusing`,
    );
  }
  return owned.capacityBytes;
}
