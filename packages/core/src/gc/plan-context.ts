/**
 * What every rule of the GC planner reads (DESIGN.md §6): the plan's context,
 * an LV's ownership (rule 1) and its age (rule 3).
 */

import { parseFromTag } from '../naming.js';
import type { GcPolicy, Inventory, InventoryMap, InventoryVolume } from './types.js';
import { formatDuration, formatTime } from './util.js';
import { failedHeaderCheck, failedTagCheck } from '../volumes/ownership.js';

export interface PlanContext {
  readonly policy: GcPolicy;
  readonly liveSet: ReadonlySet<string>;
  /** Null when the caller gave none: every snapshot is kept. */
  readonly snapshotLiveSet: ReadonlySet<string> | null;
  readonly nowMs: number;
  readonly ownerTag: string;
  readonly ownerTagPrefix: string;
  readonly inventory: Inventory;
  readonly volumeByDevice: ReadonlyMap<string, InventoryVolume>;
  readonly volumeIds: ReadonlySet<string>;
  readonly mapByName: ReadonlyMap<string, InventoryMap>;
}

/** The second ownership signal of an LV, or why there is none. */
export type Ownership =
  | {
      readonly proved: true;
      readonly evidence: 'header' | 'owner-tag' | 'source-header';
      /** For `source-header`: the volume ID in the header. */
      readonly headerVolumeId?: string;
      /** Creation time the age is measured from, Unix ms, or null when unknown. */
      readonly createdAtMs: number | null;
      /** Where `createdAtMs` comes from, for reasons. */
      readonly createdFrom: string;
    }
  | { readonly proved: false; readonly reason: string };

export function ownershipOf(v: InventoryVolume, context: PlanContext): Ownership {
  const { header } = v;
  switch (header.status) {
    case 'ok': {
      const fields = header.header;
      const failed = failedHeaderCheck(header, v.volumeId, context.policy.ownerId);
      if (failed?.check === 'header-id' && v.creating) return copyOwnership(v, fields, context);
      if (failed?.check === 'header-id') {
        return refused(
          `header volume ID ${fields.volumeId} does not match the name's ID ${v.volumeId}; never deleted automatically`,
        );
      }
      if (failed !== null) {
        return refused(
          `owned by another installation: header owner ${fields.ownerId}, this GC's owner ${context.policy.ownerId}`,
        );
      }
      // The remover re-checks the tags before lvremove (DESIGN.md §2.3): plan what it will do.
      if (failedTagCheck(v, context.policy.ownerId, context.inventory.naming) !== null) {
        return refused(
          `valid header of this owner, but the LV lacks the tags ${context.inventory.naming.tag} and ${context.ownerTag}; never deleted automatically`,
        );
      }
      return {
        proved: true,
        evidence: 'header',
        createdAtMs: fields.createdAtMs,
        createdFrom: 'header createdAt',
      };
    }
    case 'not-stamped': {
      if (!v.creating) {
        return refused(
          `prefixed name but no header in sector 0 (${header.reason}); a finished volume without a valid header is never deleted automatically`,
        );
      }
      // Headerless: the tags are the second signal, both of them (DESIGN.md §2.3).
      const failed = failedTagCheck(v, context.policy.ownerId, context.inventory.naming);
      if (failed !== null) {
        const other = v.tags.find((t) => t.startsWith(context.ownerTagPrefix));
        return refused(
          failed.check === 'tag'
            ? `interrupted create without header and without the tag ${context.inventory.naming.tag}: only one ownership signal`
            : other === undefined
              ? `interrupted create without header and without the owner tag ${context.ownerTag}: only one ownership signal`
              : `interrupted create without header, tagged for another owner (${other})`,
        );
      }
      return {
        proved: true,
        evidence: 'owner-tag',
        createdAtMs: v.lvCreatedAtMs,
        createdFrom: 'LV creation time',
      };
    }
    case 'unsupported':
      return refused(
        `header version ${header.version} is newer than this lvstamp understands (${header.reason}); never modified or deleted`,
      );
    case 'corrupt':
      return refused(`header corrupt: ${header.reason}; never deleted automatically`);
    case 'unreadable':
      return refused(`header unreadable: ${header.reason}; kept until it can be read`);
  }
}

/**
 * An `lvstamp_new_<id>` whose `ok` header carries another volume ID: an
 * interrupted restore or clone (the copy still holds its source's header)
 * when it carries the lvstamp tag, the owner tag and `lvstamp.from=…`, and
 * the header is of this owner (for `volume.<id>`, with that ID).
 */
export function copyOwnership(
  v: InventoryVolume,
  fields: { readonly volumeId: string; readonly ownerId: string },
  context: PlanContext,
): Ownership {
  const mismatch = `header volume ID ${fields.volumeId} does not match the name's ID ${v.volumeId}`;
  const from = parseFromTag(v.tags, context.inventory.naming);
  if (from === null) {
    return refused(
      `${mismatch} and no ${context.inventory.naming.tag}.from tag (not an interrupted restore or clone); never deleted automatically`,
    );
  }
  if (failedTagCheck(v, context.policy.ownerId, context.inventory.naming) !== null) {
    return refused(
      `interrupted restore or clone without the tags ${context.inventory.naming.tag} and ${context.ownerTag}: only one ownership signal`,
    );
  }
  if (fields.ownerId !== context.policy.ownerId) {
    return refused(
      `interrupted restore or clone whose header is another installation's (owner ${fields.ownerId}, this GC's owner ${context.policy.ownerId})`,
    );
  }
  if (from.kind === 'volume' && from.id !== fields.volumeId) {
    return refused(
      `${mismatch}, and it is not the clone source ${from.id} its ${context.inventory.naming.tag}.from tag names`,
    );
  }
  return {
    proved: true,
    evidence: 'source-header',
    headerVolumeId: fields.volumeId,
    createdAtMs: v.lvCreatedAtMs,
    createdFrom: 'LV creation time',
  };
}

export function refused(reason: string): Ownership {
  return { proved: false, reason };
}

/** Why an LV counts as open, or null when it is not. */
export function openReasonOf(v: InventoryVolume, context: PlanContext): string | null {
  if (v.openCount === null)
    return 'open count unknown (its device is missing from the device-mapper list)';
  if (v.openCount > 0) return `LV device open (${v.openCount} holder(s) besides its data device)`;
  for (const name of v.dataMaps) {
    const map = context.mapByName.get(name);
    if (map !== undefined && map.openCount > 0) {
      return `data device ${name} open (${map.openCount}): mounted or in use`;
    }
  }
  return null;
}

/** Rule 3 for a proved owner: a keep reason, or null when old enough. */
export function ageCheck(
  owner: Ownership & { proved: true },
  context: PlanContext,
): { readonly severity: 'info' | 'warn'; readonly reason: string } | null {
  const { createdAtMs, createdFrom } = owner;
  if (createdAtMs === null || !Number.isFinite(createdAtMs)) {
    return { severity: 'warn', reason: `age unknown: no ${createdFrom}` };
  }
  if (createdAtMs > context.nowMs) {
    return {
      severity: 'warn',
      reason: `${createdFrom} ${formatTime(createdAtMs)} is in the future (now ${formatTime(context.nowMs)})`,
    };
  }
  const age = context.nowMs - createdAtMs;
  if (age < context.policy.minAgeMs) {
    return {
      severity: 'info',
      reason: `younger than the grace period: ${createdFrom} ${formatTime(createdAtMs)}, age ${formatDuration(age)} < ${formatDuration(context.policy.minAgeMs)}`,
    };
  }
  return null;
}

export function ageText(owner: Ownership & { proved: true }, context: PlanContext): string {
  const age = context.nowMs - (owner.createdAtMs ?? context.nowMs);
  return `age ${formatDuration(age)} ≥ grace period ${formatDuration(context.policy.minAgeMs)}`;
}

/** True when the policy quarantines instead of removing (DESIGN.md §6 "Quarantine"). */
export function quarantineOn(policy: GcPolicy): boolean {
  return (policy.quarantineMs ?? 0) > 0;
}
