import { AsyncLocalStorage } from 'node:async_hooks';
import { InvalidArgumentError, LockTimeoutError } from '../errors.js';
import type { WarnLogger } from '../exec/runner.js';
import { DEFAULT_HOST_LOCK_PATH } from '../naming.js';
import type { HostLock } from './host-lock.js';
import { isLockedOut, takeLockDirectory, type LockDirectory } from './lock-directory.js';

/** Options of a FileHostLock. All durations in milliseconds. */
export interface FileHostLockOptions {
  /** Lock path (a directory that proper-lockfile creates); default DEFAULT_HOST_LOCK_PATH. */
  readonly path?: string;
  /** Longest wait for the lock before LockTimeoutError; default 120 000. */
  readonly waitMs?: number;
  /**
   * A lock whose holder stopped refreshing it for this long is taken over
   * (the holder died); default 30 000, minimum 2 000 (proper-lockfile).
   */
  readonly staleMs?: number;
  /** First retry delay; the library backs off exponentially up to `maxRetryDelayMs`. Default 50. */
  readonly minRetryDelayMs?: number;
  /** Longest delay between two attempts; default 1 000. */
  readonly maxRetryDelayMs?: number;
  /** Warned when the lock is lost while held. */
  readonly logger?: WarnLogger;
  /**
   * How long this process keeps the file lock (one holding, or holdings
   * less than a pause apart) before it admits nobody new; once released,
   * the file lock is then not taken again for twice `maxRetryDelayMs`, so
   * that another process waiting for it (retrying at least that often) gets
   * its turn during a long stream of work. Default a quarter of `waitMs`.
   */
  readonly shareMs?: number;
}

/** What one in-process holder asks for: the whole lock, or one volume's share of it. */
type Mode = { readonly kind: 'exclusive' } | { readonly kind: 'volume'; readonly key: string };

/** One in-process caller waiting for its turn. */
interface Waiter {
  readonly mode: Mode;
  readonly reason: string;
  readonly granted: ReturnType<typeof deferred>;
  /** Its entry in the holders, set when it is admitted. */
  id?: symbol;
}

/**
 * One holding of the file lock, shared by every in-process holder admitted
 * while it lasts; released when the last of them leaves.
 */
interface FileHolding {
  /** Resolves to the release function once the file lock is taken. */
  readonly taken: Promise<() => Promise<void>>;
  users: number;
  compromised: Error | null;
  /** When the file lock was taken (Unix ms); null until then. */
  takenAt: number | null;
}

/** The async context of one holder: false once it left (a task that outlived it holds nothing). */
interface Holder {
  held: boolean;
}

/**
 * The host lock on a lock file, with the `proper-lockfile` library (an
 * atomic `mkdir` plus an mtime heartbeat; stale locks of dead holders are
 * taken over after `staleMs`). Across processes it is one mutual exclusion,
 * as it always was, so a process of an older lvstamp version excludes this
 * one and the reverse (DESIGN.md §2.3 "The host lock").
 *
 * Inside one process it is a readers-writer lock:
 * - `withLock` is exclusive: it waits until no other in-process caller
 *   holds the lock, and nobody else is admitted until it leaves;
 * - `withVolumeLock(key)` is one volume's share: callers with different
 *   keys hold the lock together, two with one key never do, and none runs
 *   while an exclusive caller holds it.
 * Callers are admitted in arrival order, except that a volume caller whose
 * key is busy lets later callers with other keys pass; nobody passes an
 * exclusive caller that waits (so group-wide work is not starved by a
 * stream of volume work). The file lock is taken by the first admitted
 * caller and released when the last one leaves. After the process kept the
 * file lock for `shareMs` (one holding, or a chain of holdings less than a
 * pause apart) it admits nobody new, and once released the file lock is
 * left free for twice `maxRetryDelayMs`, so that another process waiting
 * for it gets its turn (without that pause this process would take it
 * again at once, and a waiting process, retrying every second, would miss
 * it). A caller that joins a holding still being taken keeps its own
 * deadline for another process's lock.
 *
 * Re-entrant: a `withLock` or `withVolumeLock` called inside `fn` (tracked
 * with AsyncLocalStorage) runs at once in the outer holding. `waitMs`
 * bounds each wait for progress, not the length of the queue: a caller
 * waits as long as some holder keeps leaving (a burst of 64 creates at ~2 s
 * each is ~2 min for the last one, bench/ group `burst`) and fails only
 * when no holder left for more than `waitMs`; the file lock held by
 * another process is then waited for at most `waitMs`.
 *
 * When the library reports the lock compromised (its directory removed or
 * taken over while held), the process does not crash: the event is logged,
 * the running `fn`s are left to finish (every operation is idempotent,
 * DESIGN.md §2.2), and each of their `withLock` calls then throws
 * LockTimeoutError so that the caller retries; callers admitted later take
 * the file lock anew. Anything but a directory at the lock path (a plain
 * file, a symlink) is no lock of a dead holder and never goes away by
 * itself: the caller gets FailedPreconditionError at once, naming it, and
 * it is left there.
 */
export class FileHostLock implements HostLock {
  readonly #path: string;
  readonly #waitMs: number;
  readonly #maxRetryDelayMs: number;
  /** The lock directory across processes and how it is waited for (takeLockDirectory). */
  readonly #directory: LockDirectory;
  readonly #logger: WarnLogger | undefined;
  readonly #shareMs: number;
  /** Nobody is admitted before this time (Unix ms): the pause after a long holding. */
  #pausedUntil = 0;
  /**
   * Since when (Unix ms) this process has kept the file lock from other processes: the taking
   * of a holding that followed the last one by less than a pause continues the period (a
   * waiting process, retrying about once per maxRetryDelayMs, almost never sees such a gap);
   * null after a pause.
   */
  #busySince: number | null = null;
  /** When the last holding was released (Unix ms). */
  #freedAt = Number.NEGATIVE_INFINITY;
  readonly #context = new AsyncLocalStorage<Holder>();
  /** In-process holders by mode, in the order they were admitted. */
  readonly #holders = new Map<symbol, { readonly mode: Mode; readonly reason: string }>();
  readonly #waiters: Waiter[] = [];
  /** Resolved (and replaced) each time a holder leaves or a waiter gives up. */
  #moved = deferred();
  #file: FileHolding | null = null;
  /** The release of the last holding, until done: a new holding waits for it. */
  #releasing: Promise<void> = Promise.resolve();

  /**
   * @throws InvalidArgumentError when the path does not end in `.lock`: the
   *   lock is a directory this class creates and removes (a stale one is
   *   taken over), so it must never be a path that means something else
   *   (an empty string, `/tmp`, an existing data directory).
   */
  constructor(options: FileHostLockOptions = {}) {
    this.#path = options.path ?? DEFAULT_HOST_LOCK_PATH;
    if (!/[^/]\.lock$/.test(this.#path)) {
      throw new InvalidArgumentError(
        `lock path "${this.#path}" must end in .lock: lvstamp creates and removes it as a lock directory`,
      );
    }
    this.#waitMs = options.waitMs ?? 120_000;
    this.#maxRetryDelayMs = options.maxRetryDelayMs ?? 1_000;
    this.#directory = {
      path: this.#path,
      waitMs: this.#waitMs,
      staleMs: Math.max(options.staleMs ?? 30_000, 2_000),
      minRetryDelayMs: options.minRetryDelayMs ?? 50,
      maxRetryDelayMs: this.#maxRetryDelayMs,
    };
    this.#logger = options.logger;
    this.#shareMs = options.shareMs ?? this.#waitMs / 4;
  }

  /** The lock path this instance uses. */
  get path(): string {
    return this.#path;
  }

  withLock<T>(reason: string, fn: () => Promise<T>): Promise<T> {
    return this.#hold({ kind: 'exclusive' }, reason, fn);
  }

  withVolumeLock<T>(key: string, reason: string, fn: () => Promise<T>): Promise<T> {
    return this.#hold({ kind: 'volume', key }, reason, fn);
  }

  async #hold<T>(mode: Mode, reason: string, fn: () => Promise<T>): Promise<T> {
    if (this.#context.getStore()?.held === true) return fn();
    const id = await this.#admit(mode, reason);
    const holder: Holder = { held: true };
    let file: FileHolding | null = null;
    try {
      // This caller's own wait for another process: a holding it joined late may give up at the
      // deadline of the caller that started it; then it takes the file lock anew.
      const deadline = Date.now() + this.#waitMs;
      for (;;) {
        file = this.#join(reason, deadline);
        try {
          await file.taken;
          break;
        } catch (error) {
          const lockedOut = isLockedOut(error);
          if (!lockedOut || Date.now() >= deadline) throw error;
          const failed = file;
          file = null;
          await this.#leave(failed);
        }
      }
      const result = await this.#context.run(holder, fn);
      if (file.compromised !== null) {
        throw new LockTimeoutError(
          `host lock ${this.#path} was lost while held for "${reason}": ${file.compromised.message}`,
          { cause: file.compromised },
        );
      }
      return result;
    } finally {
      holder.held = false;
      if (file !== null) await this.#leave(file);
      this.#holders.delete(id);
      this.#moveOn();
    }
  }

  /**
   * Waits until the caller may hold the lock in this process (see the class
   * comment), then counts it as a holder. The clock restarts whenever a
   * holder leaves; it runs out only when none left for `waitMs`.
   * @throws LockTimeoutError naming the in-process holder that held on.
   */
  async #admit(mode: Mode, reason: string): Promise<symbol> {
    const waiter: Waiter = { mode, reason, granted: deferred() };
    this.#waiters.push(waiter);
    this.#admitWaiters();
    try {
      while (waiter.id === undefined) {
        await waitUntil(
          Promise.race([waiter.granted.promise, this.#moved.promise]),
          Date.now() + this.#waitMs,
          () =>
            new LockTimeoutError(
              `host lock ${this.#path} held in this process for "${this.#firstHolderReason()}" for more than ${this.#waitMs} ms (wanted for "${reason}")`,
            ),
        );
      }
      return waiter.id;
    } catch (error) {
      const at = this.#waiters.indexOf(waiter);
      if (at >= 0) this.#waiters.splice(at, 1);
      // Admitted just as the wait ran out: give the place back.
      if (waiter.id !== undefined) this.#holders.delete(waiter.id);
      this.#moveOn();
      throw error;
    }
  }

  /** Admits every waiter that may hold the lock now, in order (the class comment's rule). */
  #admitWaiters(): void {
    if (Date.now() < this.#pausedUntil) return;
    // Between holdings, and while one is being taken, the taking decides (see #busySince).
    const busySince = (this.#file?.takenAt ?? null) === null ? null : this.#busySince;
    if (busySince !== null && Date.now() - busySince >= this.#shareMs) return;
    const holders = [...this.#holders.values()];
    let exclusive = holders.some((h) => h.mode.kind === 'exclusive');
    const keys = new Set(holders.flatMap((h) => (h.mode.kind === 'volume' ? [h.mode.key] : [])));
    let admitted = 0;
    for (let i = 0; i < this.#waiters.length;) {
      const waiter = this.#waiters[i];
      if (waiter === undefined || exclusive) break;
      if (waiter.mode.kind === 'exclusive') {
        if (holders.length + admitted > 0) break;
        exclusive = true;
      } else if (keys.has(waiter.mode.key)) {
        i += 1;
        continue;
      } else {
        keys.add(waiter.mode.key);
      }
      admitted += 1;
      this.#waiters.splice(i, 1);
      this.#reserve(waiter);
    }
  }

  /** Counts an admitted waiter as a holder (its `#hold` goes on with this entry) and wakes it. */
  #reserve(waiter: Waiter): void {
    waiter.id = Symbol(waiter.reason);
    this.#holders.set(waiter.id, { mode: waiter.mode, reason: waiter.reason });
    waiter.granted.resolve();
  }

  /**
   * After a busy period of `shareMs` or more: no caller of this process takes
   * the file lock for twice `maxRetryDelayMs`, the longest a waiting
   * process's next attempt can be away.
   */
  #pause(): void {
    const pauseMs = 2 * this.#maxRetryDelayMs;
    this.#pausedUntil = Date.now() + pauseMs;
    setTimeout(() => {
      this.#moveOn();
    }, pauseMs).unref();
  }

  #firstHolderReason(): string {
    return [...this.#holders.values()][0]?.reason ?? '';
  }

  /** After a holder left, a waiter gave up or a pause ended: admit who may, wake the waiters. */
  #moveOn(): void {
    this.#admitWaiters();
    const moved = this.#moved;
    this.#moved = deferred();
    moved.resolve();
  }

  /** The current holding of the file lock, joined, or a new one being taken. */
  #join(reason: string, deadline: number): FileHolding {
    const current = this.#file;
    if (current !== null && current.compromised === null) {
      current.users += 1;
      return current;
    }
    const state = { users: 1, compromised: null as Error | null, takenAt: null as number | null };
    const taken = this.#releasing.then(async () => {
      const release = await this.#acquire(reason, deadline, state);
      state.takenAt = Date.now();
      if (this.#busySince === null || state.takenAt - this.#freedAt >= 2 * this.#maxRetryDelayMs)
        this.#busySince = state.takenAt;
      return release;
    });
    const holding: FileHolding = Object.assign(state, { taken });
    // Every user awaits `taken` and gets its failure; later callers take the file lock anew.
    taken.catch(() => {
      if (this.#file === holding) this.#file = null;
    });
    this.#file = holding;
    return holding;
  }

  /**
   * One user leaves `holding`; the last one releases the file lock (unless
   * it was lost), and a new holding is taken only after that release.
   */
  #leave(holding: FileHolding): Promise<void> {
    holding.users -= 1;
    if (holding.users > 0) return Promise.resolve();
    if (this.#file === holding) this.#file = null;
    this.#freedAt = Date.now();
    if (this.#busySince !== null && Date.now() - this.#busySince >= this.#shareMs) {
      this.#busySince = null;
      this.#pause();
    }
    if (holding.compromised !== null) return Promise.resolve();
    this.#releasing = holding.taken.then(
      (release) => release().catch(() => undefined),
      () => undefined,
    );
    return this.#releasing;
  }

  /** Takes the lock directory (takeLockDirectory), marking `holding` when the library reports it lost. */
  #acquire(
    reason: string,
    deadline: number,
    holding: { compromised: Error | null },
  ): Promise<() => Promise<void>> {
    return takeLockDirectory(this.#directory, reason, deadline, (error) => {
      holding.compromised = error;
      this.#logger?.warn('host lock compromised while held', {
        path: this.#path,
        reason,
        error: error.message,
      });
    });
  }
}

/** A promise with its resolve function. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

async function waitUntil(
  promise: Promise<void>,
  deadline: number,
  onTimeout: () => Error,
): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => {
        reject(onTimeout());
      },
      Math.max(deadline - Date.now(), 0),
    );
  });
  try {
    await Promise.race([promise, expired]);
  } finally {
    clearTimeout(timer);
  }
}
