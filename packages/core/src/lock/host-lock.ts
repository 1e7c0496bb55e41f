import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Serialises lvstamp's changes across the processes of one host (the CLI,
 * the CSI driver and the GC job run side by side; DESIGN.md §2.3 "The host
 * lock"), and inside one process lets the work on different volumes
 * overlap.
 */
export interface HostLock {
  /**
   * Runs `fn` while holding the host lock exclusively, for work that spans
   * more than one volume (a group, a thin pool, the GC), and releases it
   * afterwards, also when `fn` throws. `reason` (e.g. `snapshot 9a1c…`)
   * appears in errors and logs. Calls nested inside `fn` on the same lock
   * run at once, in this holding.
   * @throws LockTimeoutError when the lock cannot be taken in time, or was
   *   lost while `fn` ran.
   */
  withLock<T>(reason: string, fn: () => Promise<T>): Promise<T>;

  /**
   * As withLock, for the work of one volume (`key`, e.g. `volume <id>`): in
   * this process, callers with different keys hold the lock together, two
   * with one key never do, and none holds it while a withLock caller does;
   * other processes are excluded as by withLock.
   * @throws LockTimeoutError as withLock.
   */
  withVolumeLock<T>(key: string, reason: string, fn: () => Promise<T>): Promise<T>;
}

/**
 * A HostLock that locks nothing: for unit tests and single-process tools.
 * Re-entrant like FileHostLock: a call nested inside `fn` is not recorded.
 */
export class NoopHostLock implements HostLock {
  /** Reasons of every outermost call so far, in order (for tests). */
  readonly reasons: string[] = [];
  /** Beside each reason: the withVolumeLock key, or `exclusive` for withLock. */
  readonly kinds: string[] = [];
  readonly #held = new AsyncLocalStorage<true>();

  withLock<T>(reason: string, fn: () => Promise<T>): Promise<T> {
    return this.#hold('exclusive', reason, fn);
  }

  withVolumeLock<T>(key: string, reason: string, fn: () => Promise<T>): Promise<T> {
    return this.#hold(key, reason, fn);
  }

  async #hold<T>(kind: string, reason: string, fn: () => Promise<T>): Promise<T> {
    if (this.#held.getStore() === true) return fn();
    this.reasons.push(reason);
    this.kinds.push(kind);
    return this.#held.run(true, fn);
  }
}

/** The withVolumeLock key of a volume ID: `volume <id>`, as the driver's per-RPC lock names it. */
export function volumeLockKey(volumeId: string): string {
  return `volume ${volumeId}`;
}
