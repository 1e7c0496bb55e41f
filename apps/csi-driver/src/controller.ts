import { status as GrpcStatus } from '@grpc/grpc-js';
import {
  FILESYSTEM_MINIMUM_BYTES,
  isHexId,
  NotFoundError,
  requireNoControlCharacters,
  thinPoolOf,
  ThinPoolUnusableError,
  volumeIdForName,
  VolumeGroupUnusableError,
  type ThinPoolCapacity,
  type VgScope,
  type Volume,
  type VolumeGroupProblem,
} from '@lvstamp/core';
import {
  controllerCapabilitiesFor,
  readCapability,
  requireCapability,
  offersControllerCapability,
  requireControllerCapability,
} from './capabilities.js';
import type { DeviceClass, DriverConfig } from './config.js';
import { driverScope, thinClassPools, wipePolicyFor } from './config.js';
import type {
  CreateVolumeRequest,
  DeleteVolumeRequest,
  GetCapacityRequest,
  ListVolumesRequest,
  StringMap,
  ValidateVolumeCapabilitiesRequest,
  VolumeCapabilityMsg,
  VolumeMsg,
} from './csi-types.js';
import { requireVolumeIdArg } from './args.js';
import { CsiError, invalidArgument } from './errors.js';
import type { DriverCore } from './ports.js';
import { readCapacityRange, writeBytes } from './sizes.js';
import {
  COPY_CONTEXT_KEY,
  contentSourceMsg,
  createSnapshotHandlers,
  readContentSource,
  withThickClass,
} from './snapshots.js';
import { isThisNode, nodeTopology } from './topology.js';

/** StorageClass parameter naming the device class. */
export const PARAM_DEVICE_CLASS = 'deviceClass';
/** StorageClass parameter restating the class's wipe policy (checked, not overriding). */
export const PARAM_WIPE = 'wipe';
/** Prefix of parameters the Kubernetes sidecars add for themselves; ignored. */
const SIDECAR_PARAM_PREFIX = 'csi.storage.k8s.io/';

/** What the Controller service needs. */
export interface ControllerDeps {
  readonly nodeId: string;
  /** 32 hex digits, written into each new volume's header. */
  readonly ownerId: string;
  readonly config: DriverConfig;
  readonly core: Pick<DriverCore, 'volumes' | 'snapshots'>;
  /**
   * Told after each GetCapacity whether the class's volume group can take
   * volumes (problem null) or not, and why (the log line and metric of
   * docs/LVM-CONFIG.md "Broken volume groups").
   */
  readonly onVolumeGroupState?: (state: VolumeGroupState) => void;
  /** Told after each GetCapacity of a thin class what its pool can take (logs). */
  readonly onThinPoolState?: (state: ThinPoolState) => void;
  /**
   * Told when a thin class's pool cannot be measured or activated
   * (ThinPoolUnusableError, e.g. no thin-pool target in the kernel): the
   * class then reports 0 capacity (logs).
   */
  readonly onThinPoolUnusable?: (state: {
    readonly deviceClass: string;
    readonly pool: string;
    readonly message: string;
  }) => void;
}

/** What GetCapacity found about a thin class's pool. */
export interface ThinPoolState {
  readonly deviceClass: string;
  /** `vg/pool`. */
  readonly pool: string;
  readonly capacity: ThinPoolCapacity;
}

/** What GetCapacity found about a device class's volume group. */
export interface VolumeGroupState {
  readonly deviceClass: string;
  readonly volumeGroup: string;
  /** null: usable. */
  readonly problem: VolumeGroupProblem | null;
  /** lvm's message when unusable. */
  readonly message?: string;
}

/**
 * Reads CreateVolume / GetCapacity / ValidateVolumeCapabilities parameters:
 * `deviceClass` (default: the configured default class) and `wipe`, which
 * must equal the class's policy: the policy is applied at DeleteVolume,
 * which receives no parameters, so it can only come from the class.
 * @throws CsiError INVALID_ARGUMENT for an unknown class, wipe value or key.
 */
export function readParameters(config: DriverConfig, parameters: StringMap): DeviceClass {
  for (const key of Object.keys(parameters)) {
    if (key !== PARAM_DEVICE_CLASS && key !== PARAM_WIPE && !key.startsWith(SIDECAR_PARAM_PREFIX)) {
      throw invalidArgument(
        `unknown parameter "${key}"; lvstamp knows ${PARAM_DEVICE_CLASS} and ${PARAM_WIPE}`,
      );
    }
  }
  const className = parameters[PARAM_DEVICE_CLASS];
  const deviceClass =
    className === undefined ? config.defaultClass : config.deviceClasses.get(className);
  if (deviceClass === undefined) {
    const known = [...config.deviceClasses.keys()].join(', ');
    throw invalidArgument(`unknown device class "${className ?? ''}"; configured: ${known}`);
  }
  const wipe = parameters[PARAM_WIPE];
  if (wipe !== undefined) {
    if (wipe !== 'none' && wipe !== 'discard' && wipe !== 'zero') {
      throw invalidArgument(`parameter wipe must be none, discard or zero, got "${wipe}"`);
    }
    if (wipe !== deviceClass.wipe) {
      throw invalidArgument(
        `device class "${deviceClass.name}" wipes with "${deviceClass.wipe}"; the wipe policy is set per device class, not "${wipe}"`,
      );
    }
  }
  return deviceClass;
}

/**
 * Checks the capabilities of a CreateVolume request.
 * @returns the smallest capacity every filesystem among them can be made
 *   on (FILESYSTEM_MINIMUM_BYTES), in bytes; 0 for raw block only.
 * @throws CsiError INVALID_ARGUMENT for none or an unsupported one.
 */
function requireCapabilities(
  capabilities: readonly VolumeCapabilityMsg[],
  deviceClass: DeviceClass,
): number {
  if (capabilities.length === 0) throw invalidArgument('volume_capabilities is required');
  let minimumBytes = 0;
  for (const capability of capabilities) {
    const access = requireCapability(capability, deviceClass.fsTypes);
    if (access.kind === 'mount') {
      minimumBytes = Math.max(minimumBytes, FILESYSTEM_MINIMUM_BYTES[access.fsType]);
    }
  }
  return minimumBytes;
}

/**
 * The CSI Controller service (CSI spec "Controller Service RPC"), in the
 * distributed provisioning model (DESIGN.md §7): it creates volumes in this
 * node's volume groups only. Each handler: capability check, argument
 * checks, (per-RPC lock: withRpcLocks in lock.ts), look-up, action,
 * response.
 */
export function createControllerService(deps: ControllerDeps) {
  const { config, core, nodeId } = deps;
  const topology = [nodeTopology(nodeId)];
  // capacity 0: unknown (CSI spec Volume.capacity_bytes), e.g. a volume whose header is unreadable
  const toVolumeMsg = (volumeId: string, capacityBytes: number | null): VolumeMsg => ({
    capacity_bytes: writeBytes(capacityBytes ?? 0),
    volume_id: volumeId,
    volume_context: {},
    accessible_topology: topology,
  });
  // Every look-up and act stays in the configured volume groups (DESIGN.md §2.3).
  const scope = driverScope(config, deps.ownerId);
  // When every device class wipes alike, DeleteVolume needs no look-up to choose the policy.
  const wipes = new Set([...config.deviceClasses.values()].map((c) => c.wipe));
  const uniformWipe = wipes.size === 1 ? config.defaultClass.wipe : null;
  const thinPools = thinClassPools(config);
  const offered = controllerCapabilitiesFor(thinPools.length > 0);

  return {
    /**
     * CSI spec CreateVolume. The capacity is what was asked for
     * (required_bytes, else limit_bytes, else the configured default) in
     * whole 4 KiB blocks, raised to the minimum of the capabilities'
     * filesystem (core volumeSize; DESIGN.md §4 "Capacity"). Errors:
     * missing name or capabilities, a name over 128 bytes (CSI "Size
     * Limits", before any lvm command) or with control characters (refused
     * as the CLI refuses it), an unsupported capability, parameter or
     * content source kind → INVALID_ARGUMENT; unsatisfiable capacity range
     * (limit below required, below 4 KiB blocks or the filesystem minimum,
     * or above 2^53 − 1) → OUT_OF_RANGE; requisite topology without this
     * node, a full or a broken volume group (with lvm's message) →
     * RESOURCE_EXHAUSTED; same name with another size or class →
     * ALREADY_EXISTS. Same name, compatible → the same volume. A thin class
     * (DESIGN.md §4 "Thin device classes"): its pool's budget spent, the
     * pool full or its metadata ≥ 80 %, or the pool unusable →
     * RESOURCE_EXHAUSTED before any lvcreate. With a
     * `volume_content_source` (a snapshot, or a volume: a clone) the volume
     * is a thin copy of it (docs/DESIGN.md §5 "Restore and clone"): the
     * source's capacity unless more is asked, a smaller one → OUT_OF_RANGE;
     * an unknown source → NOT_FOUND; a thick source or a class in another
     * volume group → INVALID_ARGUMENT; the response carries content_source.
     */
    CreateVolume: async (request: CreateVolumeRequest) => {
      requireControllerCapability('CREATE_DELETE_VOLUME');
      if (request.name === '') throw invalidArgument('name is required');
      requireNoControlCharacters(request.name, 'name');
      const volumeId = volumeIdForName(request.name);
      const deviceClass = readParameters(config, request.parameters);
      const minimumBytes = requireCapabilities(request.volume_capabilities, deviceClass);
      const source = readContentSource(request.volume_content_source);
      const requisite = request.accessibility_requirements?.requisite ?? [];
      if (requisite.length > 0 && !requisite.some((t) => isThisNode(t, nodeId))) {
        throw new CsiError(
          GrpcStatus.RESOURCE_EXHAUSTED,
          `this driver provisions only on node ${nodeId}, which the requisite topology does not include`,
        );
      }
      const range = readCapacityRange(request.capacity_range);
      if (source !== null) {
        // CSI spec CreateVolume errors, "Source incompatible or not supported": INVALID_ARGUMENT.
        const needed = source.kind === 'snapshot' ? 'CREATE_DELETE_SNAPSHOT' : 'CLONE_VOLUME';
        if (!offersControllerCapability(needed, offered)) {
          throw invalidArgument(
            `a volume from a ${source.kind} needs ${needed}, which this driver offers only with a thin device class (docs/DESIGN.md §5)`,
          );
        }
        const thin = thinPoolOf(deviceClass.provisioning);
        if (thin === null) {
          throw invalidArgument(
            `device class "${deviceClass.name}" is thick; a volume from a snapshot or a volume needs a thin class (docs/DESIGN.md §5)`,
          );
        }
        // A copy: the source's capacity unless more is asked (never less: OUT_OF_RANGE).
        const copy = await core.snapshots
          .createVolumeFrom({
            name: request.name,
            source,
            requiredBytes: range.requiredBytes,
            minimumBytes,
            ...(range.limitBytes > 0 ? { limitBytes: range.limitBytes } : {}),
            vgName: deviceClass.volumeGroup,
            scope,
            thin,
          })
          .catch((error: unknown) => {
            throw withThickClass(config, error);
          });
        return {
          volume: {
            ...toVolumeMsg(volumeId, copy.capacityBytes),
            volume_context: { [COPY_CONTEXT_KEY]: 'true' },
            content_source: contentSourceMsg(source),
          },
        };
      }
      // Nothing asked: the default. A lone limit is what was asked for (the core's size rule).
      const requiredBytes =
        range.requiredBytes === 0 && range.limitBytes === 0
          ? config.defaultCapacityBytes
          : range.requiredBytes;
      // The core applies the size rule (OUT_OF_RANGE before any lvm command) and checks the VG.
      const created = await core.volumes
        .createVolume({
          name: request.name,
          requiredBytes,
          minimumBytes,
          ...(range.limitBytes > 0 ? { limitBytes: range.limitBytes } : {}),
          vgName: deviceClass.volumeGroup,
          otherVgNames: scope.vgNames,
          ownerId: deps.ownerId,
          provisioning: deviceClass.provisioning,
        })
        .catch((error: unknown) => {
          if (error instanceof NotFoundError) {
            throw new CsiError(
              GrpcStatus.FAILED_PRECONDITION,
              `volume group ${deviceClass.volumeGroup} of device class "${deviceClass.name}" does not exist`,
            );
          }
          throw error;
        });
      return { volume: toVolumeMsg(volumeId, created.capacityBytes) };
    },

    /**
     * CSI spec DeleteVolume: an unknown (also a malformed) volume ID is
     * success; one over 128 bytes (CSI "Size Limits") or with control
     * characters → INVALID_ARGUMENT, before any look-up. The blocks are wiped with the policy of the volume group's
     * device class (config.wipePolicyFor); when all classes share one policy
     * it is used without looking the volume up first (one lvs fewer; the
     * core's delete finds the LV itself). Only the configured volume groups
     * are searched. A mounted or open volume, or an LV that fails an
     * ownership check (tags with this owner, header with its ID and owner:
     * DESIGN.md §2.3, core NotOwnedError) → FAILED_PRECONDITION naming the
     * LV and the check, the LV untouched; an lvm failure is an error, never
     * "gone".
     */
    DeleteVolume: async (request: DeleteVolumeRequest) => {
      requireControllerCapability('CREATE_DELETE_VOLUME');
      requireVolumeIdArg(request.volume_id);
      if (!isHexId(request.volume_id)) return {};
      let wipe = uniformWipe;
      if (wipe === null) {
        const volume = await core.volumes.findVolume(request.volume_id, scope);
        wipe = volume === null ? 'none' : wipePolicyFor(config, volume.vgName);
      }
      await core.volumes.delete(request.volume_id, scope, { wipe });
      return {};
    },

    /**
     * CSI spec ValidateVolumeCapabilities: missing ID or capabilities →
     * INVALID_ARGUMENT; unknown volume → NOT_FOUND; otherwise `confirmed`
     * when every capability (and parameter) is supported, else a message.
     */
    ValidateVolumeCapabilities: async (request: ValidateVolumeCapabilitiesRequest) => {
      requireVolumeIdArg(request.volume_id);
      if (request.volume_capabilities.length === 0) {
        throw invalidArgument('volume_capabilities is required');
      }
      const volume = await findOwnVolume(core, request.volume_id, scope);
      if (volume === null)
        throw new CsiError(GrpcStatus.NOT_FOUND, `volume ${request.volume_id} does not exist`);
      let deviceClass: DeviceClass;
      try {
        deviceClass = readParameters(config, request.parameters);
      } catch (error) {
        if (error instanceof CsiError) return { message: error.message };
        throw error;
      }
      for (const capability of request.volume_capabilities) {
        const read = readCapability(capability, deviceClass.fsTypes);
        if ('unsupported' in read) return { message: read.unsupported };
      }
      return {
        confirmed: {
          volume_context: request.volume_context,
          volume_capabilities: request.volume_capabilities,
          parameters: request.parameters,
          mutable_parameters: {},
        },
      };
    },

    /**
     * CSI spec ListVolumes: finished volumes in the configured volume groups,
     * ordered by volume ID, one look-up, then a header read for the
     * capacity of each volume of the page only. `next_token` is the last ID returned; a page
     * starts after it, so deletions between pages skip nothing. A token
     * that is not a volume ID, an over-long one too → ABORTED (the RPC's own
     * code for an invalid token); negative max_entries → INVALID_ARGUMENT.
     */
    ListVolumes: async (request: ListVolumesRequest) => {
      requireControllerCapability('LIST_VOLUMES');
      if (request.max_entries < 0) throw invalidArgument('max_entries must not be negative');
      const token = request.starting_token;
      if (token !== '' && !isHexId(token)) {
        throw new CsiError(
          GrpcStatus.ABORTED,
          `starting_token "${token}" is not a token this driver issued`,
        );
      }
      const volumes = (await core.volumes.listLogicalVolumes(scope)).volumes
        .filter((v) => !v.creating)
        .sort((a, b) => (a.volumeId < b.volumeId ? -1 : a.volumeId > b.volumeId ? 1 : 0))
        .filter((v) => token === '' || v.volumeId > token);
      const page = request.max_entries > 0 ? volumes.slice(0, request.max_entries) : volumes;
      const more = page.length < volumes.length;
      // Capacities from the headers of this page's volumes only (one sector-0 read each).
      const entries = (await core.volumes.withCapacities(page)).map((v) => ({
        volume: toVolumeMsg(v.volumeId, v.capacityBytes),
      }));
      return {
        entries,
        next_token: more ? (page.at(-1)?.volumeId ?? '') : '',
      };
    },

    /**
     * CSI spec GetCapacity, per device class (parameters) and topology:
     * `available_capacity` is the volume group's free bytes,
     * `maximum_volume_size` the largest volume that fits (free extents minus
     * the 1 MiB data offset). A topology other than this node, or a
     * capability the class cannot serve, has 0 bytes; so has a broken volume
     * group (a PV missing or seen twice, read-only, shared), reported through
     * onVolumeGroupState (docs/LVM-CONFIG.md). A capability whose access mode
     * is UNKNOWN (or absent) constrains only the access type, and an empty
     * fs_type stands for the parameter `csi.storage.k8s.io/fstype` (else
     * the class's first filesystem): the
     * external-provisioner's capacity controller asks with exactly that (a
     * mount capability, mode UNKNOWN: "capacity is independent of the
     * capabilities"), and answering 0 there would publish CSIStorageCapacity
     * objects of 0 bytes, which make the scheduler refuse every pod of every
     * WaitForFirstConsumer claim (docs/kubernetes.md). A thin class answers
     * its pool's capacity (core thinPoolCapacity, DESIGN.md §4 "Thin
     * capacity") in both fields: exactly what CreateVolume admits, 0 for a
     * full, unhealthy or unusable pool.
     */
    GetCapacity: async (request: GetCapacityRequest) => {
      requireControllerCapability('GET_CAPACITY');
      const deviceClass = readParameters(config, request.parameters);
      const none = { available_capacity: '0', maximum_volume_size: { value: '0' } };
      if (request.accessible_topology && !isThisNode(request.accessible_topology, nodeId))
        return none;
      // an empty fs_type is the StorageClass's csi.storage.k8s.io/fstype, else any the class takes
      const fsType = request.parameters[`${SIDECAR_PARAM_PREFIX}fstype`] ?? deviceClass.fsTypes[0];
      for (const capability of request.volume_capabilities) {
        const mode = capability.access_mode?.mode ?? 'UNKNOWN';
        const mount = capability.mount;
        const asked = {
          ...capability,
          access_mode:
            mode === 'UNKNOWN'
              ? { mode: 'SINGLE_NODE_WRITER' as const }
              : (capability.access_mode ?? null),
          ...(mount && mount.fs_type === '' && fsType !== undefined
            ? { mount: { ...mount, fs_type: fsType } }
            : {}),
        };
        if ('unsupported' in readCapability(asked, deviceClass.fsTypes)) return none;
      }
      const report = (problem: VolumeGroupProblem | null, message?: string) =>
        deps.onVolumeGroupState?.({
          deviceClass: deviceClass.name,
          volumeGroup: deviceClass.volumeGroup,
          problem,
          ...(message === undefined ? {} : { message }),
        });
      const thin = deviceClass.provisioning.type === 'thin' ? deviceClass.provisioning : null;
      if (thin !== null) {
        let pool: ThinPoolCapacity;
        try {
          pool = await core.volumes.thinPoolCapacity(deviceClass.volumeGroup, thin);
        } catch (error) {
          if (error instanceof ThinPoolUnusableError) {
            // what CreateVolume would answer (RESOURCE_EXHAUSTED): this class takes nothing here
            deps.onThinPoolUnusable?.({
              deviceClass: deviceClass.name,
              pool: `${deviceClass.volumeGroup}/${thin.thinPool}`,
              message: error.message,
            });
            return none;
          }
          if (!(error instanceof VolumeGroupUnusableError)) throw error;
          report(error.problem, error.message);
          return none;
        }
        report(null);
        deps.onThinPoolState?.({
          deviceClass: deviceClass.name,
          pool: `${deviceClass.volumeGroup}/${thin.thinPool}`,
          capacity: pool,
        });
        // What a create admits: the pool's budget and free space, one volume at most the pool.
        return {
          available_capacity: writeBytes(pool.capacityBytes),
          maximum_volume_size: { value: writeBytes(pool.capacityBytes) },
        };
      }
      let capacity;
      try {
        capacity = await core.volumes.capacity(deviceClass.volumeGroup);
      } catch (error) {
        // A broken group has no capacity until an operator repairs it; the provisioner then
        // places claims elsewhere, and Probe stays ready (restarting the driver heals no disk).
        if (!(error instanceof VolumeGroupUnusableError)) throw error;
        report(error.problem, error.message);
        return none;
      }
      report(null);
      return {
        available_capacity: writeBytes(capacity.freeBytes),
        maximum_volume_size: { value: writeBytes(capacity.maximumVolumeBytes) },
      };
    },

    ControllerGetCapabilities: () =>
      Promise.resolve({ capabilities: offered.map((type) => ({ rpc: { type } })) }),

    /**
     * Not offered: lvstamp expands on the node only (NodeExpandVolume), so the
     * external-resizer of one node never asks its own driver about another
     * node's volume (docs/DESIGN.md "Expansion on the node").
     */
    ControllerExpandVolume: () => unimplemented('EXPAND_VOLUME'),

    ControllerPublishVolume: () => unimplemented('PUBLISH_UNPUBLISH_VOLUME'),
    ControllerUnpublishVolume: () => unimplemented('PUBLISH_UNPUBLISH_VOLUME'),
    ...createSnapshotHandlers({ config, core, scope, offered }),
    GetSnapshot: () => unimplemented('GET_SNAPSHOT'),
    ControllerGetVolume: () => unimplemented('GET_VOLUME'),
    ControllerModifyVolume: () => unimplemented('MODIFY_VOLUME'),
  };
}

/** RPCs whose capability lvstamp does not declare: UNIMPLEMENTED (CSI spec). */
function unimplemented(capability: string): Promise<never> {
  return Promise.reject(
    new CsiError(GrpcStatus.UNIMPLEMENTED, `${capability} is not offered by lvstamp`),
  );
}

/**
 * The finished volume with this ID in the driver's volume groups, or null
 * for an unknown or malformed ID.
 */
async function findOwnVolume(
  core: Pick<DriverCore, 'volumes'>,
  volumeId: string,
  scope: VgScope,
): Promise<Volume | null> {
  if (!isHexId(volumeId)) return null;
  return core.volumes.findVolume(volumeId, scope);
}
