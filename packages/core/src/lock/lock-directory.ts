/**
 * The host lock across processes (DESIGN.md §2.3 "The host lock"): one lock
 * directory taken with the `proper-lockfile` library, an atomic `mkdir`
 * plus an mtime heartbeat, a stale one of a dead holder taken over.
 * FileHostLock shares one such holding among its in-process holders.
 */
import { lstat, mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import * as lockfile from 'proper-lockfile';
import { FailedPreconditionError, LockTimeoutError } from '../errors.js';
import { errorCode } from '../os/errno.js';

/** Where the lock directory is and how it is waited for; durations in milliseconds. */
export interface LockDirectory {
  readonly path: string;
  /** How long another process's lock is waited for, for the timeout's message. */
  readonly waitMs: number;
  /** A lock whose holder stopped refreshing it for this long is taken over. */
  readonly staleMs: number;
  readonly minRetryDelayMs: number;
  readonly maxRetryDelayMs: number;
}

/**
 * Takes the lock directory `directory.path` for `reason`, retrying with
 * backoff until `deadline` (Unix ms) while another process holds it. Its
 * parent directory is made when missing.
 * @param onCompromised called when the library reports the lock lost while
 *   held (its directory removed or taken over).
 * @returns the release function.
 * @throws FailedPreconditionError when something other than a directory is
 *   at the path; LockTimeoutError when another process still holds it at
 *   the deadline (isLockedOut is then true) or it cannot be taken.
 */
export async function takeLockDirectory(
  directory: LockDirectory,
  reason: string,
  deadline: number,
  onCompromised: (error: Error) => void,
): Promise<() => Promise<void>> {
  const { path } = directory;
  await mkdir(dirname(path), { recursive: true, mode: 0o755 });
  await refuseNonDirectory(path, reason);
  const remaining = Math.max(deadline - Date.now(), 0);
  const { minRetryDelayMs, maxRetryDelayMs } = directory;
  try {
    return await lockfile.lock(path, {
      lockfilePath: path,
      realpath: false,
      stale: directory.staleMs,
      retries: {
        // `retry` precomputes every delay: enough attempts to fill the wait.
        retries: retriesFor(remaining, minRetryDelayMs, maxRetryDelayMs),
        factor: 2,
        minTimeout: minRetryDelayMs,
        maxTimeout: maxRetryDelayMs,
        maxRetryTime: remaining,
        randomize: true,
      },
      onCompromised,
    });
  } catch (error) {
    if (errorCode(error) === 'ELOCKED') {
      throw new LockTimeoutError(
        `host lock ${path} still held by another process after ${directory.waitMs} ms (wanted for "${reason}")`,
        { cause: error },
      );
    }
    throw new LockTimeoutError(
      `cannot take host lock ${path} for "${reason}": ${(error as Error).message}`,
      { cause: error },
    );
  }
}

/** Whether takeLockDirectory failed because another process held the lock to the deadline. */
export function isLockedOut(error: unknown): boolean {
  return error instanceof Error && errorCode(error.cause) === 'ELOCKED';
}

/**
 * The lock is a directory; anything else at its path (a plain file, a
 * symlink) was not made by a lock holder, would never go away by itself
 * and is not ours to remove: refused at once, naming it.
 * @throws FailedPreconditionError.
 */
async function refuseNonDirectory(path: string, reason: string): Promise<void> {
  const stat = await lstat(path).catch((error: unknown) => {
    if (errorCode(error) === 'ENOENT') return null;
    throw error;
  });
  if (stat === null || stat.isDirectory()) return;
  const kind = stat.isSymbolicLink()
    ? 'a symbolic link'
    : stat.isFile()
      ? 'a plain file'
      : 'not a directory';
  throw new FailedPreconditionError(
    `cannot take host lock ${path} for "${reason}": it is ${kind}, not a lock directory; no lvstamp process made it, so lvstamp leaves it alone: remove it by hand when no lvstamp process runs`,
  );
}

/** Attempts needed so that backoff from `minMs` doubling up to `maxMs` spans `waitMs`. */
function retriesFor(waitMs: number, minMs: number, maxMs: number): number {
  const min = Math.max(minMs, 1);
  const max = Math.max(maxMs, min);
  const doublings = Math.ceil(Math.log2(max / min));
  return doublings + Math.ceil(waitMs / max) + 1;
}
