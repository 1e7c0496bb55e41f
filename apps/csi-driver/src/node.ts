import { status as GrpcStatus } from '@grpc/grpc-js';
import {
  isHexId,
  mountsAt,
  NotFoundError,
  VolumeGroupUnusableError,
  type VolumeStatus,
} from '@lvstamp/core';
import {
  isReadOnlyMode,
  NODE_CAPABILITIES,
  requireCapability,
  requireNodeCapability,
} from './capabilities.js';
import type {
  NodeExpandVolumeRequest,
  NodeGetVolumeStatsRequest,
  NodePublishVolumeRequest,
  NodeStageVolumeRequest,
  NodeUnpublishVolumeRequest,
  NodeUnstageVolumeRequest,
} from './csi-types.js';
import { CsiError, invalidArgument } from './errors.js';
import type { DriverCore, NodePaths } from './ports.js';
import { readCapacityRange, writeBytes } from './sizes.js';
import { nodeTopology } from './topology.js';

/** What the Node service needs. */
export interface NodeDeps {
  readonly nodeId: string;
  readonly core: DriverCore;
  readonly paths: NodePaths;
}

function required(value: string, field: string): void {
  if (value === '') throw invalidArgument(`${field} is required`);
}

/** A malformed volume ID names no volume: NOT_FOUND (CSI spec, node RPC errors). */
function requireVolumeIdShape(volumeId: string): void {
  if (!isHexId(volumeId))
    throw new CsiError(GrpcStatus.NOT_FOUND, `volume ${volumeId} does not exist`);
}

async function statusOf(core: DriverCore, volumeId: string): Promise<VolumeStatus> {
  requireVolumeIdShape(volumeId);
  try {
    return await core.volumes.status(volumeId);
  } catch (error) {
    if (error instanceof NotFoundError) throw new CsiError(GrpcStatus.NOT_FOUND, error.message);
    throw error;
  }
}

/**
 * The CSI Node service (CSI spec "Node Service RPC"). State comes only from
 * LVM, device-mapper and mountinfo (through the core), so a restarted driver
 * picks up where it was. Each handler: capability check, argument checks,
 * (per-volume lock: lock.ts), look-up, action, response.
 */
export function createNodeService(deps: NodeDeps) {
  const { core, paths } = deps;

  /** The data device is mounted (by major:minor, from mountinfo) at `path`. */
  const isStagedAt = async (status: VolumeStatus, path: string): Promise<boolean> => {
    const device = status.dataDevice;
    if (device === null) return false;
    const top = mountsAt(await core.filesystems.mounts(), path).at(-1);
    return top !== undefined && top.major === device.major && top.minor === device.minor;
  };

  return {
    /**
     * CSI spec NodeStageVolume: creates the data device (both ownership
     * signals are checked first); for a mount volume formats it only when
     * blkid says blank and it reads (never another filesystem:
     * FAILED_PRECONDITION) and mounts it at the staging path. Idempotent.
     * Unknown or malformed volume ID → NOT_FOUND (CSI spec NodeStageVolume errors).
     */
    NodeStageVolume: async (request: NodeStageVolumeRequest) => {
      requireNodeCapability('STAGE_UNSTAGE_VOLUME');
      required(request.volume_id, 'volume_id');
      required(request.staging_target_path, 'staging_target_path');
      if (!request.volume_capability) throw invalidArgument('volume_capability is required');
      const access = requireCapability(request.volume_capability);
      requireVolumeIdShape(request.volume_id);
      // attach looks the volume up itself (one lvs): an unknown volume is its NotFoundError,
      // which errors.ts maps to NOT_FOUND; no separate status look-up (3 fewer commands).
      const device = await core.volumes.attach(request.volume_id);
      if (access.kind === 'block') return {};
      await core.filesystems.format(device.path, access.fsType);
      await paths.ensureDirectory(request.staging_target_path);
      await core.filesystems.mount(device.path, request.staging_target_path, {
        fsType: access.fsType,
        options: access.mountFlags,
      });
      return {};
    },

    /**
     * CSI spec NodeUnstageVolume: unmounts the staging path and removes the
     * data device; both idempotent, so a repeated call succeeds. Refused
     * (FAILED_PRECONDITION) while the device is still mounted elsewhere.
     */
    NodeUnstageVolume: async (request: NodeUnstageVolumeRequest) => {
      requireNodeCapability('STAGE_UNSTAGE_VOLUME');
      required(request.volume_id, 'volume_id');
      required(request.staging_target_path, 'staging_target_path');
      requireVolumeIdShape(request.volume_id);
      await core.filesystems.unmount(request.staging_target_path);
      await core.volumes.detach(request.volume_id);
      return {};
    },

    /**
     * CSI spec NodePublishVolume: bind-mounts the staging path on the target
     * directory (mount) or the data device node on a target file (block),
     * read-only when asked or for SINGLE_NODE_READER_ONLY. The same publish
     * again succeeds without a second mount; other options on the same
     * target → ALREADY_EXISTS; not staged → FAILED_PRECONDITION.
     */
    NodePublishVolume: async (request: NodePublishVolumeRequest) => {
      required(request.volume_id, 'volume_id');
      required(request.target_path, 'target_path');
      required(request.staging_target_path, 'staging_target_path');
      if (!request.volume_capability) throw invalidArgument('volume_capability is required');
      const access = requireCapability(request.volume_capability);
      const status = await statusOf(core, request.volume_id);
      const readonly = request.readonly || isReadOnlyMode(access.mode);
      if (access.kind === 'block') {
        if (status.dataDevice === null) {
          throw new CsiError(
            GrpcStatus.FAILED_PRECONDITION,
            `volume ${request.volume_id} is not staged (no data device)`,
          );
        }
        await paths.ensureFile(request.target_path);
        await core.filesystems.bindMount(status.dataDevice.path, request.target_path, { readonly });
        return {};
      }
      if (!(await isStagedAt(status, request.staging_target_path))) {
        throw new CsiError(
          GrpcStatus.FAILED_PRECONDITION,
          `volume ${request.volume_id} is not staged at ${request.staging_target_path}`,
        );
      }
      await paths.ensureDirectory(request.target_path);
      await core.filesystems.bindMount(request.staging_target_path, request.target_path, {
        readonly,
      });
      return {};
    },

    /**
     * CSI spec NodeUnpublishVolume: unmounts the target and removes it. A
     * missing or unmounted target succeeds (and is removed); a busy unmount
     * fails (the umount error), never reported as success.
     */
    NodeUnpublishVolume: async (request: NodeUnpublishVolumeRequest) => {
      required(request.volume_id, 'volume_id');
      required(request.target_path, 'target_path');
      requireVolumeIdShape(request.volume_id);
      await core.filesystems.unmount(request.target_path);
      await paths.remove(request.target_path);
      return {};
    },

    /**
     * CSI spec NodeGetVolumeStats: bytes and inodes (statfs) for a mounted
     * filesystem, total bytes for a block volume; volume_condition abnormal
     * with a message when the LV or its data device is missing, or its
     * volume group is broken (docs/LVM-CONFIG.md). A path that
     * does not exist → NOT_FOUND.
     */
    NodeGetVolumeStats: async (request: NodeGetVolumeStatsRequest) => {
      requireNodeCapability('GET_VOLUME_STATS');
      required(request.volume_id, 'volume_id');
      required(request.volume_path, 'volume_path');
      requireVolumeIdShape(request.volume_id);
      const kind = await paths.kind(request.volume_path);
      if (kind === 'missing') {
        throw new CsiError(
          GrpcStatus.NOT_FOUND,
          `volume path ${request.volume_path} does not exist`,
        );
      }
      const volume = await core.lvm.findVolume(request.volume_id);
      let condition = { abnormal: false, message: 'ok' };
      let capacityBytes: number | null = null;
      if (volume === null) {
        condition = {
          abnormal: true,
          message: `the logical volume of ${request.volume_id} is missing`,
        };
      } else {
        capacityBytes = volume.capacityBytes;
        const status = await core.volumes.status(request.volume_id);
        const broken = await volumeGroupProblem(core, volume.vgName);
        if (status.dataDevice === null) {
          condition = {
            abnormal: true,
            message: `the data device of ${request.volume_id} is missing`,
          };
        } else if (broken !== null) {
          condition = { abnormal: true, message: broken };
        }
      }
      if (kind === 'block-device') {
        const usage =
          capacityBytes === null
            ? []
            : [{ unit: 'BYTES', total: writeBytes(capacityBytes), available: '0', used: '0' }];
        return { usage, volume_condition: condition };
      }
      const fs = await core.filesystems.usage(request.volume_path);
      return {
        usage: [
          {
            unit: 'BYTES',
            total: writeBytes(fs.totalBytes),
            available: writeBytes(fs.availableBytes),
            used: writeBytes(fs.usedBytes),
          },
          {
            unit: 'INODES',
            total: writeBytes(fs.totalInodes),
            available: writeBytes(fs.freeInodes),
            used: writeBytes(fs.totalInodes - fs.freeInodes),
          },
        ],
        volume_condition: condition,
      };
    },

    /**
     * CSI spec NodeExpandVolume: lvextend to the requested size when needed,
     * data-device reload, online filesystem grow where it is mounted (all in
     * the core, each step idempotent, so repeated calls converge). Returns
     * the capacity (core volumeSize; without required_bytes the current
     * one, so a repeated call still reloads and grows). Unknown volume or
     * path → NOT_FOUND; a limit below the capacity → OUT_OF_RANGE.
     */
    NodeExpandVolume: async (request: NodeExpandVolumeRequest) => {
      requireNodeCapability('EXPAND_VOLUME');
      required(request.volume_id, 'volume_id');
      required(request.volume_path, 'volume_path');
      if (request.volume_capability) requireCapability(request.volume_capability);
      const range = readCapacityRange(request.capacity_range);
      const status = await statusOf(core, request.volume_id);
      if ((await paths.kind(request.volume_path)) === 'missing') {
        throw new CsiError(
          GrpcStatus.NOT_FOUND,
          `volume path ${request.volume_path} does not exist`,
        );
      }
      // No required bytes: at least one byte, so the core keeps the capacity and converges.
      const { status: after } = await core.volumes.expand(
        status.volume.volumeId,
        Math.max(range.requiredBytes, 1),
        range.limitBytes > 0 ? { limitBytes: range.limitBytes } : {},
      );
      return { capacity_bytes: writeBytes(after.volume.capacityBytes ?? 0) };
    },

    NodeGetCapabilities: () =>
      Promise.resolve({ capabilities: NODE_CAPABILITIES.map((type) => ({ rpc: { type } })) }),

    /** CSI spec NodeGetInfo: the node ID and topology `topology.lvstamp.io/node=<node ID>`. */
    NodeGetInfo: () =>
      Promise.resolve({
        node_id: deps.nodeId,
        max_volumes_per_node: '0',
        accessible_topology: nodeTopology(deps.nodeId),
      }),
  };
}

/**
 * Why the volume group cannot be changed (a PV missing or seen twice,
 * read-only, shared: docs/LVM-CONFIG.md), or null when it can: the volume
 * still serves I/O, but cannot be expanded or deleted until it is repaired.
 */
async function volumeGroupProblem(
  core: Pick<DriverCore, 'lvm'>,
  vgName: string,
): Promise<string | null> {
  try {
    await core.lvm.capacity(vgName);
    return null;
  } catch (error) {
    if (error instanceof VolumeGroupUnusableError) return error.message;
    throw error;
  }
}
