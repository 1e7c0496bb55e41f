import {
  ThinPoolUnusableError,
  VolumeGroupUnusableError,
  type ThinPoolCapacity,
  type VolumeGroupProblem,
} from '@lvstamp/core';
import { readCapability, requireControllerCapability } from './capabilities.js';
import type { DriverConfig } from './config.js';
import type { GetCapacityRequest } from './csi-types.js';
import { readParameters, SIDECAR_PARAM_PREFIX } from './parameters.js';
import type { DriverCore } from './ports.js';
import { writeBytes } from './sizes.js';
import { isThisNode } from './topology.js';

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

/** Who GetCapacity tells what it found (the driver's logs and metrics; all optional). */
export interface CapacityReports {
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

/** What the capacity RPC needs. */
export interface CapacityDeps extends CapacityReports {
  readonly nodeId: string;
  readonly config: DriverConfig;
  readonly core: Pick<DriverCore, 'volumes'>;
}

/**
 * The CSI capacity RPC (CSI spec "GetCapacity") over the core's capacity
 * measures: a volume group's free extents, a thin pool's budget.
 */
export function createCapacityHandlers(deps: CapacityDeps) {
  const { config, core, nodeId } = deps;
  return {
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
  };
}
