import { status as GrpcStatus } from '@grpc/grpc-js';
import type { FsType } from '@lvstamp/core';
import { CsiError, invalidArgument } from './errors.js';
import type { AccessModeName, VolumeCapabilityMsg } from './csi-types.js';

/**
 * What lvstamp offers, declared once: these lists answer
 * GetPluginCapabilities, ControllerGetCapabilities and NodeGetCapabilities,
 * and `requireControllerCapability` / `requireNodeCapability` gate the RPCs
 * with them, as kubernetes-csi/csi-driver-host-path does.
 */
export const PLUGIN_CAPABILITIES = Object.freeze([
  { service: { type: 'CONTROLLER_SERVICE' } },
  { service: { type: 'VOLUME_ACCESSIBILITY_CONSTRAINTS' } },
  { volume_expansion: { type: 'ONLINE' } },
  { volume_expansion: { type: 'OFFLINE' } },
] as const);

export type ControllerCapability =
  | 'CREATE_DELETE_VOLUME'
  | 'LIST_VOLUMES'
  | 'GET_CAPACITY'
  | 'SINGLE_NODE_MULTI_WRITER'
  | 'CREATE_DELETE_SNAPSHOT'
  | 'LIST_SNAPSHOTS'
  | 'CLONE_VOLUME';

/**
 * No EXPAND_VOLUME: lvstamp expands on the node only (NODE_CAPABILITIES), so the
 * per-node external-resizer records the new size and the kubelet of the volume's node
 * calls NodeExpandVolume (docs/DESIGN.md §7 "Expansion on the node"). The plugin's
 * VolumeExpansion stays: a plugin that expands implements the controller or the node
 * EXPAND_VOLUME capability, or both (CSI spec, VolumeExpansion).
 */
export const CONTROLLER_CAPABILITIES: readonly ControllerCapability[] = Object.freeze([
  'CREATE_DELETE_VOLUME',
  'LIST_VOLUMES',
  'GET_CAPACITY',
  'SINGLE_NODE_MULTI_WRITER',
]);

/**
 * Offered besides CONTROLLER_CAPABILITIES when at least one device class is
 * thin: snapshots and copies are thin snapshots (docs/DESIGN.md §5 "Restore and clone";
 * capabilities are per driver, not per class).
 */
export const THIN_CONTROLLER_CAPABILITIES: readonly ControllerCapability[] = Object.freeze([
  'CREATE_DELETE_SNAPSHOT',
  'LIST_SNAPSHOTS',
  'CLONE_VOLUME',
]);

/** The controller capabilities of a configuration: the thin ones only with a thin class. */
export function controllerCapabilitiesFor(hasThinClass: boolean): readonly ControllerCapability[] {
  return hasThinClass
    ? [...CONTROLLER_CAPABILITIES, ...THIN_CONTROLLER_CAPABILITIES]
    : CONTROLLER_CAPABILITIES;
}

export type NodeCapability =
  | 'STAGE_UNSTAGE_VOLUME'
  | 'GET_VOLUME_STATS'
  | 'EXPAND_VOLUME'
  | 'VOLUME_CONDITION'
  | 'SINGLE_NODE_MULTI_WRITER';

export const NODE_CAPABILITIES: readonly NodeCapability[] = Object.freeze([
  'STAGE_UNSTAGE_VOLUME',
  'GET_VOLUME_STATS',
  'EXPAND_VOLUME',
  'VOLUME_CONDITION',
  'SINGLE_NODE_MULTI_WRITER',
]);

/** @throws CsiError UNIMPLEMENTED when the controller does not declare `capability` (among `offered`). */
export function requireControllerCapability(
  capability: string,
  offered: readonly ControllerCapability[] = CONTROLLER_CAPABILITIES,
): void {
  if (!offersControllerCapability(capability, offered)) {
    throw new CsiError(
      GrpcStatus.UNIMPLEMENTED,
      `controller capability ${capability} is not offered`,
    );
  }
}

/** Whether `offered` (default: every controller capability) holds `capability`. */
export function offersControllerCapability(
  capability: string,
  offered: readonly ControllerCapability[] = CONTROLLER_CAPABILITIES,
): boolean {
  return (offered as readonly string[]).includes(capability);
}

/** @throws CsiError UNIMPLEMENTED when the node does not declare `capability`. */
export function requireNodeCapability(capability: string): void {
  if (!(NODE_CAPABILITIES as readonly string[]).includes(capability)) {
    throw new CsiError(GrpcStatus.UNIMPLEMENTED, `node capability ${capability} is not offered`);
  }
}

/**
 * Access modes of one node (DESIGN.md §7). The last two are valid because
 * SINGLE_NODE_MULTI_WRITER is declared above (CSI spec, AccessMode).
 */
export const ACCESS_MODES: readonly AccessModeName[] = Object.freeze([
  'SINGLE_NODE_WRITER',
  'SINGLE_NODE_READER_ONLY',
  'SINGLE_NODE_SINGLE_WRITER',
  'SINGLE_NODE_MULTI_WRITER',
]);

/** The filesystem of a mount volume whose capability names none. */
export const DEFAULT_FS_TYPE: FsType = 'ext4';

/** A volume capability lvstamp accepts, read. */
export type AccessType =
  | { readonly kind: 'block'; readonly mode: AccessModeName }
  | {
      readonly kind: 'mount';
      readonly mode: AccessModeName;
      readonly fsType: FsType;
      /** mount_flags split at commas, e.g. `["noatime"]`. */
      readonly mountFlags: readonly string[];
    };

/**
 * Reads one VolumeCapability: an access type (block, or mount with ext4 —
 * the default for an empty fs_type — or xfs) and a single-node access mode.
 * @param allowedFsTypes the device class's filesystems, when known.
 * @returns the capability, or a sentence saying why it is not supported.
 */
export function readCapability(
  capability: VolumeCapabilityMsg | null | undefined,
  allowedFsTypes: readonly FsType[] = ['ext4', 'xfs'],
): AccessType | { readonly unsupported: string } {
  if (capability === null || capability === undefined)
    return { unsupported: 'volume capability is empty' };
  const mode = capability.access_mode?.mode ?? 'UNKNOWN';
  if (mode === 'UNKNOWN') return { unsupported: 'access_mode is required' };
  if (!ACCESS_MODES.includes(mode)) {
    return {
      unsupported: `access mode ${mode} is not supported: lvstamp volumes are single-node (${ACCESS_MODES.join(', ')})`,
    };
  }
  if (
    capability.access_type === 'block' ||
    (capability.block !== null &&
      capability.block !== undefined &&
      capability.access_type === undefined)
  ) {
    return { kind: 'block', mode };
  }
  const mount = capability.mount;
  if (capability.access_type !== 'mount' || mount === null || mount === undefined) {
    return { unsupported: 'access_type is required: block or mount' };
  }
  const fsType = mount.fs_type === '' ? DEFAULT_FS_TYPE : mount.fs_type;
  if (!(allowedFsTypes as readonly string[]).includes(fsType)) {
    return {
      unsupported: `filesystem "${fsType}" is not supported here; use one of ${allowedFsTypes.join(', ')}`,
    };
  }
  if (mount.volume_mount_group !== '') {
    return {
      unsupported: 'volume_mount_group is not supported (no VOLUME_MOUNT_GROUP capability)',
    };
  }
  const mountFlags = mount.mount_flags
    .flatMap((flag) => flag.split(','))
    .map((flag) => flag.trim())
    .filter((flag) => flag !== '');
  return { kind: 'mount', mode, fsType: fsType as FsType, mountFlags };
}

/**
 * As readCapability, but an unsupported capability is an error.
 * @throws CsiError INVALID_ARGUMENT with the reason.
 */
export function requireCapability(
  capability: VolumeCapabilityMsg | null | undefined,
  allowedFsTypes?: readonly FsType[],
): AccessType {
  const read = readCapability(capability, allowedFsTypes);
  if ('unsupported' in read) throw invalidArgument(read.unsupported);
  return read;
}

/** True for the read-only access mode: the node publishes such a volume read-only. */
export function isReadOnlyMode(mode: AccessModeName): boolean {
  return mode === 'SINGLE_NODE_READER_ONLY';
}
