import { KeyedMutex } from '../lock/keyed-mutex.js';
import { isHexId, snapshotIdForName, volumeIdForName } from '../naming.js';
import type { CreateVolumeRequest, VolumeService } from './service.js';
import type { CreateVolumeFromRequest, SnapshotService } from './snapshots.js';

type KeyOf<F> = F extends (...args: infer A) => unknown ? (...args: A) => string | null : never;

/** For each serialised method, the volume ID its arguments name (null: not serialised). */
export type VolumeKeys<T> = { readonly [K in keyof T]?: KeyOf<T[K]> };

/**
 * Per-volume serialisation as a decorator (STYLE.md "What to take" 7):
 * each method named in `keys` waits until no other call on the same volume
 * ID runs in this process, then runs; calls on different volumes run at
 * once; other methods pass through. Internal calls of `target` are not
 * serialised again (the lock is not re-entrant).
 */
export function withVolumeLocks<T extends object>(
  target: T,
  keys: VolumeKeys<T>,
  mutex: KeyedMutex = new KeyedMutex(),
): T {
  return new Proxy(target, {
    get(object, property) {
      const value: unknown = Reflect.get(object, property, object);
      if (typeof value !== 'function') return value;
      const method = value as (...args: unknown[]) => Promise<unknown>;
      const keyOf = keys[property as keyof T] as
        ((...args: unknown[]) => string | null) | undefined;
      if (keyOf === undefined) return method.bind(object);
      return (...args: unknown[]) => {
        const key = keyOf(...args);
        return key === null
          ? method.apply(object, args)
          : mutex.run(key, () => method.apply(object, args));
      };
    },
  });
}

const byId = (volumeId: string): string | null => (isHexId(volumeId) ? volumeId : null);
const byName = (request: Pick<CreateVolumeRequest, 'name'>): string | null => {
  try {
    return volumeIdForName(request.name);
  } catch {
    return null; // the call itself refuses the name
  }
};

/** The VolumeService methods that change a volume, each keyed by the volume it names. */
export const VOLUME_SERVICE_KEYS: VolumeKeys<VolumeService> = {
  createVolume: byName,
  create: byName,
  attach: byId,
  detach: byId,
  expand: byId,
  delete: byId,
  activateVolume: byId,
};

/** The key of a snapshot in the shared KeyedMutex: its own name space beside the volume IDs. */
const bySnapshotId = (snapshotId: string): string | null =>
  isHexId(snapshotId) ? `snapshot:${snapshotId}` : null;
const bySnapshotName = (request: { readonly name: string }): string | null => {
  try {
    return `snapshot:${snapshotIdForName(request.name)}`;
  } catch {
    return null; // the call itself refuses the name
  }
};

/**
 * The SnapshotService methods that change something: a snapshot keyed by its
 * ID, a restore or clone by the new volume's ID (the key a plain create of
 * that volume takes, so both share one KeyedMutex).
 */
export const SNAPSHOT_SERVICE_KEYS: VolumeKeys<SnapshotService> = {
  createSnapshot: bySnapshotName,
  deleteSnapshot: bySnapshotId,
  createVolumeFrom: (request: CreateVolumeFromRequest) => byName(request),
};
