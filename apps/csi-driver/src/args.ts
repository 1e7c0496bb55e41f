import { status as GrpcStatus } from '@grpc/grpc-js';
import { controlCharacterIn, isHexId, MAX_NAME_BYTES } from '@lvstamp/core';
import { CsiError, invalidArgument } from './errors.js';
import type { NodePaths, PathKind } from './ports.js';

/**
 * Checks a string field against the CSI spec's general size limit ("Size
 * Limits": a string field SHALL NOT exceed 128 bytes unless its description
 * says otherwise), counted in bytes of UTF-8, not characters. Applies to
 * the IDs a request carries (volume_id, snapshot_id, source_volume_id);
 * not to the paths, whose descriptions lift the limit, nor to map entries
 * (a map has its own 4 KiB limit), nor to starting_token, whose RPCs name
 * ABORTED for any invalid token. Names are checked by the core's
 * validateVolumeName, with the same limit.
 * @throws CsiError INVALID_ARGUMENT `<field> must be at most 128 bytes of
 *   UTF-8, the CSI limit on a string field, got N`.
 */
export function requireCsiStringLimit(value: string, field: string): void {
  const bytes = Buffer.byteLength(value, 'utf8');
  if (bytes > MAX_NAME_BYTES) {
    throw invalidArgument(
      `${field} must be at most ${MAX_NAME_BYTES} bytes of UTF-8, the CSI limit on a string field, got ${bytes}`,
    );
  }
}

/**
 * Checks a volume ID argument: present, within the CSI string limit
 * (requireCsiStringLimit) and free of control characters (INVALID_ARGUMENT,
 * as the CLI refuses such names). Its shape is checked by
 * requireVolumeIdShape, after the other arguments.
 * @throws CsiError INVALID_ARGUMENT.
 */
export function requireVolumeIdArg(value: string, field = 'volume_id'): void {
  if (value === '') throw invalidArgument(`${field} is required`);
  requireCsiStringLimit(value, field);
  const control = controlCharacterIn(value);
  if (control !== null) {
    throw invalidArgument(`${field} must not contain control characters (found ${control})`);
  }
}

/**
 * A well-formed volume ID that is not 32 hex digits names no volume:
 * NOT_FOUND (CSI spec, Node RPC errors "Volume does not exist").
 * @throws CsiError NOT_FOUND.
 */
export function requireVolumeIdShape(volumeId: string): void {
  if (!isHexId(volumeId))
    throw new CsiError(GrpcStatus.NOT_FOUND, `volume ${volumeId} does not exist`);
}

/**
 * Checks the form of a path argument of a Node RPC (staging_target_path,
 * target_path, volume_path), before anything acts on it: present,
 * absolute, no `.` or `..` segment (mountinfo shows normalised paths, and a
 * `..` could leave kubelet's directory), no control characters. A relative
 * path would otherwise land in the driver's working directory.
 * @throws CsiError INVALID_ARGUMENT naming the field.
 */
export function requirePathArg(value: string, field: string): void {
  if (value === '') throw invalidArgument(`${field} is required`);
  const control = controlCharacterIn(value);
  if (control !== null) {
    throw invalidArgument(`${field} must not contain control characters (found ${control})`);
  }
  if (!value.startsWith('/')) {
    throw invalidArgument(`${field} must be an absolute path, got "${value}"`);
  }
  if (value.split('/').some((segment) => segment === '..' || segment === '.')) {
    throw invalidArgument(`${field} must not contain "." or ".." segments, got "${value}"`);
  }
}

/**
 * Checks volume_path of NodeGetVolumeStats and NodeExpandVolume: present
 * (else INVALID_ARGUMENT), and of the form of requirePathArg. A path of
 * another form names no place this volume can be at on the node: NOT_FOUND,
 * as the CSI spec answers "volume does not exist on the specified
 * volume_path" (NodeGetVolumeStats, NodeExpandVolume errors).
 * @throws CsiError INVALID_ARGUMENT when empty, NOT_FOUND when malformed.
 */
export function requireVolumePathArg(value: string): void {
  if (value === '') throw invalidArgument('volume_path is required');
  try {
    requirePathArg(value, 'volume_path');
  } catch (error) {
    if (error instanceof CsiError) throw new CsiError(GrpcStatus.NOT_FOUND, error.message);
    throw error;
  }
}

const KIND_WORDS: Readonly<Record<PathKind, string>> = {
  missing: 'missing',
  directory: 'a directory',
  'block-device': 'a block device',
  file: 'a regular file',
  other: 'neither a file nor a directory (a symlink, socket or FIFO)',
  unreadable: 'unreadable (a corrupted mount)',
};

/**
 * Checks what a path argument is on the node (lstat, no side effect) and
 * returns it: a kind outside `allowed` is INVALID_ARGUMENT (for example a
 * staging path that is a regular file), so that nothing is attached,
 * formatted or created for a request that cannot succeed.
 * @throws CsiError INVALID_ARGUMENT naming the field, the path and what it is.
 */
export async function requirePathKind(
  paths: NodePaths,
  path: string,
  field: string,
  allowed: readonly PathKind[],
): Promise<PathKind> {
  const kind = await paths.kind(path);
  if (!allowed.includes(kind)) {
    const wanted = allowed
      .filter((k) => k !== 'missing' && k !== 'unreadable')
      .map((k) => KIND_WORDS[k])
      .join(' or ');
    throw invalidArgument(`${field} ${path} is ${KIND_WORDS[kind]}; expected ${wanted}`);
  }
  return kind;
}
