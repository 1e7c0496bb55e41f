import { InvalidArgumentError } from '../errors.js';
import {
  dmNameFor,
  isHexId,
  ownerTagFor,
  parseFromTag,
  parseSnapshotTags,
  quarantineTagsOf,
} from '../naming.js';
import { CAPPED_ACTIONS } from './types.js';
import { decideQuarantined } from './quarantine.js';
import type {
  GcQuarantinedEntry,
  InventoryQuarantined,
  GcMapEntry,
  GcPlan,
  GcPlanEntry,
  GcPlanSummary,
  GcPolicy,
  GcRule,
  GcSnapshotEntry,
  GcVolumeEntry,
  Inventory,
  InventoryMap,
  InventorySnapshot,
  InventoryVolume,
} from './types.js';
import { compareText, formatDuration, formatTime, numberKey } from './util.js';
import { failedHeaderCheck, failedTagCheck } from '../volumes/ownership.js';

/**
 * Plans one GC run (DESIGN.md §6). Pure: the same input gives the same plan.
 *
 * One entry per LV and per data device map of the inventory, decided by the
 * first rule that applies:
 *
 * 1. Ownership not proved or device open → keep, warn. An LV is lvstamp's
 *    only with two signals (DESIGN.md §2.3): the prefixed name and a header
 *    that is `ok`, carries the name's volume ID and the policy's owner, on
 *    an LV with the tags `lvstamp` and the policy owner's (the remover
 *    re-checks them, so a plan never promises what it would refuse). A
 *    headerless (`not-stamped`) `lvstamp_new_<id>` — lvcreate zeroed the
 *    start, the header was not yet written (DESIGN.md §5) — counts as proved
 *    only with both LV tags, `lvstamp` and `lvstamp.owner=<policy owner>`.
 *    The tag and header checks are volumes/ownership.ts's, the volume
 *    operations' own. A `lvstamp_new_<id>`
 *    whose header is `ok` and of the policy's owner but carries another
 *    volume ID (an interrupted restore or clone still holds its source's
 *    header) counts only with the lvstamp tag, the owner tag and a
 *    `lvstamp.from=…` tag (for `volume.<id>`, the header's ID must be that
 *    ID); its age is the LV creation time. A finished
 *    `lvstamp_<id>` without a valid header is never removed. An LV is open
 *    when its effective open count is > 0 or unknown, or a data device over
 *    it is open. A map is kept when its UUID carries no ID, its name does
 *    not match its UUID, it has no linear table, it targets an LV of
 *    another volume or an LV whose ownership is not proved, or it targets a
 *    device outside the volume groups scanned (`targetElsewhere`).
 *    Departure: an open device that is in the live set is reported under
 *    rule 2 (info), since a mounted live volume is the normal case; open
 *    and not live stays rule 1 (warn).
 * 2. Volume ID in the live set → keep.
 * 3. Younger than `policy.minAgeMs` → keep. Age is `now` minus the header's
 *    createdAt (for a headerless `lvstamp_new_*`: the LV creation time from
 *    lvm); unknown or future creation time → keep, warn. A map is aged by
 *    the LV it targets; a map whose LV is gone has no age.
 * 4. A map whose LV is gone or not live (and not open) → `remove-map`
 *    (data untouched).
 * 5. `lvstamp_new_*` older than the grace period → `remove-volume`.
 * 6. Otherwise an orphan → `remove-volume`, or `quarantine-volume` when
 *    `policy.quarantineMs` > 0 (DESIGN.md §6 "Quarantine"; an LV that
 *    already carries a quarantine tag is an interrupted quarantine, finished
 *    the same way).
 * 7. A quarantined LV (`lvstamp_q_<id>`, `lvstamp_qs_<id>`) is judged by
 *    gc/quarantine.ts `decideQuarantined` with the window
 *    `policy.quarantineMs` (none when 0): `remove-quarantined` once the
 *    window passed and both signals hold, else keep.
 *
 * Snapshot LVs `lvstamp_snap_<id>` (DESIGN.md §6 "Snapshots"), same rule
 * numbers: (1) tags `lvstamp`, the owner's and well-formed
 * `lvstamp.source`/`size`/`created`, and sector 0 `ok` with the policy's
 * owner and the `lvstamp.source` ID — a signal missing or disagreeing, or
 * the device open, or no snapshot live set given → keep, warn; (2) in the
 * snapshot live set → keep, also when the source volume is gone; (3)
 * younger than the grace period by `lvstamp.created` → keep; (6) otherwise
 * an orphan → `remove-snapshot` (`quarantine-snapshot` with a quarantine window).
 *
 * Cap: at most `deletionCap` = min(`maxDeletions`, floor(`maxDeletionPercent`
 * × own stamped LVs / 100)) `remove-volume` and `remove-snapshot` entries,
 * where own stamped LVs are the volumes and snapshots whose header is `ok`
 * with the policy's owner. Floor, so
 * the percentage is never exceeded (a small installation needs a larger
 * percentage to delete anything). Map removals leave data untouched, can be
 * rebuilt from the LV, and are not counted; snapshot removals are, and so
 * are quarantines and expiries (CAPPED_ACTIONS). Removals past the cap, in entry
 * order, become keep/warn "deletion cap of N reached" and `capped` is true.
 *
 * Entries are sorted by `device` (code-unit order), then by `target`.
 *
 * @param inventory from `takeInventory`.
 * @param liveSet volume IDs (32 lowercase hex digits) still referenced.
 * @param nowMs current Unix time in milliseconds.
 * @param options.snapshotLiveSet snapshot IDs (32 lowercase hex digits)
 *   still referenced; without it every snapshot is kept with a warning.
 * @throws InvalidArgumentError for a malformed policy, `nowMs` or live-set entry.
 */
export function planGc(
  inventory: Inventory,
  liveSet: ReadonlySet<string>,
  policy: GcPolicy,
  nowMs: number,
  options: { readonly snapshotLiveSet?: ReadonlySet<string> } = {},
): GcPlan {
  validatePolicy(policy);
  if (!Number.isFinite(nowMs))
    throw new InvalidArgumentError(`now must be a finite time in milliseconds, got ${nowMs}`);
  for (const id of liveSet) {
    if (!isHexId(id)) {
      throw new InvalidArgumentError(
        `live set entry "${id}" is not a volume ID (32 lowercase hex digits)`,
      );
    }
  }
  for (const id of options.snapshotLiveSet ?? []) {
    if (!isHexId(id)) {
      throw new InvalidArgumentError(
        `snapshot live set entry "${id}" is not a snapshot ID (32 lowercase hex digits)`,
      );
    }
  }

  const context: PlanContext = {
    policy,
    liveSet,
    snapshotLiveSet: options.snapshotLiveSet ?? null,
    nowMs,
    ownerTag: ownerTagFor(policy.ownerId, inventory.naming),
    ownerTagPrefix: `${inventory.naming.tag}.owner=`,
    inventory,
    volumeByDevice: new Map(inventory.volumes.map((v) => [v.device, v])),
    volumeIds: new Set(inventory.volumes.map((v) => v.volumeId)),
    mapByName: new Map(inventory.maps.map((m) => [m.name, m])),
  };

  const decided: GcPlanEntry[] = [
    ...inventory.volumes.map((v) => decideVolume(v, context)),
    ...inventory.maps.map((m) => decideMap(m, context)),
    ...(inventory.snapshots ?? []).map((snap) => decideSnapshot(snap, context)),
    ...(inventory.quarantined ?? []).map((q) => judgeQuarantined(q, context)),
  ].sort(compareEntries);

  const ownStamped = [...inventory.volumes, ...(inventory.snapshots ?? [])].filter(
    (v) => v.header.status === 'ok' && v.header.header.ownerId === policy.ownerId,
  ).length;
  const cap = deletionCap(policy, ownStamped);
  let removals = 0;
  let capped = false;
  const entries = decided.map((entry): GcPlanEntry => {
    if (!CAPPED_ACTIONS.has(entry.action)) return entry;
    if (removals < cap.limit) {
      removals += 1;
      return entry;
    }
    capped = true;
    return {
      ...entry,
      action: 'keep',
      severity: 'warn',
      reason: `deletion cap of ${cap.limit} reached (${cap.why}); would otherwise remove: ${entry.reason}`,
    };
  });

  return {
    plannedAtMs: nowMs,
    inventoryTakenAtMs: inventory.takenAtMs,
    naming: inventory.naming,
    ownerId: policy.ownerId,
    dryRun: policy.dryRun,
    deletionCap: cap.limit,
    capped,
    entries,
    summary: summarize(
      entries,
      inventory.snapshots !== undefined,
      inventory.quarantined !== undefined || quarantineOn(policy),
    ),
  };
}

/**
 * Checks a GC policy.
 * @throws InvalidArgumentError when the owner ID is not 32 lowercase hex
 *   digits, `minAgeMs` is negative or not finite, `maxDeletions` is not a
 *   non-negative integer, `maxDeletionPercent` is outside 0–100, or `dryRun`
 *   is not a boolean.
 */
export function validatePolicy(policy: GcPolicy): void {
  if (!isHexId(policy.ownerId)) {
    throw new InvalidArgumentError(
      `policy owner ID must be 32 lowercase hex digits, got "${policy.ownerId}"`,
    );
  }
  if (!Number.isFinite(policy.minAgeMs) || policy.minAgeMs < 0) {
    throw new InvalidArgumentError(`policy minimum age must be ≥ 0 ms, got ${policy.minAgeMs}`);
  }
  if (!Number.isSafeInteger(policy.maxDeletions) || policy.maxDeletions < 0) {
    throw new InvalidArgumentError(
      `policy maximum deletions must be an integer ≥ 0, got ${policy.maxDeletions}`,
    );
  }
  const percent = policy.maxDeletionPercent;
  if (percent !== undefined && !(Number.isFinite(percent) && percent >= 0 && percent <= 100)) {
    throw new InvalidArgumentError(
      `policy maximum deletion percentage must be 0–100, got ${percent}`,
    );
  }
  const window = policy.quarantineMs;
  if (window !== undefined && !(Number.isFinite(window) && window >= 0)) {
    throw new InvalidArgumentError(`policy quarantine window must be ≥ 0 ms, got ${window}`);
  }
  if (typeof policy.dryRun !== 'boolean') {
    throw new InvalidArgumentError('policy dryRun must be true or false');
  }
}

interface PlanContext {
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
type Ownership =
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

function ownershipOf(v: InventoryVolume, context: PlanContext): Ownership {
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
function copyOwnership(
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

function refused(reason: string): Ownership {
  return { proved: false, reason };
}

/** Why an LV counts as open, or null when it is not. */
function openReasonOf(v: InventoryVolume, context: PlanContext): string | null {
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
function ageCheck(
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

function ageText(owner: Ownership & { proved: true }, context: PlanContext): string {
  const age = context.nowMs - (owner.createdAtMs ?? context.nowMs);
  return `age ${formatDuration(age)} ≥ grace period ${formatDuration(context.policy.minAgeMs)}`;
}

function decideVolume(v: InventoryVolume, context: PlanContext): GcVolumeEntry {
  const base = {
    target: 'volume',
    volumeId: v.volumeId,
    device: v.device,
    vgName: v.vgName,
    lvName: v.lvName,
    lvUuid: v.lvUuid,
  } as const;
  const keep = (
    rule: GcRule,
    severity: 'info' | 'warn',
    reason: string,
    evidence: GcVolumeEntry['evidence'],
  ) => ({ ...base, action: 'keep', rule, severity, reason, evidence }) as const;

  const owner = ownershipOf(v, context);
  if (!owner.proved) return keep(1, 'warn', owner.reason, null);

  const live = context.liveSet.has(v.volumeId);
  const open = openReasonOf(v, context);
  if (open !== null) {
    return live
      ? keep(2, 'info', `in the live set; ${open}`, owner.evidence)
      : keep(1, 'warn', `${open}, but not in the live set`, owner.evidence);
  }
  if (live) return keep(2, 'info', 'in the live set', owner.evidence);

  const young = ageCheck(owner, context);
  if (young !== null) return keep(3, young.severity, young.reason, owner.evidence);

  const age = ageText(owner, context);
  if (v.creating) {
    const signal =
      owner.evidence === 'owner-tag'
        ? `no header yet, owner tag ${context.ownerTag}`
        : owner.evidence === 'source-header'
          ? `restore or clone: sector 0 still holds source ${owner.headerVolumeId}'s header, ${context.inventory.naming.tag}.from tag`
          : 'header written, rename pending';
    return {
      ...base,
      action: 'remove-volume',
      rule: 5,
      severity: 'info',
      reason: `interrupted create (${signal}), not in the live set, ${age}`,
      evidence: owner.evidence,
      ...(owner.headerVolumeId === undefined ? {} : { headerVolumeId: owner.headerVolumeId }),
    };
  }
  const interrupted =
    quarantineTagsOf(v.tags, context.inventory.naming).length > 0
      ? '; carries a quarantine tag: an interrupted quarantine, finished now'
      : '';
  if (quarantineOn(context.policy)) {
    return {
      ...base,
      action: 'quarantine-volume',
      rule: 6,
      severity: 'info',
      reason: `orphan: valid header of this owner, not in the live set, ${age}; quarantined for ${formatDuration(context.policy.quarantineMs ?? 0)} before removal${interrupted}`,
      evidence: owner.evidence,
    };
  }
  return {
    ...base,
    action: 'remove-volume',
    rule: 6,
    severity: 'info',
    reason: `orphan: valid header of this owner, not in the live set, ${age}${interrupted}`,
    evidence: owner.evidence,
  };
}

/** True when the policy quarantines instead of removing (DESIGN.md §6 "Quarantine"). */
function quarantineOn(policy: GcPolicy): boolean {
  return (policy.quarantineMs ?? 0) > 0;
}

/** Rule 7: a quarantined LV, judged against the run's window and its own live set. */
function judgeQuarantined(q: InventoryQuarantined, context: PlanContext): GcQuarantinedEntry {
  const snapshotWithoutLiveSet = q.kind === 'snapshot' && context.snapshotLiveSet === null;
  const entry = decideQuarantined(q, {
    ownerId: context.policy.ownerId,
    naming: context.inventory.naming,
    nowMs: context.nowMs,
    windowMs: quarantineOn(context.policy) ? (context.policy.quarantineMs ?? 0) : null,
    liveSet: q.kind === 'volume' ? context.liveSet : context.snapshotLiveSet,
    windowName: `quarantine window ${formatDuration(context.policy.quarantineMs ?? 0)}`,
  });
  if (snapshotWithoutLiveSet && entry.action !== 'keep') {
    return {
      ...entry,
      action: 'keep',
      rule: 1,
      severity: 'warn',
      reason: 'no snapshot live set was given to this run; quarantined snapshots are kept',
    };
  }
  return entry;
}

function decideMap(m: InventoryMap, context: PlanContext): GcMapEntry {
  const keep = (rule: GcRule, severity: 'info' | 'warn', reason: string): GcMapEntry => ({
    target: 'map',
    volumeId: m.volumeId,
    device: m.name,
    action: 'keep',
    rule,
    severity,
    reason,
  });

  if (m.volumeId === null)
    return keep(1, 'warn', `UUID ${m.uuid} carries no volume ID; not an lvstamp data device`);
  const expectedName = dmNameFor(m.volumeId, context.inventory.naming);
  if (m.name !== expectedName) {
    return keep(1, 'warn', `map name does not match its UUID ${m.uuid} (expected ${expectedName})`);
  }
  if (m.target === null)
    return keep(1, 'warn', 'no single linear table; not the layout of an lvstamp data device');

  if (m.lv === null && m.targetElsewhere === true) {
    return keep(
      1,
      'warn',
      `its table targets ${numberKey(m.target)}, a device outside the volume groups scanned; judged only by a run over that device's volume group`,
    );
  }
  const lv = m.lv === null ? undefined : context.volumeByDevice.get(m.lv);
  let owner: (Ownership & { proved: true }) | null = null;
  if (lv !== undefined) {
    if (lv.volumeId !== m.volumeId) {
      return keep(1, 'warn', `targets ${lv.device}, which belongs to volume ${lv.volumeId}`);
    }
    const lvOwner = ownershipOf(lv, context);
    if (!lvOwner.proved)
      return keep(1, 'warn', `its LV ${lv.device} is not provably lvstamp's: ${lvOwner.reason}`);
    owner = lvOwner;
  }

  const live = context.liveSet.has(m.volumeId);
  if (m.openCount > 0) {
    const open = `open (${m.openCount}): mounted or in use`;
    return live
      ? keep(2, 'info', `in the live set; ${open}`)
      : keep(1, 'warn', `${open}, but not in the live set`);
  }
  if (live) return keep(2, 'info', 'in the live set');

  if (owner !== null) {
    const young = ageCheck(owner, context);
    if (young !== null) return keep(3, young.severity, young.reason);
  }

  const why =
    lv === undefined
      ? `stale: its table targets ${numberKey(m.target)}, which is no lvstamp LV`
      : `data device of ${lv.device}, whose volume is not in the live set`;
  return {
    target: 'map',
    volumeId: m.volumeId,
    device: m.name,
    action: 'remove-map',
    rule: 4,
    severity: 'info',
    reason: `${why}; removing the map leaves the data untouched`,
  };
}

/** Snapshot rules (see planGc): two signals, live set, grace period, orphan. */
function decideSnapshot(snap: InventorySnapshot, context: PlanContext): GcSnapshotEntry {
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

function deletionCap(
  policy: GcPolicy,
  ownStamped: number,
): { readonly limit: number; readonly why: string } {
  const perRun = { limit: policy.maxDeletions, why: `at most ${policy.maxDeletions} per run` };
  const percent = policy.maxDeletionPercent;
  if (percent === undefined) return perRun;
  const share = Math.floor((percent * ownStamped) / 100);
  return share < perRun.limit
    ? { limit: share, why: `at most ${percent}% of ${ownStamped} own stamped volume(s)` }
    : perRun;
}

function compareEntries(a: GcPlanEntry, b: GcPlanEntry): number {
  return compareText(a.device, b.device) || compareText(a.target, b.target);
}

function summarize(
  entries: readonly GcPlanEntry[],
  withSnapshots: boolean,
  withQuarantine: boolean,
): GcPlanSummary {
  const count = (test: (e: GcPlanEntry) => boolean) => entries.filter(test).length;
  return {
    volumes: count((e) => e.target === 'volume'),
    maps: count((e) => e.target === 'map'),
    keep: count((e) => e.action === 'keep'),
    removeMap: count((e) => e.action === 'remove-map'),
    removeVolume: count((e) => e.action === 'remove-volume'),
    ...(withSnapshots
      ? {
          snapshots: count((e) => e.target === 'snapshot'),
          removeSnapshot: count((e) => e.action === 'remove-snapshot'),
        }
      : {}),
    ...(withQuarantine
      ? {
          quarantined: count((e) => e.target === 'quarantined'),
          quarantine: count(
            (e) => e.action === 'quarantine-volume' || e.action === 'quarantine-snapshot',
          ),
          removeQuarantined: count((e) => e.action === 'remove-quarantined'),
        }
      : {}),
    warnings: count((e) => e.severity === 'warn'),
  };
}
