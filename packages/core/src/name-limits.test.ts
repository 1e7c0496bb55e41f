import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from './errors.js';
import { requireVgNameFitsDm, thinPoolNameProblem, vgNameProblem } from './name-limits.js';
import { DEFAULT_NAMING, lvDmName } from './naming.js';

describe('thinPoolNameProblem', () => {
  it('accepts an ordinary LV name', () => {
    expect(thinPoolNameProblem('pool0', 'vg0')).toBeNull();
    expect(thinPoolNameProblem('thin.pool+1_a-b', 'vg0')).toBeNull();
  });

  it.each([
    [
      'lvstamp_pool',
      'starts with lvstamp\'s LV name prefix "lvstamp_": a thin pool is never a volume',
    ],
    ['lvstamp_new_x', 'starts with lvstamp\'s LV name prefix "lvstamp_"'],
    ['-pool', 'is not a valid logical volume name'],
    ['..', 'is not a valid logical volume name'],
    ['po ol', 'is not a valid logical volume name'],
    ['', 'is not a valid logical volume name'],
    ['pool_tmeta', 'contains "_tmeta", which lvm reserves'],
    [
      'p'.repeat(124),
      'is too long: lvm2 refuses an LV when VG name + LV name + 3 reaches 128 bytes',
    ],
  ])('refuses %j', (name, message) => {
    expect(thinPoolNameProblem(name, 'vg0')).toContain(message);
  });
});

describe('volume group names and the device-mapper name limit', () => {
  const a = (n: number): string => 'a'.repeat(n);

  it('builds the dm name as lvm does: hyphens doubled, VG and LV joined by one hyphen', () => {
    expect(lvDmName('vg-a', 'lv')).toBe('vg--a-lv');
    expect(lvDmName('vg', 'lv-x-y')).toBe('vg-lv--x--y');
  });

  // measured in the test VM (lvm2 2.03.16): with "lvstamp_new_" + 32 hex digits (44 bytes),
  // an 80-byte VG name works; 81 bytes fails lvcreate ("LV name ... length 128 is not
  // supported"); "a"×74 + "-b-c-d" (80 bytes, 83 with doubled hyphens) fails activation
  // ("Name ... too long")
  it('accepts a VG name of 80 bytes and refuses 81 (lvm2 NAME_LEN)', () => {
    expect(vgNameProblem(a(80))).toBeNull();
    expect(vgNameProblem(a(81))).toBe(
      `volume group name "${a(81)}" (81 bytes) is too long for lvstamp's LV names (44 bytes): ` +
        'lvm2 refuses an LV when VG name + LV name + 3 reaches 128 bytes (NAME_LEN); here 128; ' +
        'use at most 80 bytes, and at most 82 counting each "-" twice',
    );
  });

  it('counts each hyphen of the VG name twice for the device-mapper name (DM_NAME_LEN)', () => {
    expect(lvDmName(`${a(76)}-b-c`, `lvstamp_new_${a(32)}`)).toHaveLength(127);
    expect(vgNameProblem(`${a(76)}-b-c`)).toBeNull(); // 80 bytes, 82 in the dm name
    expect(vgNameProblem(`${a(74)}-b-c-d`)).toBe(
      `volume group name "${a(74)}-b-c-d" (80 bytes) is too long for lvstamp's LV names (44 bytes): ` +
        'the device-mapper name of its LVs (VG and LV joined by "-", every "-" doubled) would be ' +
        "128 bytes, above the kernel's limit of 127 (DM_NAME_LEN 128 with the NUL); " +
        'use at most 80 bytes, and at most 82 counting each "-" twice',
    );
  });

  it('measures a thin class with the snapshot name too (45 bytes): one byte less', () => {
    expect(vgNameProblem(a(80), DEFAULT_NAMING, 'thin')).toContain(
      'too long for lvstamp\'s LV names (45 bytes): lvm2 refuses an LV when VG name + LV name + 3 reaches 128 bytes (NAME_LEN); here 128; use at most 79 bytes, and at most 81 counting each "-" twice',
    );
    expect(vgNameProblem(a(79), DEFAULT_NAMING, 'thin')).toBeNull();
    expect(vgNameProblem(`${a(75)}-b-c`, DEFAULT_NAMING, 'thin')).toBeNull(); // 81 in the dm name
    expect(vgNameProblem(`${a(73)}-b-c-d`, DEFAULT_NAMING, 'thin')).toContain(
      "above the kernel's limit of 127",
    );
  });

  it('measures with the longer of the configured prefixes', () => {
    const naming = { ...DEFAULT_NAMING, lvPrefix: 'a-very-long-prefix-of-lvstamp_' };
    // LV name 62 bytes (67 with doubled hyphens): 127 − 3 − 62 = 62; 126 − 67 = 59 escaped
    expect(vgNameProblem(a(59), naming)).toBeNull();
    expect(vgNameProblem(a(60), naming)).toContain('at most 62 bytes, and at most 59');
  });

  it('requireVgNameFitsDm throws InvalidArgumentError', () => {
    expect(() => {
      requireVgNameFitsDm(a(81));
    }).toThrow(InvalidArgumentError);
    expect(() => {
      requireVgNameFitsDm('lvstamp-demo');
    }).not.toThrow();
  });
});
