import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../errors.js';
import { strongestWipe, unmapZeroArgv, wipeRanges, zeroArgv } from './wipe.js';

describe('wipeRanges (DESIGN.md §5 "Wipe": the header last)', () => {
  it('an LV of one 4 MiB extent: the 4 MiB past the header first, then the header 4 KiB', () => {
    expect(wipeRanges(4 * 1024 * 1024)).toEqual([
      { offset: 4096, length: 4 * 1024 * 1024 - 4096 },
      { offset: 0, length: 4096 },
    ]);
  });

  it('an LV of exactly 4 KiB is its header range alone', () => {
    expect(wipeRanges(4096)).toEqual([{ offset: 0, length: 4096 }]);
  });

  it.each([0, -4096, 512, 4097, 1.5, Number.NaN, 2 ** 60])(
    'refuses %s bytes, which is no LV size',
    (size) => {
      expect(() => wipeRanges(size)).toThrow(InvalidArgumentError);
    },
  );

  it('the argv of each command names the range and the device', () => {
    const range = { offset: 4096, length: 8192 };
    expect(zeroArgv('/dev/mapper/vg-lv', range)).toEqual([
      'blkdiscard',
      '--zeroout',
      '--offset',
      '4096',
      '--length',
      '8192',
      '/dev/mapper/vg-lv',
    ]);
    expect(unmapZeroArgv('/dev/mapper/vg-lv', range)).toEqual([
      'fallocate',
      '--punch-hole',
      '--offset',
      '4096',
      '--length',
      '8192',
      '/dev/mapper/vg-lv',
    ]);
  });
});

describe('strongestWipe', () => {
  it('orders none < discard < zero; nothing is none', () => {
    expect(strongestWipe([])).toBe('none');
    expect(strongestWipe(['none', 'discard'])).toBe('discard');
    expect(strongestWipe(['zero', 'discard', 'none'])).toBe('zero');
  });
});
