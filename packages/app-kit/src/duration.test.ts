import { describe, expect, it } from 'vitest';
import { DURATION_SYNTAX, formatDuration, parseDuration } from './duration.js';

describe('parseDuration', () => {
  it.each([
    ['30m', 1_800_000],
    ['2h', 7_200_000],
    ['1h30m', 5_400_000],
    ['45s', 45_000],
    ['500ms', 500],
    ['0s', 0],
    ['0', 0],
    ['2d', 172_800_000],
    ['7d', 604_800_000],
    ['1d12h', 129_600_000],
    [' 90s ', 90_000],
  ])('%j is %d ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each([
    '',
    '30',
    'm',
    '1.5h',
    '1.5d',
    '-1h',
    '1w',
    '2w',
    '1W',
    '1D',
    '1h 30m',
    '1 hour',
    `${'9'.repeat(20)}d`,
    // a unit given twice: a typo more often than a sum
    '7d7d',
    '1h30m1h',
    '500ms500ms',
  ])('refuses %j', (text) => {
    expect(parseDuration(text)).toBeNull();
  });
});

describe('DURATION_SYNTAX', () => {
  it('every example it gives is accepted, and the spellings it rules out are refused', () => {
    for (const example of ['45s', '30m', '1h30m', '2d', '1d12h', '0', '7d']) {
      expect(DURATION_SYNTAX).toContain(example);
      expect(parseDuration(example), example).not.toBeNull();
    }
    expect(DURATION_SYNTAX).toContain('no w');
    expect(parseDuration('1w')).toBeNull();
    expect(DURATION_SYNTAX).toContain('1.5d');
    expect(parseDuration('1.5d')).toBeNull();
  });
});

describe('formatDuration', () => {
  it.each([
    [0, '0s'],
    [400, '0s'],
    [1500, '2s'],
    [45_000, '45s'],
    [5_400_000, '1h 30m'],
    [3_601_000, '1h 1s'],
    [90_061_000, '1d 1h'],
    [-5, '0s'],
  ])('%d ms is %j', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });
});
