/**
 * The quarantine rules of the GC (DESIGN.md §6 "Quarantine"): how a
 * quarantined LV is judged (pure), shared by the planner and by
 * `lvstamp quarantine purge`.
 */
import { parseQuarantineTag, parseSnapshotTags, type Naming } from '../naming.js';
import { failedHeaderCheck, failedTagCheck } from '../volumes/ownership.js';
import type { GcQuarantinedEntry, GcRule, InventoryQuarantined } from './types.js';
import { formatDuration, formatTime } from './util.js';

/** What judging a quarantined LV needs besides the LV. */
export interface QuarantineJudgement {
  readonly ownerId: string;
  readonly naming: Naming;
  readonly nowMs: number;
  /**
   * How long an LV stays in quarantine before it may be removed, ms; null:
   * nothing expires in this run (quarantine off), each LV is reported only.
   */
  readonly windowMs: number | null;
  /** IDs still referenced (volumes, or snapshots for a quarantined snapshot); null: not checked (purge). */
  readonly liveSet: ReadonlySet<string> | null;
  /** The words that name the window in reasons, e.g. `quarantine window 7d`. */
  readonly windowName: string;
}

/**
 * Judges one quarantined LV, in this order (DESIGN.md §6 "Quarantine"):
 *
 * 1. not the tags `lvstamp` and this owner's, no well-formed
 *    `lvstamp.quarantined=<s>` tag exactly once, or (a snapshot) no
 *    well-formed snapshot tags → keep, warn;
 * 2. its ID in the live set → keep, warn (restore it);
 * 1. sector 0 was read (the LV is active) and is not an `ok` header of this
 *    owner with the name's volume ID (a snapshot: its `lvstamp.source`) →
 *    keep, warn, at any time: such an LV can never expire under rule 7 (nor
 *    be purged), so it would otherwise sit as `info` until its window passed
 *    and then stay for good;
 * 7. no window in this run → keep; quarantine time in the future → keep,
 *    warn; in quarantine for less than the window → keep (the entry says
 *    when it expires);
 * 1. window passed, but sector 0 is not an `ok` header of this owner with
 *    the name's volume ID (a snapshot: its `lvstamp.source`), or the LV is
 *    open or its open count unknown → keep, warn;
 * 7. otherwise → `remove-quarantined`.
 *
 * Pure; never throws.
 */
export function decideQuarantined(
  q: InventoryQuarantined,
  judgement: QuarantineJudgement,
): GcQuarantinedEntry {
  const { naming, nowMs, windowMs } = judgement;
  const atSeconds = parseQuarantineTag(q.tags, naming);
  const quarantinedAtMs = atSeconds === null ? null : atSeconds * 1000;
  const expiresAtMs =
    quarantinedAtMs === null || windowMs === null ? null : quarantinedAtMs + windowMs;
  const snapshotTags = q.kind === 'snapshot' ? parseSnapshotTags(q.tags, naming) : null;
  const headerVolumeId = q.kind === 'volume' ? q.id : (snapshotTags?.sourceVolumeId ?? null);
  const base = {
    target: 'quarantined',
    kind: q.kind,
    id: q.id,
    device: q.device,
    vgName: q.vgName,
    lvName: q.lvName,
    lvUuid: q.lvUuid,
    sizeBytes: q.sizeBytes,
    quarantinedAtMs,
    expiresAtMs,
    headerVolumeId,
  } as const;
  const keep = (rule: GcRule, severity: 'info' | 'warn', reason: string): GcQuarantinedEntry => ({
    ...base,
    action: 'keep',
    rule,
    severity,
    reason,
  });
  const what = q.kind === 'volume' ? 'quarantined volume' : 'quarantined snapshot';

  const tags = failedTagCheck(q, judgement.ownerId, naming);
  if (tags !== null) return keep(1, 'warn', `${what}, but ${tags.detail}; never removed`);
  if (quarantinedAtMs === null) {
    return keep(
      1,
      'warn',
      `${what} without one well-formed ${naming.tag}.quarantined tag (an interrupted restore leaves this; run the restore again); never removed automatically`,
    );
  }
  if (q.kind === 'snapshot' && headerVolumeId === null) {
    return keep(
      1,
      'warn',
      `${what} without well-formed ${naming.tag}.source, ${naming.tag}.size and ${naming.tag}.created tags; never removed automatically`,
    );
  }
  const since = `in quarantine since ${formatTime(quarantinedAtMs)}`;
  if (judgement.liveSet?.has(q.id) === true) {
    return keep(
      2,
      'warn',
      `${what} whose ID is in the live set again: restore it (lvstamp quarantine restore ${q.kind === 'snapshot' ? '--snapshot ' : ''}${q.id}); ${since}`,
    );
  }
  const header = failedHeaderCheck(q.header, headerVolumeId ?? '', judgement.ownerId);
  if (header !== null && q.header.status !== 'unreadable') {
    return keep(
      1,
      'warn',
      `${what}, but ${header.detail}: it can never expire (removal needs this owner's header with the name's ID) and purge keeps it too, so it stays until a person checks it (lvstamp quarantine inspect) and removes it by hand; ${since}`,
    );
  }
  if (windowMs === null || expiresAtMs === null) {
    return keep(
      7,
      'info',
      `${since}; quarantine is off in this run, so it is kept (lvstamp quarantine purge removes it)`,
    );
  }
  if (quarantinedAtMs > nowMs) {
    return keep(
      7,
      'warn',
      `${naming.tag}.quarantined ${formatTime(quarantinedAtMs)} is in the future (now ${formatTime(nowMs)}); kept`,
    );
  }
  if (nowMs < expiresAtMs) {
    return keep(
      7,
      'info',
      `${since}; ${formatDuration(expiresAtMs - nowMs)} left of the ${judgement.windowName} (expires ${formatTime(expiresAtMs)})`,
    );
  }
  if (header !== null) {
    const why =
      q.header.status === 'unreadable'
        ? `its header is unreadable (${q.header.reason})`
        : header.detail;
    return keep(1, 'warn', `${what}, ${judgement.windowName} passed, but ${why}; kept`);
  }
  if (q.openCount === null || q.openCount > 0) {
    return keep(
      1,
      'warn',
      `${what}, ${judgement.windowName} passed, but its device is ${q.openCount === null ? 'of unknown open count' : `open (${q.openCount})`}; kept`,
    );
  }
  return {
    ...base,
    action: 'remove-quarantined',
    rule: 7,
    severity: 'info',
    reason: `${since}, ${judgement.windowName} passed (expired ${formatTime(expiresAtMs)}); tags and header of this owner`,
  };
}

/**
 * The quarantined LVs whose header must be read before a run can judge
 * them: inactive, tagged `lvstamp` and this owner's, with a quarantine time
 * (in or past its window `windowMs`: a header that fails the check is a
 * warning at any time, decideQuarantined). `vg/lv` of each; none when
 * nothing expires in the run (`windowMs` null).
 */
export function quarantinedToActivate(
  quarantined: readonly InventoryQuarantined[],
  judgement: Pick<QuarantineJudgement, 'ownerId' | 'naming' | 'windowMs'>,
): string[] {
  if (judgement.windowMs === null) return [];
  return quarantined
    .filter((q) => {
      if (q.kernel !== null) return false;
      if (failedTagCheck(q, judgement.ownerId, judgement.naming) !== null) return false;
      return parseQuarantineTag(q.tags, judgement.naming) !== null;
    })
    .map((q) => q.device);
}
