/**
 * `fsfreeze` around a snapshot (docs/DESIGN.md §5 "Snapshots"): lvm's
 * suspend does not freeze a filesystem mounted from a data device, so a
 * snapshot of a mounted volume freezes it first (docs/SNAPSHOTS.md §1).
 */
import { CommandFailedError, FailedPreconditionError } from '../errors.js';
import { runLogged } from '../exec/logged.js';
import type { CommandRunner, WarnLogger } from '../exec/runner.js';

/** Deadline of one `fsfreeze` in milliseconds (a freeze waits for dirty data to reach the disk). */
export const FREEZE_TIMEOUT_MS = 120_000;

/**
 * Runs `act` with the filesystem at `mountPoint` frozen (`fsfreeze -f`),
 * thawing it in a `finally`; with no mount point, runs `act` as it is
 * (crash-consistent).
 * @throws FailedPreconditionError when it is frozen already (EBUSY: that
 *   freeze is someone else's to end, so it is never thawed here).
 */
export async function withFrozen<T>(
  runner: CommandRunner,
  logger: WarnLogger | undefined,
  mountPoint: string | null,
  act: () => Promise<T>,
): Promise<T> {
  if (mountPoint === null) return act();
  try {
    await runLogged(runner, logger, ['fsfreeze', '-f', mountPoint], {
      timeoutMs: FREEZE_TIMEOUT_MS,
    });
  } catch (error) {
    if (error instanceof CommandFailedError && /Device or resource busy/.test(error.stderr)) {
      throw new FailedPreconditionError(
        `the filesystem on ${mountPoint} is frozen already (fsfreeze -f: Device or resource busy); thaw it (fsfreeze -u) and retry`,
        { cause: error },
      );
    }
    throw error;
  }
  try {
    return await act();
  } finally {
    await thaw(runner, logger, mountPoint);
  }
}

/**
 * `fsfreeze -u`: true when it thawed, false when it was not frozen (EINVAL)
 * or the thaw failed (logged, never thrown: it runs in `finally` and at
 * driver start).
 */
export async function thaw(
  runner: CommandRunner,
  logger: WarnLogger | undefined,
  mountPoint: string,
): Promise<boolean> {
  try {
    await runner.run(['fsfreeze', '-u', mountPoint], { timeoutMs: FREEZE_TIMEOUT_MS });
    return true;
  } catch (error) {
    if (error instanceof CommandFailedError && /Invalid argument/.test(error.stderr)) return false;
    logger?.warn('fsfreeze -u failed', { mountPoint, error: (error as Error).message });
    return false;
  }
}
