import { NotOwnedError, type OwnershipCheck } from '../errors.js';
import type { DecodeResult } from '../header/types.js';
import type { LogicalVolume, Volume } from '../lvm/types.js';
import { ownerTagFor, type Naming } from '../naming.js';
import type { HeaderIo } from './header-io.js';

/** Active in the kernel with a device lvm reports (an inactive LV keeps its lv_dm_path). */
export function isActive(lv: LogicalVolume): boolean {
  return lv.active && lv.kernelMajor !== null;
}

/**
 * The first failed tag check of DESIGN.md §2.3 (the lvstamp tag, then
 * `lvstamp.owner=<ownerId>`) with its detail, or null when both pass.
 */
export function failedTagCheck(
  lv: LogicalVolume,
  ownerId: string,
  naming: Naming,
): [OwnershipCheck, string] | null {
  const tags = lv.tags.length === 0 ? 'none' : lv.tags.join(',');
  if (!lv.tags.includes(naming.tag))
    return ['tag', `it lacks the tag ${naming.tag} (tags: ${tags})`];
  const ownerTag = ownerTagFor(ownerId, naming);
  if (!lv.tags.includes(ownerTag))
    return ['owner-tag', `it lacks the owner tag ${ownerTag} (tags: ${tags})`];
  return null;
}

/**
 * Requires both tags of DESIGN.md §2.3 on the LV before `act`.
 * @throws NotOwnedError naming the LV and the failed check.
 */
export function requireOwnerTags(
  lv: LogicalVolume,
  ownerId: string,
  naming: Naming,
  act: string,
): void {
  const failed = failedTagCheck(lv, ownerId, naming);
  if (failed !== null) {
    const [check, detail] = failed;
    throw new NotOwnedError(`${lv.vgName}/${lv.lvName}`, check, `refusing to ${act}: ${detail}`);
  }
}

/**
 * The valid header of the active LV whose volume ID matches its name and
 * whose owner is `ownerId` (DESIGN.md §2.3), read before `act`.
 * @throws NotOwnedError naming the failed check (header, header-id, header-owner).
 */
export async function requireOwnerHeader(
  volume: Volume,
  ownerId: string,
  headers: Pick<HeaderIo, 'readHeader'>,
  act: string,
): Promise<DecodeResult & { status: 'ok' }> {
  const where = `${volume.vgName}/${volume.lvName}`;
  const refuse = (check: OwnershipCheck, detail: string): never => {
    throw new NotOwnedError(where, check, `refusing to ${act}: ${detail}`);
  };
  if (!isActive(volume) || volume.dmPath === null) refuse('header', 'its header cannot be read');
  const decoded = await headers.readHeader(volume.dmPath ?? '');
  if (decoded.status !== 'ok') return refuse('header', `its header is ${decoded.status}`);
  if (decoded.header.volumeId !== volume.volumeId)
    refuse('header-id', `its header belongs to volume ${decoded.header.volumeId}`);
  if (decoded.header.ownerId !== ownerId)
    refuse('header-owner', `its header names owner ${decoded.header.ownerId}, not ${ownerId}`);
  return decoded;
}
