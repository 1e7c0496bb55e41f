/**
 * The e2e suite's vitest sequencer: `--shard=i/n` takes the i-th of
 * {@link balanceShards}' splits by the durations in `e2e-durations.json`
 * (and `LVSTAMP_E2E_AFTER_SECONDS`, what each shard's lane runs after it, when
 * set: scripts/run-e2e.sh; test-e2e/README.md "Shards"), instead of vitest's
 * equal file counts.
 * Order within a shard stays vitest's own.
 */
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { balanceShards, parseAfterSeconds, type Durations } from './shards.js';

/** Where the recorded durations live, relative to test-e2e/. */
export const DURATIONS_FILE = 'e2e-durations.json';

/**
 * Reads `{ "files": { path: seconds } }` from `file`.
 * @throws Error naming the file when it is missing or not that shape.
 */
export function readDurations(file: string): Durations {
  const parsed: unknown = JSON.parse(readFileSync(file, 'utf8'));
  const files = (parsed as { files?: unknown } | null)?.files;
  if (typeof files !== 'object' || files === null || Array.isArray(files)) {
    throw new Error(`${file}: expected { "files": { "<path>": <seconds> } }`);
  }
  return files as Durations;
}

export default class DurationSequencer extends BaseSequencer {
  override shard(files: TestSpecification[]): Promise<TestSpecification[]> {
    const { root, shard } = this.ctx.config;
    if (shard === undefined) return Promise.resolve(files);
    const durations = readDurations(`${root}/${DURATIONS_FILE}`);
    const key = (spec: TestSpecification): string => relative(root, spec.moduleId);
    const after = parseAfterSeconds(process.env.LVSTAMP_E2E_AFTER_SECONDS);
    const split = balanceShards(files.map(key), durations, shard.count, after);
    const mine = new Set(split[shard.index - 1]);
    return Promise.resolve(files.filter((spec) => mine.has(key(spec))));
  }
}
