import { describe, expect, it } from 'vitest';
import { balanceShards, parseAfterSeconds, UNKNOWN_FILE_SECONDS } from './shards.js';

describe('balanceShards', () => {
  it('puts the longest files on different shards and fills the lighter one', () => {
    const durations = { a: 900, b: 600, c: 500, d: 200, e: 100 };
    // 900 -> 0; 600 -> 1; 500 -> 1 (1100); 200 -> 0 (1100); 100 -> 0 (1200)
    expect(balanceShards(['a', 'b', 'c', 'd', 'e'], durations, 2)).toEqual([
      ['a', 'd', 'e'],
      ['b', 'c'],
    ]);
  });

  it('keeps every file exactly once, in the input order within a shard', () => {
    const files = ['z', 'y', 'x', 'w', 'v', 'u', 't'];
    const shards = balanceShards(files, { z: 1, y: 2, x: 3 }, 3);
    expect(shards.flat().sort()).toEqual([...files].sort());
    for (const shard of shards) {
      expect(shard).toEqual(files.filter((f) => shard.includes(f)));
    }
  });

  it('counts a file with no usable duration as UNKNOWN_FILE_SECONDS', () => {
    const durations = { known: UNKNOWN_FILE_SECONDS + 1, bad: Number.NaN, neg: -5 };
    expect(balanceShards(['new', 'known', 'bad', 'neg'], durations, 2)).toEqual([
      ['new', 'known'],
      ['bad', 'neg'],
    ]);
  });

  it('is deterministic: ties go by path, then to the lowest shard', () => {
    const durations = { b: 10, a: 10, c: 10, d: 10 };
    expect(balanceShards(['d', 'c', 'b', 'a'], durations, 2)).toEqual([
      ['c', 'a'],
      ['d', 'b'],
    ]);
  });

  it('gives one shard everything and refuses a count below 1', () => {
    expect(balanceShards(['a', 'b'], {}, 1)).toEqual([['a', 'b']]);
    expect(() => balanceShards(['a'], {}, 0)).toThrow(RangeError);
    expect(() => balanceShards(['a'], {}, 1.5)).toThrow('positive integer');
  });

  it('starts each shard at the work its lane runs after it', () => {
    // lane 1 runs 1000 s more after its shard: the files go to shard 2 until it catches up
    const durations = { a: 600, b: 300, c: 200, d: 100 };
    expect(balanceShards(['a', 'b', 'c', 'd'], durations, 2, [1000, 0])).toEqual([
      ['d'],
      ['a', 'b', 'c'],
    ]);
    expect(() => balanceShards(['a'], {}, 2, [1])).toThrow('after must be 2');
    expect(() => balanceShards(['a'], {}, 2, [1, -1])).toThrow(RangeError);
  });
});

describe('parseAfterSeconds', () => {
  it('reads seconds separated by commas, nothing for unset or empty', () => {
    expect(parseAfterSeconds('1150, 1025.5')).toEqual([1150, 1025.5]);
    expect(parseAfterSeconds(undefined)).toEqual([]);
    expect(parseAfterSeconds(' ')).toEqual([]);
  });

  it('refuses anything else, naming the value', () => {
    expect(() => parseAfterSeconds('10,x')).toThrow("got '10,x'");
    expect(() => parseAfterSeconds('-5,3')).toThrow(RangeError);
    expect(() => parseAfterSeconds('1,,2')).toThrow(RangeError);
  });
});
