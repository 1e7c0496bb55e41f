import { describe, expect, it } from 'vitest';
import { DEFAULT_PROPERTY_RUNS, parsePropertyRuns, parsePropertySeed } from './gc-inventories.js';

describe('the property tests’ settings', () => {
  it('runs 10,000 inventories unless LVSTAMP_PROPERTY_RUNS gives a positive integer', () => {
    expect(DEFAULT_PROPERTY_RUNS).toBe(10_000);
    expect(parsePropertyRuns(undefined)).toBe(10_000);
    expect(parsePropertyRuns('')).toBe(10_000);
    expect(parsePropertyRuns('1')).toBe(1);
    expect(parsePropertyRuns('250000')).toBe(250_000);
  });

  it.each(['0', '-5', '1.5', '1e4', ' 10', 'ten', '010', '9007199254740993'])(
    'refuses LVSTAMP_PROPERTY_RUNS=%j, naming the variable and the value',
    (given) => {
      expect(() => parsePropertyRuns(given)).toThrow(
        `LVSTAMP_PROPERTY_RUNS must be a positive integer (inventories per property), got "${given}"`,
      );
    },
  );

  it('replays the seed LVSTAMP_PROPERTY_SEED gives, and refuses one that is not an integer', () => {
    expect(parsePropertySeed(undefined)).toBeNull();
    expect(parsePropertySeed('')).toBeNull();
    expect(parsePropertySeed('1957325440')).toBe(1957325440);
    expect(parsePropertySeed('-3')).toBe(-3);
    for (const given of ['1.5', 'x', '0x10', ' 7']) {
      expect(() => parsePropertySeed(given)).toThrow(
        `LVSTAMP_PROPERTY_SEED must be an integer, got "${given}"`,
      );
    }
  });
});
