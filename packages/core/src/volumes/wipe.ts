/**
 * The wipe of a deleted thick volume (DESIGN.md §5 "Wipe"): after it, every
 * read of the LV's extents returns zeros, on any device. What each command
 * leaves behind per device was measured in docs/FACTS.md "Wiping".
 */
import { CommandFailedError, CommandTimeoutError } from '../errors.js';
import { runLogged } from '../exec/logged.js';
import type { VolumeParts } from './parts.js';
import type { WipePolicy } from './types.js';

/** The wipe policies delete knows; callers in plain JS may pass anything. */
export const WIPE_POLICIES: readonly WipePolicy[] = ['none', 'discard', 'zero'];

/** The device of one LV to wipe: lvm's `lv_dm_path` and `lv_size` in bytes. */
export interface WipeTarget {
  readonly dmPath: string;
  readonly sizeBytes: number;
}

/**
 * `blkdiscard --zeroout PATH`: BLKZEROOUT (blkdiscard(8)). The kernel zeroes
 * the whole device with the device's write-zeroes command, keeping the blocks
 * allocated, or writes zero pages where the device has none: zeros on every
 * device that accepts writes.
 */
export function zeroArgv(target: WipeTarget): string[] {
  return ['blkdiscard', '--zeroout', target.dmPath];
}

/**
 * `fallocate --punch-hole --offset 0 --length BYTES PATH` on the block device
 * (fallocate(2) FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE): the kernel zeroes
 * with the device's write-zeroes command and lets the device deallocate the
 * blocks (a loop file's hole, qemu's discard=unmap, NVMe's deallocate bit),
 * and never falls back to writing zeros: a device that cannot zero this way
 * fails it (`fallocate failed: keep size mode is unsupported`). Unlike
 * BLKDISCARD, success means the range reads zeros (docs/FACTS.md "Wiping").
 */
export function unmapZeroArgv(target: WipeTarget): string[] {
  return [
    'fallocate',
    '--punch-hole',
    '--offset',
    '0',
    '--length',
    String(target.sizeBytes),
    target.dmPath,
  ];
}

/**
 * Wipes one LV's device so that it reads zeros (DESIGN.md §5 "Wipe"):
 * `zero` runs {@link zeroArgv}; `discard` runs {@link unmapZeroArgv} and,
 * when the device refuses it (no write-zeroes command, discard off below a
 * loop device, any failure but a timeout), {@link zeroArgv}, with a warning
 * naming the device. A plain BLKDISCARD is never issued: a device may accept
 * it and still return the old bytes (qemu's discard=ignore), or refuse it and
 * so fail every delete. Each command runs with `wipeTimeoutMs`.
 * @throws CommandFailedError of `blkdiscard --zeroout` (the volume's blocks are
 *   not known to be zero: the caller must not remove the LV);
 *   CommandTimeoutError of either command.
 */
export async function wipeDevice(
  p: Pick<VolumeParts, 'runner' | 'logger' | 'wipeTimeoutMs'>,
  policy: Exclude<WipePolicy, 'none'>,
  target: WipeTarget,
): Promise<void> {
  const options = { timeoutMs: p.wipeTimeoutMs };
  if (policy === 'discard') {
    try {
      await runLogged(p.runner, p.logger, unmapZeroArgv(target), options);
      return;
    } catch (error) {
      if (!(error instanceof CommandFailedError) || error instanceof CommandTimeoutError)
        throw error;
      p.logger?.warn('the device cannot zero while discarding; writing zeros instead', {
        device: target.dmPath,
        argv: error.argv,
        stderr: error.stderr,
      });
    }
  }
  await runLogged(p.runner, p.logger, zeroArgv(target), options);
}
