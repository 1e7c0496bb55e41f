/**
 * Shapes of the GC (DESIGN.md §6): the inventory of a node, the policy, the
 * plan, and the executor's outcomes.
 */
import type { DeviceNumber } from '../device/types.js';
import type { HeaderReading } from '../volumes/header-reading.js';
import type { Naming } from '../naming.js';
import type { WipePolicy } from '../volumes/types.js';
import type { UnusableGroup } from '../lvm/types.js';

/**
 * What sector 0 of an LV said: a decode result, or `unreadable` when the LV
 * is inactive or reading failed (the inventory never throws for a read).
 */
export type InventoryHeader = HeaderReading;

/** One LV with the lvstamp prefix, as the GC sees it. */
export interface InventoryVolume {
  /** 32 hex digits, from the LV name. */
  readonly volumeId: string;
  /** True for `lvstamp_new_<id>` (an interrupted or running create). */
  readonly creating: boolean;
  readonly vgName: string;
  readonly lvName: string;
  /** lvm's `lv_uuid`; changes when an LV of the same name is recreated. */
  readonly lvUuid: string;
  /** `<vg>/<lv>`: how plans and people name the LV. */
  readonly device: string;
  /** LV size in bytes. */
  readonly sizeBytes: number;
  /** LV creation time from lvm (`lv_time`), Unix milliseconds; null when lvm did not say. */
  readonly lvCreatedAtMs: number | null;
  /** LV tags, e.g. `lvstamp` and `lvstamp.owner=<ownerId>`. */
  readonly tags: readonly string[];
  /** Kernel device number of the LV, or null when inactive. */
  readonly kernel: DeviceNumber | null;
  /** The decoded header, or `unreadable`. */
  readonly header: InventoryHeader;
  /**
   * Holders of the LV device other than lvstamp data devices: the LV
   * device's open count (device-mapper, matched by major:minor) minus one
   * per lvstamp map whose table targets it. 0 when inactive; null when
   * unknown (active but its device is missing from the map list, or the
   * count would be negative).
   */
  readonly openCount: number | null;
  /** Names of the lvstamp maps whose linear table targets this LV. */
  readonly dataMaps: readonly string[];
}

/**
 * One snapshot LV `lvstamp_snap_<id>` (docs/DESIGN.md §6 "Snapshots"). Its
 * sector 0 is the source volume's header (a snapshot is never written).
 */
export interface InventorySnapshot {
  /** 32 hex digits, from the LV name. */
  readonly snapshotId: string;
  readonly vgName: string;
  readonly lvName: string;
  /** lvm's `lv_uuid`. */
  readonly lvUuid: string;
  /** `<vg>/<lv>`. */
  readonly device: string;
  /** LV size in bytes. */
  readonly sizeBytes: number;
  /** LV creation time from lvm (`lv_time`), Unix milliseconds; null when lvm did not say. */
  readonly lvCreatedAtMs: number | null;
  /** LV tags: `lvstamp`, `lvstamp.owner=…`, `lvstamp.source=…`, `lvstamp.size=…`, `lvstamp.created=…`. */
  readonly tags: readonly string[];
  /** Kernel device number of the LV, or null when inactive. */
  readonly kernel: DeviceNumber | null;
  /** The decoded sector 0 (the source volume's header), or `unreadable`. */
  readonly header: InventoryHeader;
  /** Open count of the LV device; 0 when inactive; null when unknown. */
  readonly openCount: number | null;
}

/**
 * One quarantined LV (DESIGN.md §6 "Quarantine"): `lvstamp_q_<id>` (a
 * volume) or `lvstamp_qs_<id>` (a snapshot). Its sector 0 is the volume's
 * own header, or for a snapshot its source's; never written by quarantine.
 */
export interface InventoryQuarantined {
  readonly kind: 'volume' | 'snapshot';
  /** Volume or snapshot ID, 32 hex digits, from the LV name. */
  readonly id: string;
  readonly vgName: string;
  readonly lvName: string;
  /** lvm's `lv_uuid`. */
  readonly lvUuid: string;
  /** `<vg>/<lv>`. */
  readonly device: string;
  /** LV size in bytes. */
  readonly sizeBytes: number;
  /** LV tags: `lvstamp`, the owner tag, `lvstamp.quarantined=<s>` (snapshots: their own tags too). */
  readonly tags: readonly string[];
  /** Kernel device number, or null when inactive (its resting state). */
  readonly kernel: DeviceNumber | null;
  /** The decoded sector 0, or `unreadable` (always so while inactive). */
  readonly header: InventoryHeader;
  /** Open count of the LV device; 0 when inactive; null when unknown. */
  readonly openCount: number | null;
}

/** One device-mapper map whose UUID starts with `LVSTAMP-`. */
export interface InventoryMap {
  /** Map name, e.g. `lvstamp-<id>`. */
  readonly name: string;
  readonly uuid: string;
  /** Volume ID from the UUID; null when the UUID carries no well-formed ID. */
  readonly volumeId: string | null;
  readonly kernel: DeviceNumber;
  /** Open count of the map; > 0 means mounted or otherwise in use. */
  readonly openCount: number;
  /** Target of its linear table, or null when it has none (not one linear target). */
  readonly target: DeviceNumber | null;
  /** `<vg>/<lv>` of the lvstamp LV the table targets, or null when no listed LV has that number. */
  readonly lv: string | null;
  /**
   * True when the target is a device-mapper device of this node that is not one of the listed
   * LVs (an LV of a volume group outside the scope, or a foreign device): the map is not judged
   * by this run. False when the target is a listed LV or no longer exists.
   */
  readonly targetElsewhere?: boolean;
}

/** Everything the planner needs about one node, taken at one moment. */
export interface Inventory {
  /** When the inventory was taken, Unix milliseconds. */
  readonly takenAtMs: number;
  /** Prefixes used to take it (the planner needs the owner tag and map names). */
  readonly naming: Naming;
  /** Sorted by `device`. */
  readonly volumes: readonly InventoryVolume[];
  /** Sorted by `name`. */
  readonly maps: readonly InventoryMap[];
  /** Snapshot LVs `lvstamp_snap_<id>`, sorted by `device`; absent in inventories taken before snapshots existed. */
  readonly snapshots?: readonly InventorySnapshot[];
  /** Quarantined LVs (DESIGN.md §6 "Quarantine"), sorted by `device`; absent when not listed. */
  readonly quarantined?: readonly InventoryQuarantined[];
  /**
   * Groups of the scope lvm refuses to change (a missing or duplicate PV,
   * read-only, exported, shared), sorted by name: everything in them is
   * kept (DESIGN.md §6 rule 1). Absent or empty: none.
   */
  readonly unusableGroups?: readonly UnusableGroup[];
}

/** GC policy (DESIGN.md §6). */
export interface GcPolicy {
  /** Owner ID of this installation, 32 lowercase hex digits; other owners' volumes are never touched. */
  readonly ownerId: string;
  /** Grace period in milliseconds: younger volumes are kept (protects creates in flight). */
  readonly minAgeMs: number;
  /** Most volumes removed in one run (a non-negative integer). */
  readonly maxDeletions: number;
  /**
   * Optional further cap: at most floor(percent × own stamped volumes and
   * snapshots / 100) of them removed in one run; 0–100. With a quarantine
   * window it caps quarantines (and at least 1 of them), never expiries
   * (DESIGN.md §6 "Cap").
   */
  readonly maxDeletionPercent?: number;
  /**
   * Quarantine window in milliseconds (DESIGN.md §6 "Quarantine"): when > 0,
   * an orphan volume or snapshot is quarantined instead of removed, and a
   * quarantined LV is removed once it has been in quarantine this long.
   * 0 or absent: orphans are removed at once and quarantined LVs are kept
   * (`lvstamp quarantine purge` removes them).
   */
  readonly quarantineMs?: number;
  /**
   * How a thick volume LV is wiped right before the GC removes it (rule 6
   * direct removal, rule 7 expiry, purge; DESIGN.md §5 "Wipe"); thin LVs and
   * `lvstamp_new_*` leftovers never are. Absent: `discard`.
   */
  readonly wipe?: WipePolicy;
  /** True: the executor changes nothing. Runs are dry by default (callers default this to true). */
  readonly dryRun: boolean;
}

/**
 * The GC rule (DESIGN.md §6, 1–6) that decided an entry; 7 is the
 * quarantine window of a quarantined LV (DESIGN.md §6 "Quarantine").
 */
export type GcRule = 1 | 2 | 3 | 4 | 5 | 6 | 7;

/** What happens to one device. Removing a volume includes removing its data device first. */
export type GcAction =
  | 'keep'
  | 'remove-map'
  | 'remove-volume'
  | 'remove-snapshot'
  | 'quarantine-volume'
  | 'quarantine-snapshot'
  | 'remove-quarantined';

/** Actions that count against the deletion cap: every act that takes an LV out of use. */
export const CAPPED_ACTIONS: ReadonlySet<GcAction> = new Set<GcAction>([
  'remove-volume',
  'remove-snapshot',
  'quarantine-volume',
  'quarantine-snapshot',
  'remove-quarantined',
]);

interface GcEntryBase {
  readonly action: GcAction;
  /** `warn`: a person should look (one ownership signal without the other, a device in an odd state, a cap). */
  readonly severity: 'info' | 'warn';
  readonly rule: GcRule;
  /** Why, in words a person can check against the device. Never empty. */
  readonly reason: string;
}

/** A plan entry about an LV. */
export interface GcVolumeEntry extends GcEntryBase {
  readonly target: 'volume';
  readonly volumeId: string;
  /** `<vg>/<lv>`. */
  readonly device: string;
  readonly action: 'keep' | 'remove-volume' | 'quarantine-volume';
  readonly vgName: string;
  readonly lvName: string;
  /** lv_uuid seen in the inventory; the executor acts only on this LV. */
  readonly lvUuid: string;
  /**
   * The second ownership signal besides the name: a valid header with this
   * ID and owner, or (for a headerless `lvstamp_new_*` only) the owner tag.
   * `source-header`: an interrupted restore or clone (`lvstamp_new_<id>`
   * with `lvstamp.from=…` and the owner tag) whose sector 0 still holds its
   * source's header, of this owner, with the ID in `headerVolumeId`.
   * Null when ownership was not proved (entry kept under rule 1).
   */
  readonly evidence: 'header' | 'owner-tag' | 'source-header' | null;
  /** For `source-header` evidence: the volume ID in the header (the source's). */
  readonly headerVolumeId?: string;
}

/** A plan entry about a snapshot LV (docs/DESIGN.md §6 "Snapshots"). */
export interface GcSnapshotEntry extends GcEntryBase {
  readonly target: 'snapshot';
  readonly snapshotId: string;
  /** The `lvstamp.source` tag, or null when the tags are missing or malformed. */
  readonly sourceVolumeId: string | null;
  /** `<vg>/<lv>`. */
  readonly device: string;
  readonly action: 'keep' | 'remove-snapshot' | 'quarantine-snapshot';
  readonly vgName: string;
  readonly lvName: string;
  /** lv_uuid seen in the inventory; the executor acts only on this LV. */
  readonly lvUuid: string;
}

/** A plan entry about a data device map. */
export interface GcMapEntry extends GcEntryBase {
  readonly target: 'map';
  /** From the map's UUID; null when it carries no well-formed ID. */
  readonly volumeId: string | null;
  /** The map name. */
  readonly device: string;
  readonly action: 'keep' | 'remove-map';
}

/** A plan entry about a quarantined LV (DESIGN.md §6 "Quarantine"). */
export interface GcQuarantinedEntry extends GcEntryBase {
  readonly target: 'quarantined';
  readonly kind: 'volume' | 'snapshot';
  /** Volume or snapshot ID from the LV name. */
  readonly id: string;
  /** `<vg>/<lv>`. */
  readonly device: string;
  readonly action: 'keep' | 'remove-quarantined';
  readonly vgName: string;
  readonly lvName: string;
  /** lv_uuid seen in the inventory; the executor acts only on this LV. */
  readonly lvUuid: string;
  /** LV size in bytes (what the quarantine holds). */
  readonly sizeBytes: number;
  /** From `lvstamp.quarantined=<s>`, Unix milliseconds; null when the tag is missing or malformed. */
  readonly quarantinedAtMs: number | null;
  /** When the window of this run ends, Unix ms; null when unknown or quarantine is off. */
  readonly expiresAtMs: number | null;
  /** For a snapshot, its `lvstamp.source`; else the ID the header must carry (the name's). */
  readonly headerVolumeId: string | null;
}

export type GcPlanEntry = GcVolumeEntry | GcMapEntry | GcSnapshotEntry | GcQuarantinedEntry;

/** Counts of a plan. */
export interface GcPlanSummary {
  readonly volumes: number;
  readonly maps: number;
  readonly keep: number;
  readonly removeMap: number;
  readonly removeVolume: number;
  /** Snapshot LVs planned (present when the inventory listed snapshots). */
  readonly snapshots?: number;
  readonly removeSnapshot?: number;
  /** Quarantine counts (present when quarantine is on or the inventory listed quarantined LVs). */
  readonly quarantined?: number;
  readonly quarantine?: number;
  readonly removeQuarantined?: number;
  readonly warnings: number;
}

/** The planner's result: one entry per device, in a deterministic order. */
export interface GcPlan {
  /** `now` given to the planner, Unix milliseconds. */
  readonly plannedAtMs: number;
  readonly inventoryTakenAtMs: number;
  readonly naming: Naming;
  readonly ownerId: string;
  readonly dryRun: boolean;
  /** The policy's wipe, applied by the executor before each thick volume LV's removal. */
  readonly wipe: WipePolicy;
  /**
   * Most capped acts this plan may hold: without a quarantine window the
   * smaller of both caps; with one `maxDeletions` (quarantines are further
   * held to the percentage share, expiries are not; DESIGN.md §6 "Cap").
   */
  readonly deletionCap: number;
  /** True when at least one removal was turned into keep by the cap. */
  readonly capped: boolean;
  /** Sorted by `device` (code-unit order), then by `target`. */
  readonly entries: readonly GcPlanEntry[];
  readonly summary: GcPlanSummary;
}

/** What the executor did with one removal entry. */
export interface GcOutcome {
  readonly entry: GcPlanEntry;
  /** `skipped`: the re-check found a change (or the run is dry); nothing was done. */
  readonly outcome: 'removed' | 'quarantined' | 'skipped' | 'failed';
  /** What was done or why not, in words. */
  readonly detail: string;
}
