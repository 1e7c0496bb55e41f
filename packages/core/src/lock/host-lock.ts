import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Serialises mutating lvm commands across the processes of one host (the
 * CLI, the CSI driver and the GC job run side by side; DESIGN.md §2).
 */
export interface HostLock {
  /**
   * Runs `fn` while holding the host lock and releases it afterwards, also
   * when `fn` throws. `reason` (e.g. `create 9a1c…`) appears in errors and
   * logs. Calls nested inside `fn` on the same lock do not wait for it again.
   * @throws LockTimeoutError when the lock cannot be taken in time, or was
   *   lost while `fn` ran.
   */
  withLock<T>(reason: string, fn: () => Promise<T>): Promise<T>;
}

/**
 * A HostLock that locks nothing: for unit tests and single-process tools.
 * Re-entrant like FileHostLock: a call nested inside `fn` is not recorded.
 */
export class NoopHostLock implements HostLock {
  /** Reasons of every outermost `withLock` call so far, in order (for tests). */
  readonly reasons: string[] = [];
  readonly #held = new AsyncLocalStorage<true>();

  async withLock<T>(reason: string, fn: () => Promise<T>): Promise<T> {
    if (this.#held.getStore() === true) return fn();
    this.reasons.push(reason);
    return this.#held.run(true, fn);
  }
}
