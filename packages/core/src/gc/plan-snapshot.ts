/** The GC planner's rules for snapshot LVs (DESIGN.md §6 "Snapshots"). */

import { parseSnapshotTags } from '../naming.js';
import type { GcRule, GcSnapshotEntry, InventorySnapshot } from './types.js';
import { ageCheck, ageText, quarantineOn, type PlanContext } from './plan-context.js';
import { formatDuration } from './util.js';

import { failedHeaderCheck, failedTagCheck } from '../volumes/ownership.js';

/** Snapshot rules (DESIGN.md §6 "Snapshots"): two signals, live set, grace period, orphan. */
export function decideSnapshot(snap: InventorySnapshot, context: PlanContext): GcSnapshotEntry {
  const naming = context.inventory.naming;
  const tags = parseSnapshotTags(snap.tags, naming);
  const base = {
    target: 'snapshot',
    snapshotId: snap.snapshotId,
    sourceVolumeId: tags?.sourceVolumeId ?? null,
    device: snap.device,
    vgName: snap.vgName,
    lvName: snap.lvName,
    lvUuid: snap.lvUuid,
  } as const;
  const keep = (rule: GcRule, severity: 'info' | 'warn', reason: string): GcSnapshotEntry => ({
    ...base,
    action: 'keep',
    rule,
    severity,
    reason,
  });

  const signals = snapshotSignals(snap, tags, context);
  if (!signals.proved) return keep(1, 'warn', signals.reason);

  const live = context.snapshotLiveSet?.has(snap.snapshotId) === true;
  const open =
    snap.openCount === null
      ? 'open count unknown (its device is missing from the device-mapper list)'
      : snap.openCount > 0
        ? `LV device open (${snap.openCount})`
        : null;
  if (open !== null) {
    return live
      ? keep(2, 'info', `in the snapshot live set; ${open}`)
      : keep(1, 'warn', `${open}, but not in the snapshot live set`);
  }
  if (context.snapshotLiveSet === null) {
    return keep(1, 'warn', 'no snapshot live set was given to this run; snapshots are kept');
  }
  if (live) {
    const sourceLive = context.volumeIds.has(signals.sourceVolumeId);
    return keep(
      2,
      'info',
      sourceLive
        ? 'in the snapshot live set'
        : `in the snapshot live set (its source volume ${signals.sourceVolumeId} is gone from this node's scope)`,
    );
  }
  const owner = {
    proved: true,
    evidence: 'header',
    createdAtMs: signals.createdMs,
    createdFrom: `${naming.tag}.created tag`,
  } as const;
  const young = ageCheck(owner, context);
  if (young !== null) return keep(3, young.severity, young.reason);
  const orphan = `orphan snapshot of volume ${signals.sourceVolumeId}: not in the snapshot live set, ${ageText(owner, context)}`;
  if (quarantineOn(context.policy)) {
    return {
      ...base,
      action: 'quarantine-snapshot',
      rule: 6,
      severity: 'info',
      reason: `${orphan}; quarantined for ${formatDuration(context.policy.quarantineMs ?? 0)} before removal`,
    };
  }
  return { ...base, action: 'remove-snapshot', rule: 6, severity: 'info', reason: orphan };
}

/** A snapshot's two ownership signals (DESIGN.md §6 "Snapshots"): its tags, or why they do not hold. */
function snapshotSignals(
  snap: InventorySnapshot,
  tags: ReturnType<typeof parseSnapshotTags>,
  context: PlanContext,
):
  | ({ readonly proved: true } & NonNullable<ReturnType<typeof parseSnapshotTags>>)
  | { readonly proved: false; readonly reason: string } {
  const problem = snapshotSignalProblem(snap, tags, context);
  if (problem !== null || tags === null) {
    return { proved: false, reason: problem ?? 'snapshot tags missing' };
  }
  return { proved: true, ...tags };
}

/** Why a snapshot's two ownership signals do not hold, or null. */
function snapshotSignalProblem(
  snap: InventorySnapshot,
  tags: ReturnType<typeof parseSnapshotTags>,
  context: PlanContext,
): string | null {
  const naming = context.inventory.naming;
  if (failedTagCheck(snap, context.policy.ownerId, naming) !== null) {
    const other = snap.tags.find((t) => t.startsWith(context.ownerTagPrefix));
    return other === undefined
      ? `snapshot without the tags ${naming.tag} and ${context.ownerTag}: only one ownership signal`
      : `snapshot tagged for another owner (${other})`;
  }
  if (tags === null) {
    return `snapshot without well-formed ${naming.tag}.source, ${naming.tag}.size and ${naming.tag}.created tags; never deleted automatically`;
  }
  const { header } = snap;
  if (header.status !== 'ok') {
    return header.status === 'unreadable'
      ? `sector 0 unreadable: ${header.reason}; kept until it can be read`
      : `sector 0 is ${header.status} (${header.reason}), not its source's header; never deleted automatically`;
  }
  const failed = failedHeaderCheck(header, tags.sourceVolumeId, context.policy.ownerId);
  if (failed?.check === 'header-owner') {
    return `sector 0 is another installation's header (owner ${header.header.ownerId}, this GC's owner ${context.policy.ownerId})`;
  }
  if (failed !== null) {
    return `sector 0 holds volume ${header.header.volumeId}'s header, but the ${naming.tag}.source tag says ${tags.sourceVolumeId}`;
  }
  return null;
}
