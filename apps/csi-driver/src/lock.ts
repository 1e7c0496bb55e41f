import {
  isHexId,
  KeyedMutex,
  snapshotIdForName,
  volumeIdForName,
  volumeLockKey,
} from '@lvstamp/core';
import type { Handler } from './csi-types.js';

/** Picks the lock key a request names (`volume <id>`, `snapshot <id>`), or null when it names none (yet). */
export type RpcKeyOf = (request: never) => string | null;

/**
 * The driver's per-RPC lock: wraps the handlers named in `keys` so that two
 * RPCs on one volume (or one snapshot) never run at once in this process.
 * It covers a whole RPC (NodeStageVolume is attach + format + mount), which
 * the host lock, held per check-then-change sequence, does not. A second
 * call while one runs fails at once with core LockTimeoutError "an
 * operation on <key> is already in progress", which errors.ts maps to
 * ABORTED (CSI spec "Concurrency": the CO retries later). Handlers without
 * a key pass through unlocked.
 */
export function withRpcLocks<T extends Readonly<Record<string, Handler>>>(
  handlers: T,
  keys: Partial<Record<keyof T, RpcKeyOf>>,
  mutex: KeyedMutex = new KeyedMutex(),
): T {
  const wrapped: Record<string, Handler> = { ...handlers };
  for (const [method, keyOf] of Object.entries(keys) as [string, RpcKeyOf | undefined][]) {
    const handler = handlers[method];
    if (handler === undefined || keyOf === undefined) continue;
    wrapped[method] = (request: never) => {
      const key = keyOf(request);
      return key === null ? handler(request) : mutex.tryRun(key, () => handler(request));
    };
  }
  return wrapped as T;
}

/** `volume <id>` of a request's `volume_id`; null for a malformed one (the handler answers it). */
export const byVolumeId = (request: { volume_id: string }): string | null =>
  isHexId(request.volume_id) ? volumeLockKey(request.volume_id) : null;

/** `volume <id>` of the volume a request's `name` creates (DESIGN.md §3); null for a bad name. */
export const byVolumeName = (request: { name: string }): string | null =>
  keyOfName((name) => volumeLockKey(volumeIdForName(name)), request.name);

/** `snapshot <id>` of a request's `snapshot_id`; null for a malformed one. */
export const bySnapshotId = (request: { snapshot_id: string }): string | null =>
  isHexId(request.snapshot_id) ? `snapshot ${request.snapshot_id}` : null;

/** `snapshot <id>` of the snapshot a CreateSnapshot `name` makes; null for a bad name. */
export const bySnapshotName = (request: { name: string }): string | null =>
  keyOfName((name) => `snapshot ${snapshotIdForName(name)}`, request.name);

function keyOfName(keyOf: (name: string) => string, name: string): string | null {
  try {
    return keyOf(name);
  } catch {
    return null; // the handler refuses the name itself
  }
}
