import { LockTimeoutError } from '../errors.js';

/**
 * In-process serialisation per key (a volume ID): operations on the same
 * volume run one after the other, operations on different volumes run
 * concurrently. Not re-entrant: `fn` must not take the same key again.
 */
export class KeyedMutex {
  /** Per key, the promise that settles when the last queued holder is done. */
  readonly #tails = new Map<string, Promise<void>>();

  /** True while some call holds or waits for `key`. */
  isBusy(key: string): boolean {
    return this.#tails.has(key);
  }

  /**
   * Waits until no earlier call holds `key`, then runs `fn` holding it.
   * Releases the key when `fn` settles; its result or error passes through.
   */
  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    let release: () => void = () => undefined;
    const done = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = previous.then(() => done);
    this.#tails.set(key, tail);
    try {
      await previous;
      return await fn();
    } finally {
      release();
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    }
  }

  /**
   * Runs `fn` holding `key` only if nobody holds or waits for it now; the
   * CSI driver answers ABORTED for a busy volume (CSI spec, "Concurrency").
   * @throws LockTimeoutError at once when the key is busy.
   */
  async tryRun<T>(key: string, fn: () => Promise<T>): Promise<T> {
    if (this.#tails.has(key)) {
      throw new LockTimeoutError(`an operation on ${key} is already in progress`);
    }
    return this.run(key, fn);
  }
}
