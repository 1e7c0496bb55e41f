import { validateVolumeName } from '@lvstamp/core';

/**
 * Checks a volume or snapshot reference from the command line (a name, or a
 * 32-digit ID) before anything runs, a volume group look-up included: 1–128
 * bytes of UTF-8 (the CSI spec's limit on a string field, "Size Limits";
 * core MAX_NAME_BYTES), no NUL. A longer ref cannot be an ID, and no volume
 * or snapshot has such a name (DESIGN.md §3), so it names nothing.
 * @throws InvalidArgumentError (exit 2) `<kind> name must be 1–128 bytes of UTF-8, …, got N`.
 */
export function checkRef(ref: string, kind: 'volume' | 'snapshot'): void {
  validateVolumeName(ref, `${kind} name`);
}
