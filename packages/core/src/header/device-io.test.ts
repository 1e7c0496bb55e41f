import { execFileSync } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { open as openCb, writeFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InvalidArgumentError, IoTimeoutError } from '../errors.js';
import { readHeader, writeHeaderBlock } from './block-io.js';
import { DeviceIo } from './device-io.js';

// A FIFO stands in for a device that does not answer: opening it for reading blocks in the
// kernel until a writer comes, as a read of a suspended device-mapper map blocks until resume.
let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lvstamp-device-io-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function fifo(name: string): string {
  const path = join(dir, name);
  execFileSync('mkfifo', [path]);
  return path;
}

/** Opens the FIFO for writing (non-blocking side once a reader waits), which lets the reader go. */
function release(path: string): void {
  openCb(path, 'w', () => undefined);
}

describe('DeviceIo', () => {
  it('reads and writes a regular file', async () => {
    const file = join(dir, 'image');
    writeFileSync(file, Buffer.alloc(8192, 7));
    const io = new DeviceIo({ timeoutMs: 5_000 });
    await io.write(file, [
      { offset: 512, data: Buffer.from('abc') },
      { offset: 4096, zeroBytes: 1024 },
    ]);
    const read = await io.read(file, 510, 8);
    expect(read.kind).toBe('file');
    expect([...read.bytes]).toEqual([7, 7, 97, 98, 99, 7, 7, 7]);
    const bytes = await readFile(file);
    expect(bytes.subarray(4096, 5120).every((b) => b === 0)).toBe(true);
    expect(bytes[5120]).toBe(7);
    expect((await io.read(file, 8000, 1000)).bytes.length).toBe(192);
  });

  it('gives the system error of open with its code', async () => {
    const io = new DeviceIo({ timeoutMs: 5_000 });
    await expect(io.read(join(dir, 'absent'), 0, 512)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('times out a read that blocks in the kernel, naming the device, and fails fast on it after', async () => {
    const hung = fifo('hung');
    // The deadline also bounds the other reads below, each on a fresh worker thread: long enough
    // for a loaded machine to start one (1 s was missed at load 15), short enough to wait for once.
    const timeoutMs = 4_000;
    const io = new DeviceIo({ timeoutMs });
    const started = Date.now();
    const error = await io.read(hung, 0, 512).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(IoTimeoutError);
    expect(error).toMatchObject({ device: hung, operation: 'read', timeoutMs });
    expect((error as Error).message).toContain(hung);
    expect(Date.now() - started).toBeGreaterThanOrEqual(timeoutMs - 50);

    // The same device again: refused at once (well before a second deadline), no second thread
    // stranded on it. The bound is the deadline itself, not a guess at a loaded machine's speed.
    const again = Date.now();
    await expect(io.read(hung, 0, 512)).rejects.toThrow(/an earlier read of .* has not returned/);
    expect(Date.now() - again).toBeLessThan(timeoutMs);

    // Another device proceeds.
    const file = join(dir, 'other');
    writeFileSync(file, Buffer.alloc(512, 1));
    expect((await io.read(file, 0, 4)).bytes.length).toBe(4);

    // The device answers again: the stuck thread returns and the device is usable.
    release(hung);
    await expect.poll(async () => (await io.read(file, 0, 1)).kind).toBe('file');
    await expect
      .poll(
        () =>
          io.read(hung, 0, 0).then(
            () => 'answers',
            (e: unknown) => (e instanceof IoTimeoutError ? 'stuck' : 'other error'),
          ),
        { timeout: 5_000 },
      )
      .not.toBe('stuck');
  });

  it("never starves the process's other file operations (libuv's pool has 4 threads)", async () => {
    const io = new DeviceIo({ timeoutMs: 200, maxStuckThreads: 16 });
    const hung = Array.from({ length: 6 }, (_, i) => fifo(`hung${i}`));
    const results = await Promise.allSettled(hung.map((path) => io.read(path, 0, 512)));
    expect(
      results.every((r) => r.status === 'rejected' && r.reason instanceof IoTimeoutError),
    ).toBe(true);
    // Six threads are blocked in open(2); fs.promises still answers.
    const answered = await Promise.race([
      readFile('/proc/self/status', 'utf8').then(() => true),
      new Promise<boolean>((resolve) =>
        setTimeout(() => {
          resolve(false);
        }, 3_000),
      ),
    ]);
    expect(answered).toBe(true);
    for (const path of hung) release(path);
  });

  it('refuses all I/O once maxStuckThreads threads are stuck', async () => {
    const io = new DeviceIo({ timeoutMs: 150, maxStuckThreads: 2 });
    const a = fifo('a');
    const b = fifo('b');
    await expect(io.read(a, 0, 512)).rejects.toBeInstanceOf(IoTimeoutError);
    await expect(io.read(b, 0, 512)).rejects.toBeInstanceOf(IoTimeoutError);
    const file = join(dir, 'fine');
    writeFileSync(file, Buffer.alloc(512));
    await expect(io.read(file, 0, 512)).rejects.toThrow(
      /2 I\/O threads are stuck .*refusing more I\/O/,
    );
    release(a);
    release(b);
  });

  it('runs at most maxConcurrent operations at once; a waiting one starts its deadline when it runs', async () => {
    const timeoutMs = 300;
    const io = new DeviceIo({ timeoutMs, maxStuckThreads: 8, maxConcurrent: 2 });
    const hung = ['q1', 'q2', 'q3'].map(fifo);
    const started = Date.now();
    const finished: number[] = [];
    const results = await Promise.allSettled(
      hung.map((path) => io.read(path, 0, 512).finally(() => finished.push(Date.now() - started))),
    );
    expect(
      results.every((r) => r.status === 'rejected' && r.reason instanceof IoTimeoutError),
    ).toBe(true);
    // two ran and timed out together; the third waited for a slot, then had its own whole deadline
    expect(Math.max(...finished)).toBeGreaterThanOrEqual(2 * timeoutMs - 20);
    hung.forEach(release);
  });

  it('reads many devices at once through the bounded threads (a GC inventory of many volumes)', async () => {
    const io = new DeviceIo({ timeoutMs: 30_000, maxConcurrent: 4 });
    const files = Array.from({ length: 200 }, (_, i) => {
      const file = join(dir, `many${i}`);
      writeFileSync(file, Buffer.alloc(512, i % 256));
      return file;
    });
    const reads = await Promise.all(files.map((file) => io.read(file, 0, 1)));
    expect(reads.map((r) => r.bytes[0])).toEqual(files.map((_, i) => i % 256));
  });

  it('times out writes too, and the header functions pass the timeout through', async () => {
    const hung = fifo('hung-write');
    const io = new DeviceIo({ timeoutMs: 200 });
    // Opening a FIFO for writing blocks until a reader comes.
    await expect(
      writeHeaderBlock(hung, Buffer.alloc(512), { io, blockSizeBytes: 512 }),
    ).rejects.toMatchObject({ name: 'IoTimeoutError', device: hung, operation: 'write' });
    await expect(readHeader(hung, { io })).rejects.toMatchObject({
      name: 'IoTimeoutError',
      device: hung,
    });
    openCb(hung, 'r', () => undefined);
  });

  /**
   * A stand-in I/O thread that starts running `startMs` after it is made (or
   * exits with `exitCode` instead) and then answers every read with one
   * byte; like a real thread, it answers what was posted before only once it runs.
   */
  function slowThread(startMs: number, exitCode?: number, refs: string[] = []): () => Worker {
    return () => {
      const thread = new EventEmitter();
      thread.on('online', () => refs.push('online'));
      let running = false;
      let waiting = 0;
      const answer = () => thread.emit('message', { kind: 'file', bytes: Buffer.from('x') });
      setTimeout(() => {
        if (exitCode !== undefined) return void thread.emit('exit', exitCode);
        running = true;
        thread.emit('online');
        for (; waiting > 0; waiting--) setTimeout(answer, 1);
      }, startMs);
      return Object.assign(thread, {
        postMessage: () => (running ? setTimeout(answer, 1) : (waiting += 1)),
        ref: () => refs.push('ref'),
        unref: () => refs.push('unref'),
        terminate: () => Promise.resolve(0),
      }) as unknown as Worker;
    };
  }

  it("starts a new thread's deadline once the thread runs: a slow start is not a device that does not answer", async () => {
    const refs: string[] = [];
    const io = new DeviceIo({ timeoutMs: 1_000, startThread: slowThread(1_500, undefined, refs) });
    const started = Date.now();
    const read = await io.read('/dev/slow-start', 0, 1);
    expect(read).toEqual({ kind: 'file', bytes: Buffer.from('x') });
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_450);
    // while it starts, the thread keeps the process alive (a CLI has nothing else pending then)
    expect(refs).toEqual(['ref', 'online', 'unref']);
  });

  it('fails the operation, naming the exit code, when a new thread ends before it runs', async () => {
    const io = new DeviceIo({ timeoutMs: 1_000, startThread: slowThread(10, 3) });
    await expect(io.read('/dev/never', 0, 1)).rejects.toThrow(
      'the I/O thread exited with code 3 before it ran',
    );
  });

  it('rejects a timeout that is not a positive integer', () => {
    expect(() => new DeviceIo({ timeoutMs: 0 })).toThrow(InvalidArgumentError);
    expect(() => new DeviceIo({ maxConcurrent: 0 })).toThrow(InvalidArgumentError);
    expect(() => new DeviceIo({ maxStuckThreads: 1.5 })).toThrow(InvalidArgumentError);
  });
});
