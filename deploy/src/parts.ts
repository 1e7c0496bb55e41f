// The pinned programs of test-e2e/parts (built from their Go modules at the versions of
// test-e2e/parts/versions.env and cached outside the repository) that the deploy tests run.
import { execFile } from 'node:child_process';
import { access, constants } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/** Builds the pinned parts once per machine and prints their directory. */
const PARTS_BUILD = fileURLToPath(new URL('../../test-e2e/parts/build.sh', import.meta.url));

/**
 * How long building a part may take: cached, a fraction of a second; cold on a loaded 2-core
 * machine, up to 3,193 s were measured for `kubernetes` (test-e2e/parts/README.md), 412 s for
 * `helm`.
 */
export const PARTS_TIMEOUT_MS = 90 * 60_000;

/**
 * The path of `binary` in the part `part` (`kubernetes` → kubectl, `helm` → helm), built and
 * cached by test-e2e/parts/build.sh when it is not cached yet.
 * @throws Error with build.sh's output when the build fails, or naming the missing binary.
 */
export async function pinnedBinary(part: string, binary: string): Promise<string> {
  let dir: string;
  try {
    const { stdout } = await promisify(execFile)('bash', [PARTS_BUILD, part], {
      timeout: PARTS_TIMEOUT_MS,
    });
    dir = stdout.trim();
  } catch (error) {
    const e = error as { stderr?: string; message: string };
    throw new Error(
      `test-e2e/parts/build.sh ${part} failed (these tests run its ${binary}): ${e.message}\n${e.stderr ?? ''}`,
    );
  }
  const path = join(dir, binary);
  try {
    await access(path, constants.X_OK);
  } catch {
    throw new Error(`test-e2e/parts/build.sh ${part} printed ${dir}, which has no ${binary}`);
  }
  return path;
}
