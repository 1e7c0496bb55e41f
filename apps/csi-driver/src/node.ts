import { status as GrpcStatus } from '@grpc/grpc-js';
import {
  NotFoundError,
  OutOfSpaceError,
  type ThinClassPool,
  type VolumeScope,
  type VolumeStatus,
} from '@lvstamp/core';
import {
  isReadOnlyMode,
  NODE_CAPABILITIES,
  requireCapability,
  requireNodeCapability,
} from './capabilities.js';
import { COPY_CONTEXT_KEY } from './snapshots.js';
import type {
  NodeExpandVolumeRequest,
  NodeGetVolumeStatsRequest,
  NodePublishVolumeRequest,
  NodeStageVolumeRequest,
  NodeUnpublishVolumeRequest,
  NodeUnstageVolumeRequest,
} from './csi-types.js';
import { CsiError, invalidArgument } from './errors.js';
import {
  requirePathArg,
  requirePathKind,
  requireVolumeIdArg,
  requireVolumeIdShape,
  requireVolumePathArg,
} from './args.js';
import type { DriverCore, NodePaths } from './ports.js';
import { readCapacityRange, writeBytes } from './sizes.js';
import { nodeTopology } from './topology.js';
import { volumeCondition } from './volume-condition.js';
import { volumePathChecks } from './volume-paths.js';

/** What the Node service needs. */
export interface NodeDeps {
  readonly nodeId: string;
  readonly core: DriverCore;
  readonly paths: NodePaths;
  /** The configured volume groups and the owner ID (config.driverScope). */
  readonly scope: VolumeScope;
  /** The thin classes' pools (config.thinClassPools); default none. */
  readonly thinPools?: readonly ThinClassPool[];
}

async function statusOf(
  core: DriverCore,
  volumeId: string,
  scope: VolumeScope,
): Promise<VolumeStatus> {
  requireVolumeIdShape(volumeId);
  try {
    return await core.volumes.status(volumeId, scope);
  } catch (error) {
    if (error instanceof NotFoundError) throw new CsiError(GrpcStatus.NOT_FOUND, error.message);
    throw error;
  }
}

/**
 * The CSI Node service (CSI spec "Node Service RPC"). State comes only from
 * LVM, device-mapper and mountinfo (through the core), so a restarted driver
 * picks up where it was. Each handler: capability check, argument checks,
 * (per-RPC lock: lock.ts), look-up, action, response.
 */
export function createNodeService(deps: NodeDeps) {
  const { core, paths, scope } = deps;
  const thinPools = deps.thinPools ?? [];

  const { isStagedAt, requireNoOtherTarget, volumePathKind } = volumePathChecks(core, paths);

  return {
    /**
     * CSI spec NodeStageVolume: creates the data device (both ownership
     * signals are checked first); for a mount volume formats it only when
     * blkid says blank and it reads (never another filesystem:
     * FAILED_PRECONDITION) and mounts it at the staging path. Idempotent.
     * A copy (volume context `lvstamp.io/copy`, set by CreateVolume from a
     * content source) has its filesystem grown to the data device after the
     * mount: it is the source's size when more was asked. A malformed path,
     * or a staging path that exists but is no directory →
     * INVALID_ARGUMENT before anything is attached or probed; unknown or
     * malformed volume ID → NOT_FOUND (CSI spec NodeStageVolume errors).
     */
    NodeStageVolume: async (request: NodeStageVolumeRequest) => {
      requireNodeCapability('STAGE_UNSTAGE_VOLUME');
      requireVolumeIdArg(request.volume_id);
      requirePathArg(request.staging_target_path, 'staging_target_path');
      if (!request.volume_capability) throw invalidArgument('volume_capability is required');
      const access = requireCapability(request.volume_capability);
      requireVolumeIdShape(request.volume_id);
      // kubelet makes the staging directory, for block volumes too; anything else there is refused
      // before the data device is made or a filesystem is probed
      await requirePathKind(paths, request.staging_target_path, 'staging_target_path', [
        'missing',
        'directory',
      ]);
      // attach looks the volume up itself (one lvm fullreport): an unknown volume is its NotFoundError,
      // which errors.ts maps to NOT_FOUND; no separate status look-up (3 fewer commands).
      // Activates an inactive LV of this owner first (after a reboot without auto-activation).
      const device = await core.volumes.attach(request.volume_id, scope);
      if (access.kind === 'block') return {};
      await core.filesystems.format(device.path, access.fsType);
      await paths.ensureDirectory(request.staging_target_path);
      await core.filesystems.mount(device.path, request.staging_target_path, {
        fsType: access.fsType,
        options: access.mountFlags,
      });
      // a copy asked larger than its source: its filesystem is the source's size until grown
      if (request.volume_context[COPY_CONTEXT_KEY] === 'true') {
        await core.filesystems.grow(request.staging_target_path, access.fsType);
      }
      return {};
    },

    /**
     * CSI spec NodeUnstageVolume: unmounts the staging path and removes the
     * data device; both idempotent, so a repeated call succeeds. Refused
     * (FAILED_PRECONDITION) while the device is still mounted elsewhere.
     */
    NodeUnstageVolume: async (request: NodeUnstageVolumeRequest) => {
      requireNodeCapability('STAGE_UNSTAGE_VOLUME');
      requireVolumeIdArg(request.volume_id);
      requirePathArg(request.staging_target_path, 'staging_target_path');
      requireVolumeIdShape(request.volume_id);
      await requirePathKind(paths, request.staging_target_path, 'staging_target_path', [
        'missing',
        'directory',
        'unreadable',
      ]);
      await core.filesystems.unmount(request.staging_target_path);
      await core.volumes.detach(request.volume_id);
      return {};
    },

    /**
     * CSI spec NodePublishVolume: bind-mounts the staging path on the target
     * directory (mount) or the data device node on a target file (block),
     * read-only when asked or for SINGLE_NODE_READER_ONLY. The same publish
     * again succeeds without a second mount; other options on the same
     * target → ALREADY_EXISTS; not staged, or a SINGLE_NODE_SINGLE_WRITER
     * volume already published at another target → FAILED_PRECONDITION; a
     * malformed path or one of the wrong kind (a mount target that is a
     * file, a block target that is a directory) → INVALID_ARGUMENT before
     * anything is created.
     */
    NodePublishVolume: async (request: NodePublishVolumeRequest) => {
      requireVolumeIdArg(request.volume_id);
      requirePathArg(request.target_path, 'target_path');
      requirePathArg(request.staging_target_path, 'staging_target_path');
      if (!request.volume_capability) throw invalidArgument('volume_capability is required');
      const access = requireCapability(request.volume_capability);
      requireVolumeIdShape(request.volume_id);
      await requirePathKind(paths, request.staging_target_path, 'staging_target_path', [
        'missing',
        'directory',
      ]);
      // a block target is a file (or, once published, the bound device node); a mount target a directory
      await requirePathKind(
        paths,
        request.target_path,
        'target_path',
        access.kind === 'block' ? ['missing', 'file', 'block-device'] : ['missing', 'directory'],
      );
      const status = await statusOf(core, request.volume_id, scope);
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
      if (access.mode === 'SINGLE_NODE_SINGLE_WRITER') {
        await requireNoOtherTarget(status, request.staging_target_path, request.target_path);
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
      requireVolumeIdArg(request.volume_id);
      requirePathArg(request.target_path, 'target_path');
      requireVolumeIdShape(request.volume_id);
      await requirePathKind(paths, request.target_path, 'target_path', [
        'missing',
        'directory',
        'file',
        'block-device',
        'unreadable',
      ]);
      await core.filesystems.unmount(request.target_path);
      await paths.remove(request.target_path);
      return {};
    },

    /**
     * CSI spec NodeGetVolumeStats: bytes and inodes (statfs) of the
     * volume's mounted filesystem, total bytes of its published block
     * device. volume_path must be one of those (volume-paths.ts volumePathKind): an
     * unmounted path, another volume's path or an unknown volume →
     * NOT_FOUND, never another filesystem's numbers. A mount of the volume
     * that cannot be read (a corrupted mount) → no usage, condition abnormal;
     * an inactive LV or a broken volume group (docs/LVM-CONFIG.md) →
     * condition abnormal with the reason.
     */
    NodeGetVolumeStats: async (request: NodeGetVolumeStatsRequest) => {
      requireNodeCapability('GET_VOLUME_STATS');
      requireVolumeIdArg(request.volume_id);
      requireVolumePathArg(request.volume_path);
      if (request.staging_target_path !== '')
        requirePathArg(request.staging_target_path, 'staging_target_path');
      const status = await statusOf(core, request.volume_id, scope);
      const kind = await volumePathKind(status, request.volume_path);
      const condition = await volumeCondition(core, status, request.volume_id, thinPools);
      if (kind === 'unreadable-filesystem') {
        return {
          usage: [],
          volume_condition: {
            abnormal: true,
            message: `the filesystem mounted at ${request.volume_path} cannot be read (a corrupted mount)`,
          },
        };
      }
      if (kind === 'block') {
        // A capacity that cannot be read from the header is unknown: no number rather than a guess.
        const { capacityBytes } = status.volume;
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
     * one, so a repeated call still reloads and grows). An unknown volume, or a
     * volume_path that is not the volume's mount or published block device
     * (volume-paths.ts volumePathKind) → NOT_FOUND before anything grows; a limit below the
     * capacity → OUT_OF_RANGE. Too few free extents in the volume group, or
     * too little budget in the thin pool (core OutOfSpaceError) → OUT_OF_RANGE
     * "cannot grow here: …" with the free and needed bytes ("Unsupported
     * capacity"), not RESOURCE_EXHAUSTED: the kubelet marks OUT_OF_RANGE
     * NodeResizeInfeasible, so the user can lower the request, and retries
     * RESOURCE_EXHAUSTED at the same size for ever (docs/DESIGN.md
     * "Expansion on the node").
     */
    NodeExpandVolume: async (request: NodeExpandVolumeRequest) => {
      requireNodeCapability('EXPAND_VOLUME');
      requireVolumeIdArg(request.volume_id);
      requireVolumePathArg(request.volume_path);
      if (request.staging_target_path !== '')
        requirePathArg(request.staging_target_path, 'staging_target_path');
      if (request.volume_capability) requireCapability(request.volume_capability);
      const range = readCapacityRange(request.capacity_range);
      const status = await statusOf(core, request.volume_id, scope);
      await volumePathKind(status, request.volume_path);
      // No required bytes: at least one byte, so the core keeps the capacity and converges.
      let after;
      try {
        ({ status: after } = await core.volumes.expand(
          status.volume.volumeId,
          Math.max(range.requiredBytes, 1),
          scope,
          { ...(range.limitBytes > 0 ? { limitBytes: range.limitBytes } : {}), thinPools },
        ));
      } catch (error) {
        if (error instanceof OutOfSpaceError)
          throw new CsiError(GrpcStatus.OUT_OF_RANGE, `cannot grow here: ${error.message}`);
        throw error;
      }
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
