/**
 * The small structural interfaces (ports) the GC needs from the rest of the
 * core. The GC codes against these, never against the concrete classes, so
 * the real VolumeService, BlockHeaderIo, DataDeviceManager and HostLock fit
 * without the GC importing them, and tests pass fakes that record calls.
 */
import type { DecodeResult } from '../header/types.js';
import type { DmMap } from '../device/types.js';
import type { LogicalVolume, UnusableGroup } from '../lvm/types.js';
import type { VgScope, Volume, VolumeScope, WipePolicy } from '../volumes/types.js';
import type { WipeTarget } from '../volumes/wipe.js';

/** Lists lvstamp LVs: the port `volumes`, filled by VolumeService. */
export interface GcVolumesPort {
  /**
   * The LVs whose names carry the lvstamp prefix in the scope's volume groups
   * only (DESIGN.md §2.3), from one look-up, no header read: `volumes`
   * (`lvstamp_<id>` and `lvstamp_new_<id>`, `capacityBytes` null) and
   * `snapshots` (`lvstamp_snap_<id>`, active or not, whatever their tags;
   * DESIGN.md §6 "Snapshots"). With `lvNames`, only LVs of those names (a
   * removal's re-check); `unusableGroups`: the groups of that look-up lvm
   * refuses to change (a missing or duplicate PV, …), from the same report.
   * Throws (CommandFailedError, UnparseableOutputError,
   * FailedPreconditionError for two VGs of one name, …) when lvm fails; a
   * failure is never an empty list.
   */
  listLogicalVolumes(
    scope: VgScope,
    lvNames?: readonly string[],
  ): Promise<{
    readonly volumes: readonly Volume[];
    readonly snapshots: readonly LogicalVolume[];
    /**
     * `lvstamp_q_<id>` and `lvstamp_qs_<id>` from the same look-up (their
     * prefix extends the lvstamp prefix), active or not, whatever their tags:
     * the inventory's quarantined LVs (DESIGN.md §6 "Inventory").
     */
    readonly quarantined: readonly LogicalVolume[];
    readonly unusableGroups?: readonly UnusableGroup[];
  }>;
}

/** Activates this owner's inactive volumes and finds the volume groups to scan (VolumeService). */
export interface GcScopePort {
  /**
   * Activates each inactive lvstamp LV of the scope that carries the lvstamp
   * tag and this owner's tag (`lvchange --activate y <vg>/<lv>` under the
   * host lock), so that its header can be read; returns `vg/lv` of each.
   */
  activateOwnedVolumes(scope: VolumeScope): Promise<readonly string[]>;
  /**
   * Activates each inactive snapshot LV of the scope that carries the
   * lvstamp tag and this owner's tag (`lvchange -ay -K <vg>/<lv>` under the
   * host lock: thin snapshots skip a plain activation); returns `vg/lv` of each.
   */
  activateOwnedSnapshots(scope: VolumeScope): Promise<readonly string[]>;
  /**
   * Deactivates snapshot LVs that `activateOwnedSnapshots` activated
   * (`lvchange --activate n <vg>/<lv>` each, under the host lock), so that
   * they rest inactive again (DESIGN.md §3). Best effort: a failure is
   * logged, never thrown.
   * @param lvs `vg/lv` of each, as activateOwnedSnapshots returned them.
   */
  deactivateSnapshots(lvs: readonly string[]): Promise<void>;
  /** Volume groups tagged `lvstamp` or holding lvstamp-tagged LVs. */
  discoverVolumeGroups(): Promise<readonly string[]>;
}

/** Identifies one LV exactly, for removal. */
export interface LvRef {
  readonly vgName: string;
  readonly lvName: string;
  /** lvm's `lv_uuid`; the remover must act on this LV only (e.g. `lvremove -S lv_uuid=…`). */
  readonly lvUuid: string;
  /** The LV must carry the lvstamp tag and `lvstamp.owner=<ownerId>` (DESIGN.md §2.3). */
  readonly ownerId: string;
}

/** Removes one LV (VolumeService.removeLogicalVolume). */
export interface GcLvRemoverPort {
  /**
   * Removes exactly the LV `ref` names (`lvremove --yes`), nothing else: not
   * the data device map (the executor removes it first), not another LV with
   * the same volume ID. Re-checks its uuid, name and tags first. The
   * caller holds the host lock across the call (the executor does, per
   * entry). Throws CommandFailedError on failure, FailedPreconditionError
   * when a re-check fails.
   */
  removeLogicalVolume(ref: LvRef): Promise<void>;
}

/** Wipes one LV's device before its removal (VolumeService.wipeLogicalVolume). */
export interface GcWipePort {
  /**
   * Makes every byte of `target` read zeros, past the header's 4 KiB first
   * and those last (volumes/wipe.ts wipeDevice, DESIGN.md §5 "Wipe"). The
   * caller holds the host lock and has re-checked the LV.
   * @throws CommandFailedError, CommandTimeoutError: the LV must then stay.
   */
  wipeLogicalVolume(policy: Exclude<WipePolicy, 'none'>, target: WipeTarget): Promise<void>;
}

/** One LV to quarantine (DESIGN.md §6 "Quarantine"). */
export interface QuarantineRef extends LvRef {
  readonly kind: 'volume' | 'snapshot';
  /** Volume or snapshot ID from the LV name. */
  readonly id: string;
}

/** Lists, marks, renames and activates quarantined LVs (volumes/quarantine.ts, QuarantineService). */
export interface GcQuarantinePort {
  /**
   * The LVs named `lvstamp_q_<id>` or `lvstamp_qs_<id>` in the scope's
   * volume groups (one look-up), active or not, whatever their tags; with
   * `lvNames`, only those names; `unusableGroups` as in
   * GcVolumesPort.listLogicalVolumes, from the same look-up. The executor's
   * re-check before an expiry asks it; the inventory takes the quarantined
   * LVs from GcVolumesPort.listLogicalVolumes instead. Throws as
   * GcVolumesPort.listLogicalVolumes.
   */
  listQuarantined(
    scope: VgScope,
    lvNames?: readonly string[],
  ): Promise<{
    readonly lvs: readonly LogicalVolume[];
    readonly unusableGroups?: readonly UnusableGroup[];
  }>;
  /**
   * Quarantine step 2: after a re-check by `lv_uuid` of name, volume group
   * and tags, one `lvchange --addtag lvstamp.quarantined=<atSeconds>
   * --activate n` (a volume) or the same with the snapshot; an LV that
   * already carries a quarantine tag (an interrupted run) keeps it and is
   * only deactivated when active. Under the host lock.
   * @throws FailedPreconditionError when the re-check fails; CommandFailedError.
   */
  markQuarantined(ref: QuarantineRef, atSeconds: number): Promise<void>;
  /**
   * Quarantine step 3: `lvrename` of the marked LV to `lvstamp_q_<id>` or
   * `lvstamp_qs_<id>`, after the same re-check and that it carries the
   * quarantine tag. Under the host lock.
   * @throws FailedPreconditionError when the re-check fails or the name is taken; CommandFailedError.
   */
  renameQuarantined(ref: QuarantineRef): Promise<void>;
  /**
   * Activates each quarantined LV that is inactive and carries `lvstamp`
   * and this owner's tag (a volume `lvchange -ay`, a snapshot `-ay -K`),
   * under the host lock; returns `vg/lv` of each activated.
   */
  activateQuarantined(
    scope: { readonly vgNames: readonly string[]; readonly ownerId: string },
    lvNames: readonly string[],
  ): Promise<string[]>;
  /** Deactivates these quarantined LVs (`vg/lv`) again; best effort, logged, never thrown. */
  deactivateQuarantined(lvs: readonly string[]): Promise<void>;
}

/** Reads sector 0 of a block device (BlockHeaderIo). */
export interface GcHeaderPort {
  /**
   * Reads and decodes the header of `devicePath` (a `/dev/...` path). May
   * throw when the device cannot be opened or read; the GC catches that.
   */
  readHeader(devicePath: string): Promise<DecodeResult>;
}

/**
 * Target of a data device's linear table, in kernel device numbers. The
 * device layer's table type has more fields (start, length and offset in
 * 512-byte sectors); the GC needs only the target.
 */
export interface GcLinearTarget {
  readonly major: number;
  readonly minor: number;
}

/** Lists device-mapper maps and data-device tables (DataDeviceManager). */
export interface GcDevicePort {
  /** Every device-mapper map on the host (LV devices included), with open counts. */
  listAll(): Promise<readonly DmMap[]>;
  /**
   * The linear table of the data device whose UUID is `LVSTAMP-<volumeId>`
   * (one `dmsetup info` and one `dmsetup table`; the executor's re-check).
   * Null when no map has that UUID or it has no live table. Throws
   * (UnparseableOutputError) when its table is not one linear segment.
   */
  table(volumeId: string): Promise<GcLinearTarget | null>;
  /**
   * The same answer as `table(id)` for every ID in `volumeIds`, from one
   * command whatever their number (`dmsetup table --concise`; the
   * inventory's read). One entry per distinct ID; null as for `table`.
   * Throws as `table` does for any one of them.
   */
  tables(volumeIds: readonly string[]): Promise<ReadonlyMap<string, GcLinearTarget | null>>;
}

/** Removes data device maps (DataDeviceManager). */
export interface GcDeviceRemoverPort {
  /** Removes map `lvstamp-<volumeId>`; the data on the LV is untouched. */
  remove(volumeId: string): Promise<void>;
}

/** The host-wide lock that serialises mutating lvm work across processes (HostLock). */
export interface GcHostLockPort {
  /**
   * Runs `fn` while holding the host lock; `reason` is recorded for whoever
   * waits. Throws LockTimeoutError when the lock cannot be taken in time.
   */
  withLock<T>(reason: string, fn: () => Promise<T>): Promise<T>;
}

/**
 * What `takeInventory` reads. Its devices port has no per-map `table`: the
 * inventory reads every table with one `tables` call.
 */
export interface GcInventoryPorts {
  readonly volumes: GcVolumesPort;
  /**
   * The node's quarantine port, when quarantine is wired: the inventory then
   * lists the quarantined LVs of `volumes.listLogicalVolumes` (it asks this
   * port nothing itself); absent, the inventory's `quarantined` stays absent.
   */
  readonly quarantine?: Pick<GcQuarantinePort, 'listQuarantined'>;
  readonly headers: GcHeaderPort;
  readonly devices: Pick<GcDevicePort, 'listAll' | 'tables'>;
}

/** What `applyGcPlan` reads and changes. */
export interface GcExecutorPorts {
  readonly volumes: GcVolumesPort & GcLvRemoverPort & GcScopePort & GcWipePort;
  /** Needed for plans that quarantine or expire; absent, such entries fail. */
  readonly quarantine?: GcQuarantinePort;
  readonly headers: GcHeaderPort;
  readonly devices: GcDevicePort & GcDeviceRemoverPort;
  readonly hostLock: GcHostLockPort;
}
