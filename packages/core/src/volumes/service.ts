/**
 * VolumeService: the facade the apps call for every volume operation (the
 * CSI driver, the CLI, the GC job's ports). It holds the parts and passes
 * them to one module per operation: create.ts, attach.ts, expand.ts,
 * delete.ts, list.ts, activation.ts; volume-group questions go to
 * vg/queries.ts. Keeps no state.
 */
import type { PvStack } from '../device/stack.js';
import type { DataDevice } from '../device/types.js';
import { NotFoundError } from '../errors.js';
import type { LogicalVolume, VolumeGroup } from '../lvm/types.js';
import { validateVgName } from '../lvm/volume-groups.js';
import type { ThinProvisioning } from '../provisioning.js';
import { VolumeGroupQueries, type VolumeGroupCapacity } from '../vg/queries.js';
import { activateOwnedLvs, activateVolume, deactivateSnapshots } from './activation.js';
import { attach, detach } from './attach.js';
import { createVolume } from './create.js';
import { deleteVolume, removeLogicalVolume, type RemovableLv } from './delete.js';
import { expand, type ExpandOptions } from './expand.js';
import { readHeaderSafely, type HeaderReading } from './header-reading.js';
import { listLogicalVolumes, listStatuses, volumeStatus, withCapacities } from './list.js';
import { findVolume, getVolume } from './lookup.js';
import {
  withDefaults,
  type ServiceParts,
  type VolumeFilesystems,
  type VolumeMaps,
  type VolumeParts,
} from './parts.js';
import { resolveRef } from './resolve-ref.js';
import { maximumCapacity } from './size.js';
import { measureThinPool, thinPoolCapacity, type ThinPoolCapacity } from './thin-capacity.js';
import type {
  CreatedVolume,
  CreateVolumeRequest,
  DeleteVolumeOptions,
  DeleteVolumeResult,
  VgScope,
  Volume,
  VolumeScope,
  VolumeStatus,
  WipePolicy,
} from './types.js';
import { wipeDevice, type WipeTarget } from './wipe.js';

/** Default deadline of a wipe (`blkdiscard`), in milliseconds: one hour. */
export const DEFAULT_WIPE_TIMEOUT_MS = 3_600_000;

/** Dependencies and settings of a VolumeService (ServiceParts, and the wipe's). */
export interface VolumeServiceOptions extends ServiceParts<VolumeMaps, VolumeFilesystems> {
  /** Deadline of a wipe in milliseconds; default one hour. */
  readonly wipeTimeoutMs?: number;
  /** Whether a PV (its path) rests on an lvstamp data device; default restsOnDataDevice. */
  readonly pvStack?: (pvPath: string) => Promise<PvStack>;
}

/**
 * The volume life cycle of DESIGN.md §5 for every entrypoint. Each method
 * is one line into the module that does it; its contract is documented
 * there. Every destructive act proves ownership right before it, under
 * the host lock (DESIGN.md §2.3).
 */
export class VolumeService {
  readonly #p: VolumeParts;
  readonly #groups: VolumeGroupQueries;

  constructor(options: VolumeServiceOptions) {
    this.#p = {
      ...withDefaults(options),
      wipeTimeoutMs: options.wipeTimeoutMs ?? DEFAULT_WIPE_TIMEOUT_MS,
    };
    this.#groups = new VolumeGroupQueries({ ...this.#p, pvStack: options.pvStack });
  }

  // ---- volume groups (vg/queries.ts) ----------------------------------------

  /** VolumeGroupQueries.list: every volume group on the host. */
  listVolumeGroups(): Promise<VolumeGroup[]> {
    return this.#groups.list();
  }

  /** VolumeGroupQueries.discover: the groups looked in when none is named. */
  discoverVolumeGroups(): Promise<string[]> {
    return this.#groups.discover();
  }

  /**
   * Checks that every group a person named exists (VolumeGroups.missing),
   * before a command looks in them: a misspelt `--vg` is an error, never
   * an empty listing.
   * @throws NotFoundError naming the missing groups; as VolumeGroups.missing.
   */
  async requireVolumeGroups(vgNames: readonly string[]): Promise<void> {
    const missing = await this.#p.lvm.volumeGroups.missing(vgNames);
    if (missing.length === 1) throw new NotFoundError(`volume group ${missing[0]} does not exist`);
    if (missing.length > 1) {
      throw new NotFoundError(`volume groups ${missing.join(', ')} do not exist`);
    }
  }

  /** VolumeGroupQueries.nested: groups nested in a volume → why. */
  nestedVolumeGroups(): Promise<Map<string, string>> {
    return this.#groups.nested();
  }

  /** VolumeGroupQueries.defaultGroup: where new volumes go when no group is named. */
  defaultVolumeGroup(): Promise<string> {
    return this.#groups.defaultGroup();
  }

  /**
   * Free space of a usable volume group (VolumeGroups.get), in bytes, and
   * the largest capacity a new volume can get (maximumCapacity).
   * @throws as VolumeGroups.get.
   */
  async capacity(vgName: string): Promise<VolumeGroupCapacity> {
    const vg = await this.#p.lvm.volumeGroups.get(vgName);
    return {
      vgName: vg.name,
      totalBytes: vg.sizeBytes,
      freeBytes: vg.freeBytes,
      maximumVolumeBytes: maximumCapacity(vg),
    };
  }

  /**
   * What a thin class's pool can take (DESIGN.md §4 "Thin capacity"):
   * measureThinPool, then thinPoolCapacity.
   * @throws InvalidArgumentError for a bad group name; as measureThinPool.
   */
  async thinPoolCapacity(vgName: string, thin: ThinProvisioning): Promise<ThinPoolCapacity> {
    validateVgName(vgName);
    return thinPoolCapacity(thin, await measureThinPool(this.#p.lvm, vgName, thin));
  }

  // ---- look-ups (list.ts, lookup.ts) ----------------------------------------

  /** list.ts listLogicalVolumes: the scope's lvstamp LVs, no header read. */
  listLogicalVolumes(
    scope: VgScope,
    lvNames?: readonly string[],
  ): ReturnType<typeof listLogicalVolumes> {
    return listLogicalVolumes(this.#p, scope, lvNames);
  }

  /** The scope's volumes with their capacities (list.ts). */
  async listVolumes(scope: VgScope): Promise<Volume[]> {
    return withCapacities(this.#p, (await listLogicalVolumes(this.#p, scope)).volumes);
  }

  /** list.ts withCapacities: capacities from the headers, for a page of a listing. */
  withCapacities(volumes: readonly Volume[]): Promise<Volume[]> {
    return withCapacities(this.#p, volumes);
  }

  /** lookup.ts findVolume: the finished volume, or null. */
  findVolume(volumeId: string, scope: VgScope): Promise<Volume | null> {
    return findVolume(this.#p, volumeId, scope);
  }

  /** lookup.ts getVolume: the finished volume, or NotFoundError. */
  getVolume(volumeId: string, scope: VgScope): Promise<Volume> {
    return getVolume(this.#p, volumeId, scope);
  }

  /**
   * A volume ID from what a person typed: a name, or an existing volume's
   * ID (resolveRef; ambiguity refused). Looks in the scope only.
   * @throws InvalidArgumentError.
   */
  resolve(ref: string, scope: VgScope): Promise<string> {
    return resolveRef(ref, 'volume', async (id) => (await this.findVolume(id, scope)) !== null);
  }

  /** list.ts listStatuses: every volume with header, data device and mounts. */
  list(scope: VgScope): Promise<VolumeStatus[]> {
    return listStatuses(this.#p, scope);
  }

  /** list.ts volumeStatus: one volume's status. */
  status(volumeId: string, scope: VgScope): Promise<VolumeStatus> {
    return volumeStatus(this.#p, volumeId, scope);
  }

  /** Reads sector 0 of a volume's LV (readHeaderSafely); never throws. */
  readHeader(volume: LogicalVolume): Promise<HeaderReading> {
    return readHeaderSafely(volume, this.#p.headers);
  }

  // ---- activation (activation.ts) -------------------------------------------

  /** activation.ts activateVolume: the finished volume, active. */
  activateVolume(volumeId: string, scope: VolumeScope): Promise<Volume> {
    return activateVolume(this.#p, volumeId, scope);
  }

  /** activation.ts activateOwnedLvs: this owner's inactive volumes activated. */
  activateOwnedVolumes(scope: VolumeScope): Promise<string[]> {
    return activateOwnedLvs(this.#p, scope, 'volumes');
  }

  /** activation.ts activateOwnedLvs: this owner's inactive snapshots activated (`-K`). */
  activateOwnedSnapshots(scope: VolumeScope): Promise<string[]> {
    return activateOwnedLvs(this.#p, scope, 'snapshots');
  }

  /** activation.ts deactivateSnapshots: snapshots put back to rest, best effort. */
  deactivateSnapshots(lvs: readonly string[]): Promise<void> {
    return deactivateSnapshots(this.#p, lvs);
  }

  // ---- operations -------------------------------------------------------------

  /** create.ts createVolume. */
  createVolume(request: CreateVolumeRequest): Promise<CreatedVolume> {
    return createVolume(this.#p, request);
  }

  /** createVolume, then the new volume's status: what `lvstamp create` prints. */
  async create(request: CreateVolumeRequest): Promise<VolumeStatus> {
    const volume = await createVolume(this.#p, request);
    const vgNames = [request.vgName, ...(request.otherVgNames ?? [])];
    return volumeStatus(this.#p, volume.volumeId, { vgNames });
  }

  /** attach.ts attach: the data device, after both ownership signals. */
  attach(volumeId: string, scope: VolumeScope): Promise<DataDevice> {
    return attach(this.#p, volumeId, scope);
  }

  /** attach.ts detach: the data device removed; the data stays. */
  detach(volumeId: string, scope?: VgScope): Promise<{ removed: boolean }> {
    return detach(this.#p, volumeId, scope);
  }

  /** expand.ts expand. */
  expand(
    volumeId: string,
    requiredBytes: number,
    scope: VolumeScope,
    options: ExpandOptions = {},
  ): Promise<{ status: VolumeStatus; filesystemGrown: string | null }> {
    return expand(this.#p, volumeId, requiredBytes, scope, options);
  }

  /** delete.ts deleteVolume. */
  delete(
    volumeId: string,
    scope: VolumeScope,
    options: DeleteVolumeOptions = {},
  ): Promise<DeleteVolumeResult> {
    return deleteVolume(this.#p, volumeId, scope, options);
  }

  /**
   * wipe.ts wipeDevice with this service's wipe deadline: the GC's wipe of
   * a thick LV right before its removal (DESIGN.md §5 "Wipe"). The caller
   * holds the host lock and has re-checked the LV.
   */
  wipeLogicalVolume(policy: Exclude<WipePolicy, 'none'>, target: WipeTarget): Promise<void> {
    return wipeDevice(this.#p, policy, target);
  }

  /** delete.ts removeLogicalVolume: the GC's remover. */
  removeLogicalVolume(ref: RemovableLv): Promise<void> {
    return removeLogicalVolume(this.#p, ref);
  }
}
