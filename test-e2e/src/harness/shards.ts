/**
 * How the e2e files are split over the test VMs that run at once
 * (scripts/run-e2e.sh, `vitest --shard=i/n`): by their recorded durations,
 * not by count, so that the VMs finish together. Each VM runs its files one
 * after another (fileParallelism off), so a shard's time is the sum of its
 * files' times, and the suite's time is the longest shard's.
 */

/** Recorded e2e durations: test file path relative to test-e2e/ -> seconds. */
export type Durations = Readonly<Record<string, number>>;

/** The time assumed for a file with no recorded duration (a new file): seconds. */
export const UNKNOWN_FILE_SECONDS = 120;

/**
 * Splits `files` (paths relative to test-e2e/) into `count` shards, greedy
 * longest first: each file, in order of decreasing duration (then path),
 * goes to the shard with the least total so far (the lowest index on a
 * tie). Deterministic for the same inputs, so every VM computes the same
 * split on its own; every file lands in exactly one shard.
 * @param durations seconds per file; a missing, negative or non-finite
 *   entry counts as {@link UNKNOWN_FILE_SECONDS}.
 * @param after seconds of other work each shard's lane runs after it, for a
 *   caller that plans its lanes ahead (scripts/test.sh does not: its lanes
 *   take shards from a queue); a shard's total starts there. Default 0.
 * @returns `count` lists of paths, each in the input's relative order.
 * @throws RangeError when `count` is not a positive integer, or `after`
 *   has another length or a negative or non-finite entry.
 */
export function balanceShards(
  files: readonly string[],
  durations: Durations,
  count: number,
  after: readonly number[] = [],
): string[][] {
  if (!Number.isSafeInteger(count) || count < 1) {
    throw new RangeError(`shard count must be a positive integer, got ${count}`);
  }
  if (
    after.length > 0 &&
    (after.length !== count || !after.every((a) => Number.isFinite(a) && a >= 0))
  ) {
    throw new RangeError(`after must be ${count} non-negative seconds, got [${after.join(', ')}]`);
  }
  const seconds = (file: string): number => {
    const d = durations[file];
    return d !== undefined && Number.isFinite(d) && d >= 0 ? d : UNKNOWN_FILE_SECONDS;
  };
  const order = [...files].sort((a, b) => seconds(b) - seconds(a) || (a < b ? -1 : a > b ? 1 : 0));
  const load = after.length > 0 ? [...after] : new Array<number>(count).fill(0);
  const shardOf = new Map<string, number>();
  for (const file of order) {
    const least = load.indexOf(Math.min(...load));
    shardOf.set(file, least);
    load[least] = (load[least] ?? 0) + seconds(file);
  }
  return load.map((_, i) => files.filter((f) => shardOf.get(f) === i));
}

/**
 * Parses `LVSTAMP_E2E_AFTER_SECONDS` ("S1,...,SN", seconds, scripts/run-e2e.sh).
 * @returns [] for an unset or empty value.
 * @throws RangeError naming the value when an entry is not a non-negative number.
 */
export function parseAfterSeconds(value: string | undefined): number[] {
  if (value === undefined || value.trim() === '') return [];
  const parts = value.split(',').map((p) => p.trim());
  if (!parts.every((p) => /^\d+(\.\d+)?$/.test(p))) {
    throw new RangeError(
      `LVSTAMP_E2E_AFTER_SECONDS must be seconds separated by commas, got '${value}'`,
    );
  }
  return parts.map(Number);
}
