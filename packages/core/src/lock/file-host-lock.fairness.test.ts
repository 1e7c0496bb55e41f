// Fairness of the host lock between processes (DESIGN.md §2.3 "The host lock"): a stream of work
// in one process, short holdings or long, never keeps another process waiting past its deadline,
// and a caller's wait for another process is its own.
//
// "Another process" is a child Node process running the transpiled lock module, with the
// production retry settings (first retry 50 ms, at most 1 000 ms between attempts), as the CLI,
// the GC job and the driver construct it (node.ts: only the path is configured).
import {
  appendFileSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LockTimeoutError } from '../errors.js';
import { FileHostLock } from './file-host-lock.js';
import { lockWorker, type LockWorker } from '../testing/lock-worker.js';

const tick = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'lvstamp-lockfair-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** The production retry settings (FileHostLock defaults) with a short wait and share. */
function productionLikeLock(path: string, waitMs: number, shareMs: number): FileHostLock {
  return new FileHostLock({
    path,
    waitMs,
    staleMs: 5_000,
    minRetryDelayMs: 50,
    maxRetryDelayMs: 1_000,
    shareMs,
  });
}

let worker: LockWorker;

beforeAll(() => {
  // mode `once`: one exclusive holding of holdMs. mode `chain`: two loops of exclusive holdings of
  // holdMs each, back to back (one always waiting behind the other, as the GC executor's entries
  // or a burst of thin creates), for runMs.
  worker = lockWorker(
    `import { appendFileSync } from 'node:fs';
import { FileHostLock } from './lock/file-host-lock.js';
const [path, log, id, mode, holdMs, waitMs, shareMs, runMs] = process.argv.slice(2);
const lock = new FileHostLock({ path, waitMs: Number(waitMs), staleMs: 5000, minRetryDelayMs: 50, maxRetryDelayMs: 1000, shareMs: Number(shareMs) });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
try {
  if (mode === 'once') {
    await lock.withLock('worker ' + id, async () => {
      appendFileSync(log, 'start ' + id + ' ' + Date.now() + '\\n');
      await sleep(Number(holdMs));
      appendFileSync(log, 'end ' + id + ' ' + Date.now() + '\\n');
    });
  } else {
    const until = Date.now() + Number(runMs);
    const loop = async (k) => {
      for (let i = 0; Date.now() < until; i++) {
        await lock.withLock('worker ' + id + ' ' + k + '.' + i, () => sleep(Number(holdMs)));
      }
    };
    await Promise.all([loop(0), loop(1)]);
    appendFileSync(log, 'chain done ' + id + ' ' + Date.now() + '\\n');
  }
} catch (error) {
  console.error(error.name + ': ' + error.message);
  process.exit(error.name === 'LockTimeoutError' ? 3 : 1);
}
`,
  );
  return () => {
    worker.remove();
  };
});

function runWorker(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return worker.run(args);
}

describe('FileHostLock: a busy period of shareMs, one holding or a chain of them, ends in a pause', () => {
  it('another process gets its turn during a stream of exclusive work in this process (a burst of thin creates, snapshots, NodeStage activations)', async () => {
    // shareMs 500, the production pause of 2 s. Two loops of exclusive holdings of 250 ms each:
    // a burst of thin creates (create.ts holds the lock exclusively for a thin class), one
    // always waiting behind the other. Each holding is shorter than shareMs: a pause counted per
    // holding never comes, the file lock is released and taken again within a millisecond, and
    // the child, which retries at most once a second, almost never finds it free.
    const dir = tempDir();
    const path = join(dir, 'host.lock');
    const log = join(dir, 'log');
    writeFileSync(log, '');
    const lock = productionLikeLock(path, 5_000, 500);
    const child = { done: false };
    const bound = Date.now() + 30_000;
    const loop = async (k: number): Promise<void> => {
      for (let i = 0; !child.done && Date.now() < bound; i++) {
        await lock.withLock(`create thin ${k}.${i}`, async () => {
          appendFileSync(log, `parent ${k}.${i}\n`);
          await tick(250);
        });
      }
    };
    const stream = Promise.all([loop(0), loop(1)]);
    await tick(300);
    // The child waits 6 s: twelve times shareMs, three times the pause.
    const result = await runWorker([path, log, 'cli', 'once', '0', '6000', '30000', '0']);
    child.done = true;
    await stream;
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  }, 60_000);

  it('another process gets its turn during volume work interleaved with exclusive work (creates and deletes beside NodeStage)', async () => {
    // The stream of the existing test "another process gets its turn during a stream of volume
    // work" (a volume holder every 40 ms, each 100 ms), plus an exclusive caller every 200 ms
    // (attach's activation, a snapshot, an expand: withLock). Each exclusive caller ends the
    // holding of the volume holders before it is shareMs old (nobody passes a waiting
    // exclusive caller), and the volume callers queued behind it start the next holding at
    // once: no holding reaches shareMs, there is never a pause.
    const dir = tempDir();
    const path = join(dir, 'host.lock');
    const log = join(dir, 'log');
    writeFileSync(log, '');
    const lock = productionLikeLock(path, 5_000, 500);
    const child = { done: false };
    const bound = Date.now() + 30_000;
    const volumes = (async () => {
      const running: Promise<void>[] = [];
      for (let i = 0; !child.done && Date.now() < bound; i++) {
        running.push(
          lock.withVolumeLock(`volume ${i}`, `create ${i}`, async () => {
            await tick(100);
          }),
        );
        await tick(40);
      }
      await Promise.all(running);
    })();
    const exclusive = (async () => {
      const running: Promise<void>[] = [];
      for (let i = 0; !child.done && Date.now() < bound; i++) {
        running.push(lock.withLock(`activate ${i}`, () => tick(20)));
        await tick(200);
      }
      await Promise.all(running);
    })();
    await tick(300);
    const result = await runWorker([path, log, 'cli', 'once', '0', '6000', '30000', '0']);
    child.done = true;
    await Promise.all([volumes, exclusive]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  }, 60_000);

  it('this process (the driver) gets its turn while another process (the GC job) runs a chain of short exclusive holdings', async () => {
    // The GC executor holds the lock once per plan entry, back to back; quarantine and
    // `lvstamp vg` likewise. The child chains holdings of 250 ms for 8 s; the driver's volume
    // work waits 5 s (120 s in production, against a GC run of any length).
    const dir = tempDir();
    const path = join(dir, 'host.lock');
    const log = join(dir, 'log');
    writeFileSync(log, '');
    const gc = runWorker([path, log, 'gc', 'chain', '250', '60000', '500', '8000']);
    // Let the child take the lock first.
    const deadline = Date.now() + 10_000;
    while (!existsLock(path) && Date.now() < deadline) await tick(10);
    const lock = productionLikeLock(path, 5_000, 500);
    const outcome = await lock
      .withVolumeLock('volume a', 'delete a', () => Promise.resolve('ran'))
      .catch((error: unknown) => error);
    const gcResult = await gc;
    expect(gcResult.code).toBe(0);
    expect(outcome).toBe('ran');
  }, 60_000);
});

function existsLock(path: string): boolean {
  return existsSync(path);
}

describe('FileHostLock: a caller that joins a holding still being taken keeps its own deadline', () => {
  it('a volume caller admitted late into a holding that waits for another process waits waitMs itself, or its error does not claim it did', async () => {
    // The child holds the lock for 2.5 s. Volume caller a starts a holding (deadline t0 +
    // 1 500 ms). Volume caller b (another volume) arrives 1 300 ms later, is admitted at once
    // (the holding is not taken yet, so it is not shareMs old) and joins it: it fails with a's
    // deadline, after about 200 ms, with "still held by another process after 1500 ms".
    const dir = tempDir();
    const path = join(dir, 'host.lock');
    const log = join(dir, 'log');
    writeFileSync(log, '');
    const child = runWorker([path, log, 'cli', 'once', '2500', '10000', '30000', '0']);
    const deadline = Date.now() + 10_000;
    while (!readFileSync(log, 'utf8').includes('start cli') && Date.now() < deadline)
      await tick(10);
    const lock = new FileHostLock({
      path,
      waitMs: 1_500,
      staleMs: 5_000,
      minRetryDelayMs: 5,
      maxRetryDelayMs: 25,
    });
    const a = lock
      .withVolumeLock('volume a', 'delete a', () => Promise.resolve('a ran'))
      .catch((error: unknown) => error);
    await tick(1_300);
    const bStart = Date.now();
    const b = await lock
      .withVolumeLock('volume b', 'delete b', () => Promise.resolve('b ran'))
      .catch((error: unknown) => error);
    const bWaited = Date.now() - bStart;
    await a;
    await child;
    // Either b waited its own waitMs (and then ran: the child is gone after 2.5 s) ...
    if (b instanceof LockTimeoutError) {
      // ... or, if it gives up, it waited what its message says.
      expect(bWaited).toBeGreaterThanOrEqual(1_400);
    } else {
      expect(b).toBe('b ran');
    }
  }, 30_000);
});
