import { status as GrpcStatus } from '@grpc/grpc-js';
import {
  FILESYSTEM_MINIMUM_BYTES,
  isHexId,
  NotFoundError,
  requireNoControlCharacters,
  thinPoolOf,
  volumeIdForName,
  type VgScope,
  type Volume,
  type VolumeScope,
} from '@lvstamp/core';
import {
  offersControllerCapability,
  readCapability,
  requireCapability,
  requireControllerCapability,
  type ControllerCapability,
} from './capabilities.js';
import type { DeviceClass, DriverConfig } from './config.js';
import { wipePolicyFor } from './config.js';
import type {
  CreateVolumeRequest,
  DeleteVolumeRequest,
  ListVolumesRequest,
  ValidateVolumeCapabilitiesRequest,
  VolumeCapabilityMsg,
  VolumeMsg,
} from './csi-types.js';
import { requireVolumeIdArg } from './args.js';
import { CsiError, invalidArgument } from './errors.js';
import { readParameters } from './parameters.js';
import type { DriverCore } from './ports.js';
import { readCapacityRange, writeBytes } from './sizes.js';
import {
  COPY_CONTEXT_KEY,
  contentSourceMsg,
  readContentSource,
  withThickClass,
} from './snapshots.js';
import { isThisNode, nodeTopology } from './topology.js';

/** What the volume RPCs need. */
export interface VolumeDeps {
  readonly nodeId: string;
  readonly config: DriverConfig;
  readonly core: Pick<DriverCore, 'volumes' | 'snapshots'>;
  /** The configured volume groups and this installation's owner ID (config.driverScope). */
  readonly scope: VolumeScope;
  /** The controller capabilities offered (controllerCapabilitiesFor). */
  readonly offered: readonly ControllerCapability[];
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
 * The CSI volume RPCs of the Controller service (CSI spec "CreateVolume",
 * "DeleteVolume", "ValidateVolumeCapabilities", "ListVolumes") over the
 * core's VolumeService and, for a volume from a content source, its
 * SnapshotService; in the configured volume groups only (DESIGN.md §2.3).
 */
export function createVolumeHandlers(deps: VolumeDeps) {
  const { config, core, nodeId, scope, offered } = deps;
  const topology = [nodeTopology(nodeId)];
  // capacity 0: unknown (CSI spec Volume.capacity_bytes), e.g. a volume whose header is unreadable
  const toVolumeMsg = (volumeId: string, capacityBytes: number | null): VolumeMsg => ({
    capacity_bytes: writeBytes(capacityBytes ?? 0),
    volume_id: volumeId,
    volume_context: {},
    accessible_topology: topology,
  });
  // When every device class wipes alike, DeleteVolume needs no look-up to choose the policy.
  const wipes = new Set([...config.deviceClasses.values()].map((c) => c.wipe));
  const uniformWipe = wipes.size === 1 ? config.defaultClass.wipe : null;

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
          ownerId: scope.ownerId,
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
  };
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
