/**
 * The one create protocol (DESIGN.md §5 "Create"), shared by create
 * (create.ts) and by restore and clone (copy.ts): every leftover
 * `lvstamp_new_<id>` of the scope removed after its tags (prepareNewLv),
 * the new LV made as `lvstamp_new_<id>` (makeThickLv for a thick one), its
 * header written and flushed, then `lvrename` to `lvstamp_<id>`
 * (stampAndRename). The caller holds the host lock across all of it.
 */
import { DATA_OFFSET_BYTES } from '../header/constants.js';
import type { HeaderFields } from '../header/types.js';
import type { GroupsReport } from '../lvm/volume-groups.js';
import { lvDmName, lvNameFor, newLvNameFor, ownerTagFor } from '../naming.js';
import { requireUsableGroups } from './lookup.js';
import { requireOwnerTags } from './ownership.js';
import type { CoreParts } from './parts.js';
import type { VolumeSize } from './size.js';
import type { Volume } from './types.js';

/**
 * The create protocol's first step (DESIGN.md §5): every leftover
 * `lvstamp_new_<id>` of the scope, in whatever group, is removed after its
 * tags prove it this owner's (it has no header yet), each group checked
 * usable first. The caller holds the host lock.
 * @returns the bytes freed in `vgName`.
 * @throws NotOwnedError, VolumeGroupUnusableError; CommandFailedError.
 */
export async function prepareNewLv(
  p: CoreParts,
  vgName: string,
  pending: readonly Volume[],
  groups: GroupsReport,
  ownerId: string,
): Promise<number> {
  await requireUsableGroups(p, pending, groups);
  for (const leftover of pending) requireOwnerTags(leftover, ownerId, p.naming, 'remove');
  let freed = 0;
  for (const leftover of pending) {
    await p.lvm.logicalVolumes.remove(leftover.vgName, leftover.lvName);
    if (leftover.vgName === vgName) freed += leftover.sizeBytes;
  }
  return freed;
}

/**
 * The create protocol's last step: the header written and flushed on
 * `lvstamp_new_<id>` (made active by lvcreate; its path is lvm's naming
 * rule, lvDmName), then `lvrename` to `lvstamp_<id>`. The caller holds the
 * host lock.
 * @returns the finished LV's name.
 */
export async function stampAndRename(
  p: CoreParts,
  vgName: string,
  header: HeaderFields,
): Promise<string> {
  const newLvName = newLvNameFor(header.volumeId, p.naming);
  await p.headers.writeHeader(newLvPath(vgName, newLvName), header);
  const finalLvName = lvNameFor(header.volumeId, p.naming);
  await p.lvm.logicalVolumes.rename(vgName, newLvName, finalLvName);
  return finalLvName;
}

/** `/dev/mapper/<vg>-<lv>` of an LV lvcreate just made active (lvDmName: no read-back). */
export function newLvPath(vgName: string, lvName: string): string {
  return `/dev/mapper/${lvDmName(vgName, lvName)}`;
}

/** A new v2 header of this create: data at DATA_OFFSET_BYTES, `capacityBytes` behind it. */
export function newHeader(
  p: CoreParts,
  fields: { volumeId: string; ownerId: string; name: string; capacityBytes: number },
): HeaderFields {
  return {
    volumeId: fields.volumeId,
    ownerId: fields.ownerId,
    createdAtMs: p.clock(),
    dataOffsetBytes: DATA_OFFSET_BYTES,
    requestedBytes: fields.capacityBytes,
    name: fields.name,
  };
}

/**
 * A thick create's `lvstamp_new_<id>`: `lvcreate` of `size.lvSizeBytes`
 * (lvm rounds it up to whole extents) with both tags, then the first and
 * last MiB of the data area (`size.capacityBytes` behind the data offset)
 * zeroed: the extents may have held a deleted volume, whose filesystem must
 * not show through (DESIGN.md §5 "Create"). A thin LV needs no clearing: it
 * reads zeros everywhere, and clearing would map 2 MiB of the pool's chunks.
 * @throws what LogicalVolumes.create and HeaderIo.clearDataArea throw.
 */
export async function makeThickLv(
  p: CoreParts,
  vgName: string,
  ids: { readonly volumeId: string; readonly ownerId: string },
  size: VolumeSize,
): Promise<void> {
  const lvName = newLvNameFor(ids.volumeId, p.naming);
  await p.lvm.logicalVolumes.create({
    vgName,
    lvName,
    sizeBytes: size.lvSizeBytes,
    tags: [p.naming.tag, ownerTagFor(ids.ownerId, p.naming)],
  });
  await p.headers.clearDataArea(newLvPath(vgName, lvName), {
    dataOffsetBytes: DATA_OFFSET_BYTES,
    sizeBytes: DATA_OFFSET_BYTES + size.capacityBytes,
  });
}
