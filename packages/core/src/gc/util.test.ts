import { describe, expect, it } from 'vitest';
import { compareText, formatDuration, formatTime } from './util.js';

describe('gc reason formatting', () => {
  it.each([
    [0, '0s'],
    [1500, '1.5s'],
    [59_999, '59.999s'],
    [60_000, '1m'],
    [3_600_000, '1h'],
    [3_599_999, '59m 59s'],
    [90_061_000, '1d 1h 1m 1s'],
  ])('formats %i ms as %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it('formats times as ISO 8601 UTC, and out-of-range values as milliseconds', () => {
    expect(formatTime(Date.UTC(2025, 5, 1, 12))).toBe('2025-06-01T12:00:00.000Z');
    expect(formatTime(9e15)).toBe('9000000000000000 ms');
  });

  it('orders text by code unit, not by locale', () => {
    expect(['vg1/b', 'Vg0/a', 'vg0/a'].sort(compareText)).toEqual(['Vg0/a', 'vg0/a', 'vg1/b']);
  });
});
