import { KeyedMutex } from '@lvstamp/core';
import type { Handler } from './csi-types.js';

/** Picks the volume a request is about, or null when it names none (yet). */
export type VolumeKeyOf = (request: never) => string | null;

/**
 * The per-volume lock decorator: wraps the
 * handlers named in `keys` so that two operations on one volume never run
 * at once in this process. A second call while one runs fails at once with
 * core LockTimeoutError "an operation on volume <id> is already in
 * progress", which errors.ts maps to ABORTED (CSI spec "Concurrency":
 * the CO retries later). Handlers without a key pass through unlocked.
 */
export function withVolumeLocks<T extends Readonly<Record<string, Handler>>>(
  handlers: T,
  keys: Partial<Record<keyof T, VolumeKeyOf>>,
  mutex: KeyedMutex = new KeyedMutex(),
): T {
  const wrapped: Record<string, Handler> = { ...handlers };
  for (const [method, keyOf] of Object.entries(keys) as [string, VolumeKeyOf | undefined][]) {
    const handler = handlers[method];
    if (handler === undefined || keyOf === undefined) continue;
    wrapped[method] = (request: never) => {
      const volumeId = keyOf(request);
      return volumeId === null
        ? handler(request)
        : mutex.tryRun(`volume ${volumeId}`, () => handler(request));
    };
  }
  return wrapped as T;
}
