import { Worker } from 'node:worker_threads';
import pLimit from 'p-limit';
import { FailedPreconditionError, InvalidArgumentError, IoTimeoutError } from '../errors.js';

/** Default deadline of one in-process block I/O operation, in milliseconds (as an lvm command's). */
export const DEFAULT_IO_TIMEOUT_MS = 60_000;

/**
 * How many I/O threads may be stuck in the kernel at once (each on a device
 * that did not answer) before further I/O is refused outright.
 */
export const DEFAULT_MAX_STUCK_THREADS = 8;

/**
 * How many operations run at once, each on a thread of its own; more wait
 * in line, and their deadline starts when they get a thread.
 */
export const DEFAULT_MAX_CONCURRENT = 8;

/** What a read found at the path. */
export interface DeviceRead {
  /** `block` device, regular `file`, or `other` (nothing is read then). */
  readonly kind: 'block' | 'file' | 'other';
  /** The bytes read from the offset; shorter than asked only at the end of the device. */
  readonly bytes: Buffer;
}

/** One range to write: `data`, or `length` zero bytes, at byte `offset`. */
export type WriteRange =
  | { readonly offset: number; readonly data: Uint8Array }
  | { readonly offset: number; readonly zeroBytes: number };

/** Options of a DeviceIo. */
export interface DeviceIoOptions {
  /** Deadline of each operation in milliseconds; default 60 000. */
  readonly timeoutMs?: number;
  /** Stuck threads tolerated before refusing I/O; default 8. */
  readonly maxStuckThreads?: number;
  /**
   * Operations running at once; default 8. A GC inventory reads every
   * volume's header together: without a bound a thousand volumes were a
   * thousand threads, whose start-up alone outlasted the deadline.
   */
  readonly maxConcurrent?: number;
  /**
   * How an I/O thread is started (tests only: a thread that is slow to
   * start). Default: a Worker running the operations below.
   */
  readonly startThread?: () => Worker;
}

/**
 * Block I/O with a deadline (docs/LVM-CONFIG.md, "Hung I/O"). Each
 * operation (open, read or write, `fdatasync(2)`, close) runs with
 * synchronous calls on a worker thread of its own, never on libuv's shared
 * 4-thread pool: a read of a suspended device-mapper device blocks in the
 * kernel and cannot be cancelled, so on the pool four of them would stall
 * every other file operation of the process. When the deadline passes the
 * caller gets an IoTimeoutError naming the device at once (so no lock stays
 * held by the stuck call); the thread is abandoned, unref'd, and ends when
 * the kernel lets the call return. While a device has a stuck operation,
 * further operations on it fail at once instead of stranding more threads;
 * beyond `maxStuckThreads` all I/O fails at once. At most `maxConcurrent`
 * operations run at once (a thread stuck past its deadline no longer
 * counts); the others wait in line, their deadline not yet started. A new
 * thread's deadline starts once it runs (its `online` event): on a starved
 * node (a pod with a small CPU share, an emulated VM) starting a thread can
 * take longer than a device takes to answer, and that is not the device's
 * fault.
 *
 * Idle threads are kept for reuse (at most `maxConcurrent`) and never keep
 * the process alive.
 */
export class DeviceIo {
  readonly #timeoutMs: number;
  readonly #maxStuck: number;
  readonly #idle: Worker[] = [];
  /** Devices with an operation past its deadline, with when it started (Unix ms). */
  readonly #stuck = new Map<string, { readonly operation: string; readonly since: number }>();
  #stuckThreads = 0;
  readonly #limit: pLimit.Limit;
  readonly #startThread: () => Worker;

  /** @throws InvalidArgumentError for a timeout or limit that is not a positive integer. */
  constructor(options: DeviceIoOptions = {}) {
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_IO_TIMEOUT_MS;
    this.#maxStuck = options.maxStuckThreads ?? DEFAULT_MAX_STUCK_THREADS;
    this.#startThread = options.startThread ?? spawnWorker;
    const maxConcurrent = options.maxConcurrent ?? DEFAULT_MAX_CONCURRENT;
    for (const [field, value] of [
      ['timeoutMs', this.#timeoutMs],
      ['maxStuckThreads', this.#maxStuck],
      ['maxConcurrent', maxConcurrent],
    ] as const) {
      if (!Number.isSafeInteger(value) || value <= 0) {
        throw new InvalidArgumentError(`${field} must be a positive integer, got ${value}`);
      }
    }
    this.#limit = pLimit(maxConcurrent);
  }

  /** The deadline of each operation in milliseconds. */
  get timeoutMs(): number {
    return this.#timeoutMs;
  }

  /**
   * Opens `path` read-only, checks its type (fstat) and reads up to `length`
   * bytes from byte `offset` (looping over short reads; fewer only at the
   * end of the device). Nothing is read from an `other` path.
   * @throws IoTimeoutError when the deadline passes, or an earlier operation
   *   on the device is still stuck.
   * @throws the system error of open/read (with its `code`, e.g. ENOENT).
   */
  async read(path: string, offset: number, length: number): Promise<DeviceRead> {
    const reply = await this.#run(path, 'read', { op: 'read', path, offset, length });
    const bytes = reply.bytes ?? new Uint8Array(0);
    return {
      kind: reply.kind ?? 'other',
      bytes: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
    };
  }

  /**
   * Opens `path` write-only with O_DSYNC (never creating or truncating it),
   * writes every range in order and `fdatasync(2)`s before resolving.
   * @throws IoTimeoutError as `read`.
   * @throws FailedPreconditionError when the device accepts no more bytes.
   * @throws the system error of open/write/fdatasync.
   */
  async write(path: string, ranges: readonly WriteRange[]): Promise<void> {
    await this.#run(path, 'write', { op: 'write', path, ranges: ranges.map(toWireRange) });
  }

  /** Runs the operation once one of the `maxConcurrent` slots is free. */
  #run(path: string, operation: string, message: WireRequest): Promise<WireReply> {
    return this.#limit(() => this.#dispatch(path, operation, message));
  }

  async #dispatch(path: string, operation: string, message: WireRequest): Promise<WireReply> {
    const stuck = this.#stuck.get(path);
    if (stuck !== undefined) {
      throw new IoTimeoutError(
        path,
        operation,
        this.#timeoutMs,
        `an earlier ${stuck.operation} of ${path} has not returned for ${Date.now() - stuck.since} ms`,
      );
    }
    if (this.#stuckThreads >= this.#maxStuck) {
      throw new IoTimeoutError(
        path,
        operation,
        this.#timeoutMs,
        `${this.#stuckThreads} I/O threads are stuck on devices that do not answer (${[...this.#stuck.keys()].join(', ')}); refusing more I/O`,
      );
    }
    const worker = this.#idle.pop() ?? (await this.#spawn());
    const started = Date.now();
    return new Promise<WireReply>((resolve, reject) => {
      let settled = false;
      const timer = setTimeout(() => {
        settled = true;
        cleanup();
        this.#abandon(worker, path, operation, started);
        reject(new IoTimeoutError(path, operation, this.#timeoutMs));
      }, this.#timeoutMs);
      const onMessage = (reply: WireReply) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        cleanup();
        this.#idle.push(worker);
        if (reply.error !== undefined) reject(toSystemError(reply.error));
        else resolve(reply);
      };
      const onError = (error: Error) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        cleanup();
        reject(error);
      };
      const onExit = (code: number) => {
        onError(new Error(`the I/O thread exited with code ${code}`));
      };
      const cleanup = () => {
        worker.off('message', onMessage);
        worker.off('error', onError);
        worker.off('exit', onExit);
      };
      worker.on('message', onMessage);
      worker.on('error', onError);
      worker.on('exit', onExit);
      worker.postMessage(message);
    });
  }

  /**
   * A new I/O thread, once it runs; one that ends while idle leaves the pool.
   * @throws the thread's error, or an Error naming its exit code, when it ends before it runs.
   */
  async #spawn(): Promise<Worker> {
    const worker = this.#startThread();
    // An 'error' with no listener would end the process; a call in flight has its own listener.
    worker.on('error', () => undefined);
    worker.once('exit', () => {
      const at = this.#idle.indexOf(worker);
      if (at !== -1) this.#idle.splice(at, 1);
    });
    // Until it runs, only the wait for it keeps the process alive: an unref'd thread alone would
    // let a CLI's event loop empty and Node end the process (exit 13, an unsettled await).
    worker.ref();
    await new Promise<void>((resolve, reject) => {
      const settle = (error?: Error) => {
        worker.unref();
        worker.off('online', onOnline);
        worker.off('error', onError);
        worker.off('exit', onExit);
        if (error === undefined) resolve();
        else reject(error);
      };
      const onOnline = () => {
        settle();
      };
      const onError = (error: Error) => {
        settle(error);
      };
      const onExit = (code: number) => {
        settle(new Error(`the I/O thread exited with code ${code} before it ran`));
      };
      worker.once('online', onOnline);
      worker.once('error', onError);
      worker.once('exit', onExit);
    });
    return worker;
  }

  /** Forgets a thread stuck in the kernel; it is freed when its call returns. */
  #abandon(worker: Worker, path: string, operation: string, since: number): void {
    this.#stuckThreads += 1;
    this.#stuck.set(path, { operation, since });
    worker.once('message', () => {
      // The call returned after all: the device answers again.
      this.#stuckThreads -= 1;
      this.#stuck.delete(path);
      void worker.terminate();
    });
  }
}

// ---- the worker thread --------------------------------------------------------------------------

interface WireRange {
  readonly offset: number;
  readonly data?: Uint8Array;
  readonly zeroBytes?: number;
}

type WireRequest =
  | { readonly op: 'read'; readonly path: string; readonly offset: number; readonly length: number }
  | { readonly op: 'write'; readonly path: string; readonly ranges: readonly WireRange[] };

interface WireReply {
  readonly kind?: 'block' | 'file' | 'other';
  readonly bytes?: Uint8Array;
  readonly error?: { readonly code?: string; readonly message: string; readonly short?: boolean };
}

function toWireRange(range: WriteRange): WireRange {
  return 'data' in range
    ? { offset: range.offset, data: range.data }
    : { offset: range.offset, zeroBytes: range.zeroBytes };
}

function toSystemError(error: NonNullable<WireReply['error']>): Error {
  if (error.short === true) return new FailedPreconditionError(error.message);
  return Object.assign(
    new Error(error.message),
    error.code === undefined ? {} : { code: error.code },
  );
}

// CommonJS run with `eval: true`: the same code serves the built package and the TypeScript tests.
// Synchronous calls only: they block this thread, never libuv's shared pool.
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const fs = require('node:fs');
const { O_RDONLY, O_WRONLY, O_DSYNC } = fs.constants;
const ZEROS = Buffer.alloc(1048576);
parentPort.on('message', (m) => {
  let fd;
  try {
    if (m.op === 'read') {
      fd = fs.openSync(m.path, O_RDONLY);
      const st = fs.fstatSync(fd);
      const kind = st.isBlockDevice() ? 'block' : st.isFile() ? 'file' : 'other';
      const buf = Buffer.alloc(kind === 'other' ? 0 : m.length);
      let done = 0;
      while (done < buf.length) {
        const n = fs.readSync(fd, buf, done, buf.length - done, m.offset + done);
        if (n === 0) break;
        done += n;
      }
      parentPort.postMessage({ kind, bytes: buf.subarray(0, done) });
    } else {
      fd = fs.openSync(m.path, O_WRONLY | O_DSYNC);
      for (const r of m.ranges) {
        const length = r.data ? r.data.byteLength : r.zeroBytes;
        let done = 0;
        while (done < length) {
          const n = r.data
            ? fs.writeSync(fd, r.data, done, length - done, r.offset + done)
            : fs.writeSync(fd, ZEROS, 0, Math.min(length - done, ZEROS.length), r.offset + done);
          if (n === 0) {
            throw Object.assign(new Error(m.path + ' accepted only ' + done + ' of ' + length + ' bytes at offset ' + r.offset), { short: true });
          }
          done += n;
        }
      }
      fs.fdatasyncSync(fd);
      parentPort.postMessage({});
    }
  } catch (e) {
    parentPort.postMessage({ error: { code: e.code, message: e.message, short: e.short === true } });
  } finally {
    if (fd !== undefined) { try { fs.closeSync(fd); } catch {} }
  }
});
`;

function spawnWorker(): Worker {
  const worker = new Worker(WORKER_SOURCE, { eval: true });
  // Neither an idle nor a stuck thread keeps the process alive.
  worker.unref();
  return worker;
}
