import { status as GrpcStatus } from '@grpc/grpc-js';
import { formatDeviceNumber, mountsAt, sameDevice, type VolumeStatus } from '@lvstamp/core';
import { CsiError } from './errors.js';
import type { DriverCore, NodePaths } from './ports.js';

/** How a verified volume_path shows the volume. */
export type VolumePathKind = 'filesystem' | 'block' | 'unreadable-filesystem';

/**
 * What a path on this node holds of a volume, read from mountinfo (the top
 * mount at the path, its major:minor) and, for a raw block path, st_rdev:
 * the Node RPCs' checks of staging paths, target paths and volume_path.
 */
export function volumePathChecks(core: Pick<DriverCore, 'filesystems'>, paths: NodePaths) {
  /** The data device is mounted (by major:minor, from mountinfo) at `path`. */
  const isStagedAt = async (status: VolumeStatus, path: string): Promise<boolean> => {
    const device = status.dataDevice;
    if (device === null) return false;
    const top = mountsAt(await core.filesystems.mounts(), await paths.canonical(path)).at(-1);
    return top !== undefined && sameDevice(top, device);
  };

  /**
   * CSI spec NodePublishVolume, second table (the plugin offers
   * SINGLE_NODE_MULTI_WRITER): a SINGLE_NODE_SINGLE_WRITER volume already
   * published at another target path → FAILED_PRECONDITION. Its publications
   * are the mounts of its data device (major:minor in mountinfo) other than
   * `stagingPath` and `targetPath` (publishing there again stays idempotent).
   * @throws CsiError FAILED_PRECONDITION naming the other target.
   */
  const requireNoOtherTarget = async (
    status: VolumeStatus,
    stagingPath: string,
    targetPath: string,
  ): Promise<void> => {
    const device = status.dataDevice;
    if (device === null) return;
    const own = new Set([await paths.canonical(stagingPath), await paths.canonical(targetPath)]);
    const other = (await core.filesystems.mounts()).find(
      (entry) => sameDevice(entry, device) && !own.has(entry.mountPoint),
    );
    if (other !== undefined) {
      throw new CsiError(
        GrpcStatus.FAILED_PRECONDITION,
        `volume ${status.volume.volumeId} has access mode SINGLE_NODE_SINGLE_WRITER and is already published at ${other.mountPoint}`,
      );
    }
  };

  /**
   * What `path` (a volume_path of NodeGetVolumeStats or NodeExpandVolume)
   * is for this volume: a mount of its data device (the top mount at the
   * path in mountinfo has the data device's major:minor; never stat device
   * numbers, which cannot tell bind mounts apart), or its data device node
   * as published for raw block (st_rdev). Anything else, also a path of
   * another volume or an unmounted directory, is NOT_FOUND (CSI spec
   * NodeGetVolumeStats / NodeExpandVolume errors: "volume does not exist at
   * the specified volume_path").
   */
  const volumePathKind = async (status: VolumeStatus, path: string): Promise<VolumePathKind> => {
    const id = status.volume.volumeId;
    const kind = await paths.kind(path);
    const notFound = (why: string): CsiError =>
      new CsiError(GrpcStatus.NOT_FOUND, `${path} is not a volume path of volume ${id}: ${why}`);
    if (kind === 'missing') throw notFound('it does not exist');
    const device = status.dataDevice;
    if (device === null) throw notFound('the volume is not staged on this node (no data device)');
    const own = formatDeviceNumber(device);
    if (kind === 'directory' || kind === 'unreadable') {
      const top = mountsAt(await core.filesystems.mounts(), await paths.canonical(path)).at(-1);
      if (top === undefined) throw notFound('nothing is mounted there');
      if (!sameDevice(top, device)) {
        throw notFound(
          `${top.source} (${formatDeviceNumber(top)}) is mounted there, not its data device (${own})`,
        );
      }
      return kind === 'directory' ? 'filesystem' : 'unreadable-filesystem';
    }
    if (kind === 'block-device') {
      const rdev = await paths.blockDeviceNumber(path);
      if (rdev === null || !sameDevice(rdev, device)) {
        throw notFound(
          `it is block device ${rdev === null ? '?' : formatDeviceNumber(rdev)}, not its data device (${own})`,
        );
      }
      return 'block';
    }
    throw notFound(`it is a ${kind === 'file' ? 'regular file' : 'special file'}`);
  };

  return { isStagedAt, requireNoOtherTarget, volumePathKind };
}
