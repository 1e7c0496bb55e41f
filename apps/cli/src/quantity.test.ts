import { InvalidArgumentError } from '@lvstamp/core';
import { describe, expect, it } from 'vitest';
import { formatBytes, parseDuration, parseSize } from './quantity.js';

describe('parseSize (Kubernetes quantities)', () => {
  it.each([
    ['512Mi', 512 * 2 ** 20],
    ['1Gi', 2 ** 30],
    ['1G', 1e9],
    ['1k', 1000],
    ['1Ki', 1024],
    ['4096', 4096],
    ['1.5Gi', 1.5 * 2 ** 30],
    ['1e9', 1e9],
    ['1P', 1e15],
    ['0.5Ki', 512],
    ['2000m', 2],
    ['+2Mi', 2 * 2 ** 20],
    [' 8Mi ', 8 * 2 ** 20],
  ])('%s is %d bytes', (text, bytes) => {
    expect(parseSize(text)).toBe(bytes);
  });

  it.each([
    '',
    'abc',
    '1GB',
    '1gi',
    '1 Gi',
    '-1Gi',
    '0',
    '0Mi',
    '1,5Gi',
    '<21.50g',
    '1073741824B',
    '16Ei',
    '1E',
    '1e99',
  ])('rejects %j', (text) => {
    expect(() => parseSize(text)).toThrow(InvalidArgumentError);
  });
});

describe('parseDuration (app-kit durations as a CLI argument)', () => {
  it('gives milliseconds', () => {
    expect(parseDuration('1h30m')).toBe(5_400_000);
  });

  it.each([
    ['7d', 7 * 86_400_000],
    ['2d', 2 * 86_400_000],
    ['1d12h', 36 * 3_600_000],
    ['0', 0],
  ])('accepts %j (the forms the help and README use)', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(['1.5h', '1.5d', '1w', 'a week', '7d7d'])(
    'refuses %j as bad input, naming the grammar (units up to d, each once, no w, no fractions)',
    (text) => {
      expect(() => parseDuration(text)).toThrow(
        new InvalidArgumentError(
          `invalid duration "${text}": use a whole number with a unit ms, s, m, h or d (24 h), or several run together, each unit once: 45s, 30m, 1h30m, 2d, 1d12h, or 0; no w (write 7d) and no fractions (write 1d12h, not 1.5d)`,
        ),
      );
    },
  );
});

describe('formatting', () => {
  it('formats bytes in binary units', () => {
    expect(formatBytes(204 * 2 ** 20)).toBe('204 MiB');
    expect(formatBytes(1.5 * 2 ** 30)).toBe('1.5 GiB');
    expect(formatBytes(512)).toBe('512 B');
  });
});
