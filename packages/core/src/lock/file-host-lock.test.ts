import {
  appendFileSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
  existsSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FailedPreconditionError, InvalidArgumentError, LockTimeoutError } from '../errors.js';
import { FileHostLock } from './file-host-lock.js';
import { NoopHostLock } from './host-lock.js';
import { lockWorker, type LockWorker } from '../testing/lock-worker.js';

const tick = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'lvstamp-lock-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A lock that retries every 5–25 ms; its holdings admit in-process callers for `shareMs`. */
function fastLock(path: string, waitMs = 5_000, shareMs = 60_000): FileHostLock {
  return new FileHostLock({
    path,
    waitMs,
    staleMs: 5_000,
    minRetryDelayMs: 5,
    maxRetryDelayMs: 25,
    shareMs,
  });
}

describe('NoopHostLock', () => {
  it('runs fn and records the reason', async () => {
    const lock = new NoopHostLock();
    expect(await lock.withLock('create x', () => Promise.resolve(3))).toBe(3);
    expect(await lock.withVolumeLock('volume y', 'delete y', () => Promise.resolve(4))).toBe(4);
    expect(lock.reasons).toEqual(['create x', 'delete y']);
  });
});

/** A promise and its resolve, to hold a holder inside its fn until the test lets go. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

/**
 * Enters `withVolumeLock(key, reason)` on `lock` and stays inside until
 * `open()`; resolves once inside. `during` runs first thing inside, `after`
 * once let go.
 */
async function holding(
  lock: FileHostLock,
  key: string,
  reason: string,
  hooks: { during?: () => void; after?: () => void } = {},
): Promise<{ open: () => void; done: Promise<void> }> {
  const letGo = gate();
  const inside = gate();
  const done = lock.withVolumeLock(key, reason, async () => {
    hooks.during?.();
    inside.open();
    await letGo.opened;
    hooks.after?.();
  });
  await inside.opened;
  return { open: letGo.open, done };
}

describe('FileHostLock volume holders in one process', () => {
  it('holders of different volumes hold the lock together, in one holding of the file lock', async () => {
    const path = join(tempDir(), 'host.lock');
    const lock = fastLock(path);
    const events: string[] = [];
    const a = await holding(lock, 'volume a', 'delete a', {
      during: () => {
        events.push('start a');
      },
      after: () => {
        events.push('end a');
      },
    });
    const holdA = a.done;
    const holdB = lock.withVolumeLock('volume b', 'create b', async () => {
      events.push('start b');
      // a holds the lock and so does b: the file lock stays taken when a leaves
      a.open();
      await holdA;
      events.push(`b after a left; lock directory ${existsSync(path) ? 'present' : 'gone'}`);
    });
    await holdB;
    expect(events).toEqual([
      'start a',
      'start b',
      'end a',
      'b after a left; lock directory present',
    ]);
    expect(existsSync(path)).toBe(false);
  });

  it('two holders of one volume run one after the other, in arrival order', async () => {
    const lock = fastLock(join(tempDir(), 'host.lock'));
    const events: string[] = [];
    const job = (name: string) =>
      lock.withVolumeLock('volume a', name, async () => {
        events.push(`start ${name}`);
        await tick(20);
        events.push(`end ${name}`);
      });
    await Promise.all([job('first'), job('second'), job('third')]);
    expect(events).toEqual([
      'start first',
      'end first',
      'start second',
      'end second',
      'start third',
      'end third',
    ]);
  });

  it('a busy volume lets a later caller of another volume pass', async () => {
    const lock = fastLock(join(tempDir(), 'host.lock'));
    const events: string[] = [];
    const a = await holding(lock, 'volume a', 'a1', {
      after: () => {
        events.push('a1 done');
      },
    });
    const first = a.done;
    const second = lock.withVolumeLock('volume a', 'a2', () => {
      events.push('a2');
      return Promise.resolve();
    });
    await lock.withVolumeLock('volume b', 'b', () => {
      events.push('b');
      return Promise.resolve();
    });
    a.open();
    await Promise.all([first, second]);
    expect(events).toEqual(['b', 'a1 done', 'a2']);
  });

  it('an exclusive caller waits for the volume holders, and volume callers behind it wait for it', async () => {
    const lock = fastLock(join(tempDir(), 'host.lock'));
    const events: string[] = [];
    const a = await holding(lock, 'volume a', 'a', {
      during: () => {
        events.push('start a');
      },
      after: () => {
        events.push('end a');
      },
    });
    const holdA = a.done;
    const exclusive = lock.withLock('thin create', async () => {
      events.push('start exclusive');
      await tick(20);
      events.push('end exclusive');
    });
    // Arrives after the exclusive caller: must not pass it, although volume b is free.
    const holdB = lock.withVolumeLock('volume b', 'b', () => {
      events.push('b');
      return Promise.resolve();
    });
    await tick(20);
    expect(events).toEqual(['start a']);
    a.open();
    await Promise.all([holdA, exclusive, holdB]);
    expect(events).toEqual(['start a', 'end a', 'start exclusive', 'end exclusive', 'b']);
  });

  it('a volume caller waits while an exclusive caller holds the lock', async () => {
    const lock = fastLock(join(tempDir(), 'host.lock'));
    const events: string[] = [];
    await Promise.all([
      lock.withLock('vg remove', async () => {
        events.push('start exclusive');
        await tick(20);
        events.push('end exclusive');
      }),
      lock.withVolumeLock('volume a', 'a', () => {
        events.push('a');
        return Promise.resolve();
      }),
    ]);
    expect(events).toEqual(['start exclusive', 'end exclusive', 'a']);
  });

  it('calls nested in a volume holding run at once, whatever their kind or key', async () => {
    const lock = fastLock(join(tempDir(), 'host.lock'), 300);
    const result = await lock.withVolumeLock('volume a', 'create a', () =>
      lock.withLock('lvcreate', () =>
        lock.withVolumeLock('volume a', 'again', () =>
          lock.withVolumeLock('volume b', 'other', () => Promise.resolve('deep')),
        ),
      ),
    );
    expect(result).toBe('deep');
  });

  it('a caller of a busy volume gets LockTimeoutError naming the holder when nobody leaves for waitMs', async () => {
    const lock = fastLock(join(tempDir(), 'host.lock'), 150);
    const a = await holding(lock, 'volume a', 'expand a');
    const holdA = a.done;
    const error = await lock
      .withVolumeLock('volume a', 'delete a', () => Promise.resolve())
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockTimeoutError);
    expect((error as Error).message).toMatch(
      /held in this process for "expand a" for more than 150 ms \(wanted for "delete a"\)$/,
    );
    // The one that gave up is out of the queue: an exclusive caller gets the lock once a leaves.
    a.open();
    await holdA;
    expect(await lock.withLock('after', () => Promise.resolve('ok'))).toBe('ok');
  });

  it('an exclusive caller that gives up no longer holds back the volume callers behind it', async () => {
    const lock = fastLock(join(tempDir(), 'host.lock'), 150);
    const a = await holding(lock, 'volume a', 'a');
    const holdA = a.done;
    const exclusive = lock.withLock('gc', () => Promise.resolve()).catch((e: unknown) => e);
    const holdB = lock.withVolumeLock('volume b', 'b', () => Promise.resolve('b ran'));
    expect(await exclusive).toBeInstanceOf(LockTimeoutError);
    expect(await holdB).toBe('b ran');
    a.open();
    await holdA;
  });
});

describe('FileHostLock in one process', () => {
  it('creates the lock directory, holds the lock during fn, and removes it after', async () => {
    const path = join(tempDir(), 'nested', 'dir', 'host.lock');
    const lock = fastLock(path);
    const seen = await lock.withLock('t', () => Promise.resolve(existsSync(path)));
    expect(seen).toBe(true);
    expect(existsSync(path)).toBe(false);
    expect(existsSync(dirname(path))).toBe(true);
  });

  it('a plain file or a symlink at the lock path is refused at once, named, and left in place', async () => {
    const dir = tempDir();
    const file = join(dir, 'file.lock');
    writeFileSync(file, 'not a lock');
    const link = join(dir, 'link.lock');
    symlinkSync(dir, link);
    for (const [path, kind] of [
      [file, 'a plain file'],
      [link, 'a symbolic link'],
    ] as const) {
      const started = Date.now();
      let ran = false;
      const error = await fastLock(path, 60_000)
        .withLock('create x', () => {
          ran = true;
          return Promise.resolve();
        })
        .catch((e: unknown) => e);
      expect(Date.now() - started).toBeLessThan(30_000); // not after the 60 s wait
      expect(ran).toBe(false);
      expect(error).toBeInstanceOf(FailedPreconditionError);
      expect((error as Error).message).toBe(
        `cannot take host lock ${path} for "create x": it is ${kind}, not a lock directory; no lvstamp process made it, so lvstamp leaves it alone: remove it by hand when no lvstamp process runs`,
      );
    }
    expect(readFileSync(file, 'utf8')).toBe('not a lock');
    expect(existsSync(link)).toBe(true);
  });

  it('releases the lock when fn throws', async () => {
    const path = join(tempDir(), 'host.lock');
    const lock = fastLock(path);
    const boom = new Error('boom');
    await expect(lock.withLock('t', () => Promise.reject(boom))).rejects.toBe(boom);
    expect(existsSync(path)).toBe(false);
  });

  it('is re-entrant: a nested withLock runs at once instead of deadlocking', async () => {
    const lock = fastLock(join(tempDir(), 'host.lock'), 300);
    const result = await lock.withLock('outer', () =>
      lock.withLock('inner', () => lock.withLock('innermost', () => Promise.resolve('deep'))),
    );
    expect(result).toBe('deep');
  });

  it('serialises unrelated concurrent callers of one process', async () => {
    const lock = fastLock(join(tempDir(), 'host.lock'));
    const events: string[] = [];
    const job = (name: string) =>
      lock.withLock(name, async () => {
        events.push(`start ${name}`);
        await tick(20);
        events.push(`end ${name}`);
      });
    await Promise.all([job('a'), job('b'), job('c')]);
    expect(events).toEqual(['start a', 'end a', 'start b', 'end b', 'start c', 'end c']);
  });

  it('a queue longer than waitMs drains in order as long as it keeps moving', async () => {
    // 8 callers × 250 ms = 2 s of queue, twice the 1 s wait: nobody times out (each hold stays
    // well inside the wait even on a loaded machine)
    const lock = fastLock(join(tempDir(), 'host.lock'), 1_000);
    const order: number[] = [];
    await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        lock.withLock(`job ${i}`, async () => {
          await tick(250);
          order.push(i);
        }),
      ),
    );
    expect(order).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  it('a caller behind a holder that keeps the lock longer than waitMs gets LockTimeoutError naming it', async () => {
    const lock = fastLock(join(tempDir(), 'host.lock'), 150);
    let release: () => void = () => undefined;
    let holding: () => void = () => undefined;
    const entered = new Promise<void>((resolve) => (holding = resolve));
    const stuck = lock.withLock(
      'create slow',
      () =>
        new Promise<void>((resolve) => {
          release = resolve;
          holding();
        }),
    );
    // The clock starts once the holder holds: on a loaded machine taking the file lock alone can
    // outlast waitMs, and a release() sent before the holder's fn runs would be lost.
    await entered;
    const started = Date.now();
    const error = await lock
      .withLock('create next', () => Promise.resolve())
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockTimeoutError);
    expect((error as Error).message).toMatch(
      /held in this process for "create slow" for more than 150 ms \(wanted for "create next"\)$/,
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    release();
    await stuck;
    // the queue works again once the holder is done
    expect(await lock.withLock('after', () => Promise.resolve('ok'))).toBe('ok');
  });

  it('a task that outlives the lock does not count as holding it', async () => {
    const path = join(tempDir(), 'host.lock');
    const lock = fastLock(path);
    let escaped: (() => Promise<boolean>) | undefined;
    await lock.withLock('outer', () => {
      escaped = () => lock.withLock('later', () => Promise.resolve(existsSync(path)));
      return Promise.resolve();
    });
    expect(escaped).toBeDefined();
    expect(await escaped?.()).toBe(true);
    expect(existsSync(path)).toBe(false);
  });

  it('does not crash when the lock is lost while held, and then throws LockTimeoutError', async () => {
    const path = join(tempDir(), 'host.lock');
    const warnings: string[] = [];
    const lock = new FileHostLock({
      path,
      staleMs: 2_000,
      logger: { warn: (message) => warnings.push(message) },
    });
    const error = await lock
      .withLock('lost', async () => {
        rmSync(path, { recursive: true, force: true });
        await tick(2_500);
        return 'done';
      })
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(LockTimeoutError);
    expect((error as Error).message).toContain(`host lock ${path} was lost while held for "lost"`);
    expect(warnings).toEqual(['host lock compromised while held']);
    // The lock is usable again.
    expect(await fastLock(path).withLock('again', () => Promise.resolve(1))).toBe(1);
  }, 10_000);
});

describe('FileHostLock: a long holding gives other processes a turn', () => {
  it('admits nobody new once a holding is shareMs old; after it drains, the file lock stays free for twice maxRetryDelayMs', async () => {
    // maxRetryDelayMs 25: the pause is 50 ms
    const path = join(tempDir(), 'host.lock');
    const lock = fastLock(path, 5_000, 100);
    const a = await holding(lock, 'volume a', 'a');
    const holdA = a.done;
    const early = await lock.withVolumeLock('volume b', 'b', () => Promise.resolve(Date.now()));
    expect(existsSync(path)).toBe(true);
    await tick(150);
    let lateStart = 0;
    const late = lock.withVolumeLock('volume c', 'c', () => {
      lateStart = Date.now();
      return Promise.resolve();
    });
    await tick(50);
    expect(lateStart).toBe(0); // the holding is over 100 ms old: c waits although a is another volume
    const aLeft = Date.now();
    a.open();
    await holdA;
    expect(existsSync(path)).toBe(false);
    await late;
    expect(early).toBeLessThan(aLeft);
    expect(lateStart - aLeft).toBeGreaterThanOrEqual(48);
    expect(existsSync(path)).toBe(false);
  });

  it('an exclusive caller behind a long holding also waits for the pause, and holdings shorter than shareMs cause none', async () => {
    // maxRetryDelayMs 1 000: the pause is 2 s, far longer than three uncontended holdings take
    const lock = new FileHostLock({
      path: join(tempDir(), 'host.lock'),
      minRetryDelayMs: 5,
      maxRetryDelayMs: 1_000,
      shareMs: 100,
    });
    const started = Date.now();
    for (let i = 0; i < 3; i++) await lock.withLock(`short ${i}`, () => Promise.resolve());
    expect(Date.now() - started).toBeLessThan(1_000);
    let left = 0;
    await lock.withLock('long', async () => {
      await tick(120);
      left = Date.now();
    });
    const next = await lock.withLock('next', () => Promise.resolve(Date.now()));
    expect(next - left).toBeGreaterThanOrEqual(1_990);
  });
});

describe('FileHostLock across processes', () => {
  let worker: LockWorker;

  beforeAll(() => {
    worker = lockWorker(
      `import { appendFileSync } from 'node:fs';
import { FileHostLock } from './lock/file-host-lock.js';
const [path, log, id, holdMs, waitMs] = process.argv.slice(2);
const lock = new FileHostLock({ path, waitMs: Number(waitMs), staleMs: 5000, minRetryDelayMs: 5, maxRetryDelayMs: 25 });
try {
  await lock.withLock('worker ' + id, async () => {
    appendFileSync(log, 'start ' + id + '\\n');
    await new Promise((resolve) => setTimeout(resolve, Number(holdMs)));
    appendFileSync(log, 'end ' + id + '\\n');
  });
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

  const runWorker = (args: string[]): Promise<{ code: number | null; stderr: string }> =>
    worker.run(args);

  it('two child processes never hold the lock at the same time', async () => {
    const dir = tempDir();
    const path = join(dir, 'host.lock');
    const log = join(dir, 'log');
    writeFileSync(log, '');
    const results = await Promise.all([
      runWorker([path, log, 'a', '300', '10000']),
      runWorker([path, log, 'b', '300', '10000']),
    ]);
    expect(results).toEqual([
      { code: 0, stderr: '' },
      { code: 0, stderr: '' },
    ]);
    const lines = readFileSync(log, 'utf8').trim().split('\n');
    expect(lines).toHaveLength(4);
    const first = lines[0]?.split(' ')[1];
    const second = first === 'a' ? 'b' : 'a';
    expect(lines).toEqual([`start ${first}`, `end ${first}`, `start ${second}`, `end ${second}`]);
  }, 30_000);

  it('a child gives up with LockTimeoutError after its wait while this process holds the lock', async () => {
    const dir = tempDir();
    const path = join(dir, 'host.lock');
    const log = join(dir, 'log');
    const lock = fastLock(path);
    const blocked = await lock.withLock('parent', () => runWorker([path, log, 'c', '0', '300']));
    expect(blocked.code).toBe(3);
    expect(blocked.stderr).toContain(
      `LockTimeoutError: host lock ${path} still held by another process`,
    );
    expect(existsSync(log)).toBe(false);
    const free = await runWorker([path, log, 'd', '0', '300']);
    expect(free).toEqual({ code: 0, stderr: '' });
    expect(readFileSync(log, 'utf8')).toBe('start d\nend d\n');
  }, 30_000);

  it('another process gets its turn during a stream of volume work that never drains by itself', async () => {
    const dir = tempDir();
    const path = join(dir, 'host.lock');
    const log = join(dir, 'log');
    writeFileSync(log, '');
    // holdings admit callers for 300 ms; this process keeps overlapping volume holders running
    // (a new one every 40 ms, each 100 ms) until the child is done, so without the pause after a
    // long holding the file lock would never be free and the child would time out
    const lock = fastLock(path, 5_000, 300);
    const child = { done: false };
    const stream = (async () => {
      const running: Promise<void>[] = [];
      const bound = Date.now() + 20_000;
      for (let i = 0; !child.done && Date.now() < bound; i++) {
        running.push(
          lock.withVolumeLock(`volume ${i}`, `v${i}`, async () => {
            appendFileSync(log, `parent ${i}\n`);
            await tick(100);
          }),
        );
        await tick(40);
      }
      await Promise.all(running);
    })();
    await tick(200);
    const result = await runWorker([path, log, 'f', '0', '5000']);
    child.done = true;
    await stream;
    expect(result).toEqual({ code: 0, stderr: '' });
    const lines = readFileSync(log, 'utf8').trim().split('\n');
    const at = lines.indexOf('start f');
    expect(at).toBeGreaterThan(0);
    expect(lines[at + 1]).toBe('end f');
  }, 30_000);

  it('another process waits while volume holders of this one overlap, also after the first left', async () => {
    const dir = tempDir();
    const path = join(dir, 'host.lock');
    const log = join(dir, 'log');
    const lock = fastLock(path);
    const a = await holding(lock, 'volume a', 'a');
    const holdA = a.done;
    const blocked = await lock.withVolumeLock('volume b', 'b', async () => {
      a.open();
      await holdA;
      return runWorker([path, log, 'e', '0', '300']);
    });
    expect(blocked.code).toBe(3);
    expect(existsSync(log)).toBe(false);
    expect(existsSync(path)).toBe(false);
  }, 30_000);
});

describe('FileHostLock paths', () => {
  it.each(['', '/tmp', '/tmp/', '.lock', '/var/lib/data', '/run/lock/lvstamp/host.lock/'])(
    'refuses %j: it is created and removed as a lock directory',
    (path) => {
      expect(() => new FileHostLock({ path })).toThrow(InvalidArgumentError);
    },
  );

  it('accepts the default and any path ending in .lock', () => {
    expect(new FileHostLock().path).toBe('/run/lock/lvstamp/host.lock');
    expect(new FileHostLock({ path: '/tmp/x/host.lock' }).path).toBe('/tmp/x/host.lock');
  });
});
