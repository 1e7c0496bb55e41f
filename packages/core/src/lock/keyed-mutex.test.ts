import { describe, expect, it } from 'vitest';
import { LockTimeoutError } from '../errors.js';
import { KeyedMutex } from './keyed-mutex.js';

const tick = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('KeyedMutex', () => {
  it('runs calls on the same key one after the other, in order', async () => {
    const mutex = new KeyedMutex();
    const events: string[] = [];
    const job = (name: string, ms: number) =>
      mutex.run('vol-a', async () => {
        events.push(`start ${name}`);
        await tick(ms);
        events.push(`end ${name}`);
        return name;
      });
    const results = await Promise.all([job('1', 30), job('2', 5), job('3', 1)]);
    expect(results).toEqual(['1', '2', '3']);
    expect(events).toEqual(['start 1', 'end 1', 'start 2', 'end 2', 'start 3', 'end 3']);
    expect(mutex.isBusy('vol-a')).toBe(false);
  });

  it('runs different keys concurrently', async () => {
    const mutex = new KeyedMutex();
    const events: string[] = [];
    await Promise.all(
      ['a', 'b'].map((key) =>
        mutex.run(key, async () => {
          events.push(`start ${key}`);
          await tick(10);
          events.push(`end ${key}`);
        }),
      ),
    );
    expect(events).toEqual(['start a', 'start b', 'end a', 'end b']);
  });

  it('releases the key when fn throws, and passes the error through', async () => {
    const mutex = new KeyedMutex();
    const boom = new Error('boom');
    await expect(mutex.run('k', () => Promise.reject(boom))).rejects.toBe(boom);
    expect(mutex.isBusy('k')).toBe(false);
    expect(await mutex.run('k', () => Promise.resolve(7))).toBe(7);
  });

  it('tryRun throws LockTimeoutError at once while the key is busy', async () => {
    const mutex = new KeyedMutex();
    let finish: () => void = () => undefined;
    const holder = mutex.run('vol', () => new Promise<void>((resolve) => (finish = resolve)));
    await expect(mutex.tryRun('vol', () => Promise.resolve('never'))).rejects.toThrow(
      new LockTimeoutError('an operation on vol is already in progress'),
    );
    expect(await mutex.tryRun('other', () => Promise.resolve('free'))).toBe('free');
    finish();
    await holder;
    expect(await mutex.tryRun('vol', () => Promise.resolve('now'))).toBe('now');
  });
});
