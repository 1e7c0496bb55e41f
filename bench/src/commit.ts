import { execa } from 'execa';

/**
 * The commit of the tree being measured: LVSTAMP_BENCH_COMMIT (set by
 * scripts/run-bench.sh on the host, where git works) or `git rev-parse HEAD`,
 * with a `-dirty` suffix for uncommitted changes; null when unknown.
 */
export async function environmentCommit(): Promise<string | null> {
  const fromEnv = process.env.LVSTAMP_BENCH_COMMIT;
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  try {
    const head = (await execa('git', ['rev-parse', 'HEAD'])).stdout.trim();
    const dirty = (
      await execa('git', ['status', '--porcelain', '--untracked-files=no'])
    ).stdout.trim();
    return dirty === '' ? head : `${head}-dirty`;
  } catch {
    return null;
  }
}
