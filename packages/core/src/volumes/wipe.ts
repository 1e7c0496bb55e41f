/**
 * The wipe of a removed thick volume (DESIGN.md §5 "Wipe"): after it, every
 * read of the LV's extents returns zeros, on any device. What each command
 * leaves behind per device was measured in docs/FACTS.md "Wiping".
 */
import { CommandFailedError, CommandTimeoutError, InvalidArgumentError } from '../errors.js';
import { runLogged } from '../exec/logged.js';
import { isThinLv } from '../lvm/thin-snapshots.js';
import type { VolumeParts } from './parts.js';
import type { WipePolicy } from './types.js';

/** The wipe policies delete knows; callers in plain JS may pass anything. */
export const WIPE_POLICIES: readonly WipePolicy[] = ['none', 'discard', 'zero'];

/** How strong each policy is (none < discard < zero), for picking the strongest of several. */
export const WIPE_STRENGTH: Readonly<Record<WipePolicy, number>> = { none: 0, discard: 1, zero: 2 };

/** The strongest of `policies` (none < discard < zero); `none` for an empty list. */
export function strongestWipe(policies: Iterable<WipePolicy>): WipePolicy {
  let best: WipePolicy = 'none';
  for (const policy of policies) if (WIPE_STRENGTH[policy] > WIPE_STRENGTH[best]) best = policy;
  return best;
}

/**
 * Bytes at the start of the LV wiped last: the header's logical block and
 * the rest of the first 4 KiB (a multiple of every logical block size, so
 * both ranges stay aligned for BLKZEROOUT).
 */
export const HEADER_RANGE_BYTES = 4096;

/**
 * Whether removing `lv` calls for a wipe (DESIGN.md §5 "Wipe"): a thick LV
 * that held a tenant's data. Never a thin LV (its pool zeroes reused chunks,
 * and a wipe would discard chunks a snapshot shares), nor an
 * `lvstamp_new_<id>` leftover (`heldData` false: it never held data).
 */
export function wipeApplies(lv: { readonly attr: string }, heldData: boolean): boolean {
  return heldData && !isThinLv(lv);
}

/** The device of one LV to wipe: lvm's `lv_dm_path` and `lv_size` in bytes. */
export interface WipeTarget {
  readonly dmPath: string;
  readonly sizeBytes: number;
}

/** One byte range of a device: `offset` and `length` in bytes. */
export interface WipeRange {
  readonly offset: number;
  readonly length: number;
}

/**
 * The ranges a wipe covers, in the order it zeroes them: everything past
 * the first {@link HEADER_RANGE_BYTES}, then those bytes (the header) last.
 * A wipe that fails or times out in the first range leaves the header, so a
 * retry still proves ownership and wipes again (DESIGN.md §5 "Wipe").
 * @throws InvalidArgumentError when `sizeBytes` is not a positive whole
 *   number of 4096-byte blocks (LV sizes are whole extents).
 */
export function wipeRanges(sizeBytes: number): WipeRange[] {
  if (!Number.isSafeInteger(sizeBytes) || sizeBytes <= 0 || sizeBytes % HEADER_RANGE_BYTES !== 0) {
    throw new InvalidArgumentError(
      `cannot wipe ${sizeBytes} bytes: an LV size is a positive multiple of ${HEADER_RANGE_BYTES} bytes`,
    );
  }
  const header = { offset: 0, length: HEADER_RANGE_BYTES };
  if (sizeBytes === HEADER_RANGE_BYTES) return [header];
  return [{ offset: HEADER_RANGE_BYTES, length: sizeBytes - HEADER_RANGE_BYTES }, header];
}

/**
 * `blkdiscard --zeroout --offset O --length L PATH`: BLKZEROOUT
 * (blkdiscard(8)). The kernel zeroes the range with the device's
 * write-zeroes command, keeping the blocks allocated, or writes zero pages
 * where the device has none: zeros on every device that accepts writes.
 */
export function zeroArgv(dmPath: string, range: WipeRange): string[] {
  return [
    'blkdiscard',
    '--zeroout',
    '--offset',
    String(range.offset),
    '--length',
    String(range.length),
    dmPath,
  ];
}

/**
 * `fallocate --punch-hole --offset O --length L PATH` on the block device
 * (fallocate(2) FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE): the kernel zeroes
 * with the device's write-zeroes command and lets the device deallocate the
 * blocks (a loop file's hole, qemu's discard=unmap, NVMe's deallocate bit),
 * and never falls back to writing zeros: a device that cannot zero this way
 * fails it (`fallocate failed: keep size mode is unsupported`). Unlike
 * BLKDISCARD, success means the range reads zeros (docs/FACTS.md "Wiping").
 */
export function unmapZeroArgv(dmPath: string, range: WipeRange): string[] {
  return [
    'fallocate',
    '--punch-hole',
    '--offset',
    String(range.offset),
    '--length',
    String(range.length),
    dmPath,
  ];
}

/**
 * Wipes one LV's device so that it reads zeros (DESIGN.md §5 "Wipe"), range
 * by range ({@link wipeRanges}: past the header first, the header's 4 KiB
 * last). Per range, `zero` runs {@link zeroArgv}; `discard` runs
 * {@link unmapZeroArgv} and, when the device refuses it (no write-zeroes
 * command, discard off below a loop device, any failure but a timeout),
 * {@link zeroArgv} of the same range, with a warning naming the device. A
 * plain BLKDISCARD is never issued: a device may accept it and still return
 * the old bytes (qemu's discard=ignore), or refuse it and so fail every
 * delete. Each command runs with `wipeTimeoutMs`; the first range that
 * fails stops the wipe, so the header is written only once the rest reads
 * zeros.
 * @throws InvalidArgumentError for a size that is no whole number of 4 KiB
 *   blocks, before any command; CommandFailedError of `blkdiscard --zeroout`
 *   (the volume's blocks are not known to be zero: the caller must not
 *   remove the LV); CommandTimeoutError of either command.
 */
export async function wipeDevice(
  p: Pick<VolumeParts, 'runner' | 'logger' | 'wipeTimeoutMs'>,
  policy: Exclude<WipePolicy, 'none'>,
  target: WipeTarget,
): Promise<void> {
  const options = { timeoutMs: p.wipeTimeoutMs };
  for (const range of wipeRanges(target.sizeBytes)) {
    if (policy === 'discard') {
      try {
        await runLogged(p.runner, p.logger, unmapZeroArgv(target.dmPath, range), options);
        continue;
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
    await runLogged(p.runner, p.logger, zeroArgv(target.dmPath, range), options);
  }
}
