import { AsyncLocalStorage } from 'node:async_hooks';
import { lstat, mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import * as lockfile from 'proper-lockfile';
import { FailedPreconditionError, InvalidArgumentError, LockTimeoutError } from '../errors.js';
import type { WarnLogger } from '../exec/runner.js';
import { DEFAULT_HOST_LOCK_PATH } from '../naming.js';
import type { HostLock } from './host-lock.js';

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
}

interface Holding {
  /** False once released: a task that outlived the lock must take it again. */
  held: boolean;
  compromised: Error | null;
}

/**
 * The host lock on a lock file, with the `proper-lockfile` library (an
 * atomic `mkdir` plus an mtime heartbeat; stale locks of dead holders are
 * taken over after `staleMs`).
 *
 * Re-entrant per process: a `withLock` called inside `fn` (tracked with
 * AsyncLocalStorage) runs at once instead of deadlocking. Unrelated
 * concurrent callers in the same process queue up in-process first (FIFO),
 * then take the file lock. `waitMs` bounds each wait for progress, not the
 * length of the queue: a caller waits in the queue as long as it keeps
 * moving (a burst of 64 creates at ~2 s each is ~2 min for the last one,
 * found by the bench/ group `burst`) and fails only when one holder keeps the lock
 * for more than `waitMs`; the file lock held by another process is then
 * waited for at most `waitMs`.
 *
 * When the library reports the lock compromised (its directory removed or
 * taken over while held), the process does not crash: the event is logged,
 * `fn` is left to finish (every operation is idempotent, DESIGN.md §2.2),
 * and `withLock` then throws LockTimeoutError so that the caller retries.
 * Anything but a directory at the lock path (a plain file, a symlink) is
 * no lock of a dead holder and never goes away by itself: `withLock`
 * throws FailedPreconditionError at once, naming it, and leaves it there.
 */
export class FileHostLock implements HostLock {
  readonly #path: string;
  readonly #waitMs: number;
  readonly #staleMs: number;
  readonly #minRetryDelayMs: number;
  readonly #maxRetryDelayMs: number;
  readonly #logger: WarnLogger | undefined;
  readonly #context = new AsyncLocalStorage<Holding>();
  #queue: Promise<void> = Promise.resolve();
  /** Resolved (and replaced) each time a caller leaves the in-process queue. */
  #moved = deferred();
  /** The reason of the in-process caller that holds or is taking the lock. */
  #holderReason = '';

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
    this.#staleMs = Math.max(options.staleMs ?? 30_000, 2_000);
    this.#minRetryDelayMs = options.minRetryDelayMs ?? 50;
    this.#maxRetryDelayMs = options.maxRetryDelayMs ?? 1_000;
    this.#logger = options.logger;
  }

  /** The lock path this instance uses. */
  get path(): string {
    return this.#path;
  }

  async withLock<T>(reason: string, fn: () => Promise<T>): Promise<T> {
    if (this.#context.getStore()?.held === true) return fn();
    // In-process queue: proper-lockfile cannot tell two callers of one process apart.
    const previous = this.#queue;
    let leaveQueue: () => void = () => undefined;
    this.#queue = new Promise<void>((resolve) => {
      leaveQueue = resolve;
    });
    try {
      await this.#waitInQueue(previous, reason);
      this.#holderReason = reason;
      const deadline = Date.now() + this.#waitMs;
      const holding: Holding = { held: true, compromised: null };
      const release = await this.#acquire(reason, deadline, holding);
      let result: T;
      try {
        result = await this.#context.run(holding, fn);
      } finally {
        holding.held = false;
        if (holding.compromised === null) await release().catch(() => undefined);
      }
      if (holding.compromised !== null) {
        throw new LockTimeoutError(
          `host lock ${this.#path} was lost while held for "${reason}": ${holding.compromised.message}`,
          { cause: holding.compromised },
        );
      }
      return result;
    } finally {
      leaveQueue();
      const moved = this.#moved;
      this.#moved = deferred();
      moved.resolve();
    }
  }

  /**
   * Waits until `previous` (the caller ahead) has left the queue. The clock
   * restarts whenever the queue moves; it runs out only when no caller left
   * for `waitMs`.
   * @throws LockTimeoutError naming the in-process caller that held on.
   */
  async #waitInQueue(previous: Promise<void>, reason: string): Promise<void> {
    const state = { mine: false };
    const turn = previous.then(() => {
      state.mine = true;
    });
    while (!state.mine) {
      await waitUntil(
        Promise.race([turn, this.#moved.promise]),
        Date.now() + this.#waitMs,
        () =>
          new LockTimeoutError(
            `host lock ${this.#path} held in this process for "${this.#holderReason}" for more than ${this.#waitMs} ms (wanted for "${reason}")`,
          ),
      );
    }
  }

  async #acquire(reason: string, deadline: number, holding: Holding): Promise<() => Promise<void>> {
    await mkdir(dirname(this.#path), { recursive: true, mode: 0o755 });
    await this.#refuseNonDirectory(reason);
    const remaining = Math.max(deadline - Date.now(), 0);
    try {
      return await lockfile.lock(this.#path, {
        lockfilePath: this.#path,
        realpath: false,
        stale: this.#staleMs,
        retries: {
          // `retry` precomputes every delay: enough attempts to fill the wait.
          retries: retriesFor(remaining, this.#minRetryDelayMs, this.#maxRetryDelayMs),
          factor: 2,
          minTimeout: this.#minRetryDelayMs,
          maxTimeout: this.#maxRetryDelayMs,
          maxRetryTime: remaining,
          randomize: true,
        },
        onCompromised: (error: Error) => {
          holding.compromised = error;
          this.#logger?.warn('host lock compromised while held', {
            path: this.#path,
            reason,
            error: error.message,
          });
        },
      });
    } catch (error) {
      if (isErrno(error, 'ELOCKED')) throw this.#timeout(reason, error);
      throw new LockTimeoutError(
        `cannot take host lock ${this.#path} for "${reason}": ${(error as Error).message}`,
        { cause: error },
      );
    }
  }

  /**
   * The lock is a directory; anything else at its path (a plain file, a
   * symlink) was not made by a lock holder, would never go away by itself
   * and is not ours to remove: refused at once, naming it.
   * @throws FailedPreconditionError.
   */
  async #refuseNonDirectory(reason: string): Promise<void> {
    const stat = await lstat(this.#path).catch((error: unknown) => {
      if (isErrno(error, 'ENOENT')) return null;
      throw error;
    });
    if (stat === null || stat.isDirectory()) return;
    const kind = stat.isSymbolicLink()
      ? 'a symbolic link'
      : stat.isFile()
        ? 'a plain file'
        : 'not a directory';
    throw new FailedPreconditionError(
      `cannot take host lock ${this.#path} for "${reason}": it is ${kind}, not a lock directory; no lvstamp process made it, so lvstamp leaves it alone: remove it by hand when no lvstamp process runs`,
    );
  }

  #timeout(reason: string, cause?: unknown): LockTimeoutError {
    return new LockTimeoutError(
      `host lock ${this.#path} still held by another process after ${this.#waitMs} ms (wanted for "${reason}")`,
      cause === undefined ? undefined : { cause },
    );
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

/** Attempts needed so that backoff from `minMs` doubling up to `maxMs` spans `waitMs`. */
function retriesFor(waitMs: number, minMs: number, maxMs: number): number {
  const min = Math.max(minMs, 1);
  const max = Math.max(maxMs, min);
  const doublings = Math.ceil(Math.log2(max / min));
  return doublings + Math.ceil(waitMs / max) + 1;
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

function isErrno(error: unknown, code: string): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === code;
}
