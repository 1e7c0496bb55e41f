import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from './errors.js';
import {
  controlCharacterIn,
  DEFAULT_NAMING,
  fromTagFor,
  lvDmName,
  MAX_NAME_BYTES,
  parseFromTag,
  parseLvName,
  parseSnapshotLvName,
  parseSnapshotTags,
  requireNoControlCharacters,
  requireVgNameFitsDm,
  snapshotIdForName,
  snapshotLvNameFor,
  snapshotTagsFor,
  thinPoolNameProblem,
  validateVolumeName,
  vgNameProblem,
  volumeIdForName,
} from './naming.js';

describe('control characters', () => {
  it.each([
    ['pvc-1', null],
    ['ünïcödé name', null],
    ['a\nb', 'U+000A'],
    ['tab\there', 'U+0009'],
    ['nul\0', 'U+0000'],
    ['esc\u001b[31m', 'U+001B'],
    ['del\u007f', 'U+007F'],
    ['c1\u0085', 'U+0085'],
  ])('%j → %s', (text, found) => {
    expect(controlCharacterIn(text)).toBe(found);
  });

  it('refuses with InvalidArgumentError naming the role and the character', () => {
    expect(() => {
      requireNoControlCharacters('a\nb', 'volume name');
    }).toThrow(
      new InvalidArgumentError(
        'volume name must not contain control characters (newline, tab, …; found U+000A)',
      ),
    );
    expect(() => {
      requireNoControlCharacters('pvc-1', 'volume name');
    }).not.toThrow();
  });
});

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

describe('volume and snapshot names: 1–128 bytes of UTF-8 (CSI "Size Limits", DESIGN.md §3)', () => {
  it('counts bytes, not characters: 128 bytes pass, 129 are refused with the limit named', () => {
    expect(MAX_NAME_BYTES).toBe(128);
    expect(volumeIdForName('é'.repeat(64))).toMatch(/^[0-9a-f]{32}$/);
    expect(() => volumeIdForName(`${'é'.repeat(64)}x`)).toThrow(
      new InvalidArgumentError(
        'volume name must be 1–128 bytes of UTF-8, the CSI limit on a string field, got 129',
      ),
    );
    expect(() => {
      validateVolumeName('n'.repeat(129), 'snapshot name');
    }).toThrow(
      'snapshot name must be 1–128 bytes of UTF-8, the CSI limit on a string field, got 129',
    );
  });

  it('takes a wider limit when asked (the header field: 256 bytes), with no CSI wording', () => {
    expect(() => {
      validateVolumeName('n'.repeat(256), 'header name', 256);
    }).not.toThrow();
    expect(() => {
      validateVolumeName('n'.repeat(257), 'header name', 256);
    }).toThrow(new InvalidArgumentError('header name must be 1–256 bytes of UTF-8, got 257'));
  });
});

describe('snapshot names and tags (docs/DESIGN.md §3)', () => {
  const id = 'ab'.repeat(16);
  const a = (n: number): string => 'a'.repeat(n);

  it('keeps snapshot LV names apart from volume LV names', () => {
    expect(snapshotLvNameFor(id)).toBe(`lvstamp_snap_${id}`);
    expect(parseSnapshotLvName(`lvstamp_snap_${id}`)).toBe(id);
    expect(parseSnapshotLvName(`lvstamp_${id}`)).toBeNull();
    expect(parseSnapshotLvName(`lvstamp_snap_${id}x`)).toBeNull();
    expect(parseSnapshotLvName(`lvstamp_snap_${id.toUpperCase()}`)).toBeNull();
    // a volume LV parser never reads a snapshot as a volume
    expect(parseLvName(`lvstamp_snap_${id}`)).toBeNull();
  });

  it('derives a snapshot ID from its name like a volume ID', () => {
    expect(snapshotIdForName('snap-1')).toBe(volumeIdForName('snap-1'));
    expect(() => snapshotIdForName('')).toThrow(InvalidArgumentError);
    expect(() => snapshotIdForName('s'.repeat(129))).toThrow(
      'snapshot name must be 1–128 bytes of UTF-8, the CSI limit on a string field, got 129',
    );
  });

  it('writes and reads the source, size and creation tags', () => {
    const tags = snapshotTagsFor({
      sourceVolumeId: id,
      sizeBytes: 1073741824,
      createdMs: 1764620000123,
    });
    expect(tags).toEqual([
      `lvstamp.source=${id}`,
      'lvstamp.size=1073741824',
      'lvstamp.created=1764620000123',
    ]);
    expect(parseSnapshotTags(['lvstamp', 'lvstamp.owner=' + '0'.repeat(32), ...tags])).toEqual({
      sourceVolumeId: id,
      sizeBytes: 1073741824,
      createdMs: 1764620000123,
    });
  });

  it('reads no snapshot tags when one is missing, repeated or malformed', () => {
    const good = [`lvstamp.source=${id}`, 'lvstamp.size=1', 'lvstamp.created=2'];
    expect(parseSnapshotTags(good.slice(1))).toBeNull();
    expect(parseSnapshotTags([...good, 'lvstamp.size=3'])).toBeNull();
    expect(
      parseSnapshotTags([`lvstamp.source=${id}`, 'lvstamp.size=01', 'lvstamp.created=2']),
    ).toBeNull();
    expect(
      parseSnapshotTags([`lvstamp.source=${id}`, 'lvstamp.size=-1', 'lvstamp.created=2']),
    ).toBeNull();
    expect(
      parseSnapshotTags(['lvstamp.source=xyz', 'lvstamp.size=1', 'lvstamp.created=2']),
    ).toBeNull();
    expect(
      parseSnapshotTags([
        `lvstamp.source=${id}`,
        'lvstamp.size=99999999999999999999',
        'lvstamp.created=2',
      ]),
    ).toBeNull();
  });

  it('writes and reads the from tag of a restored or cloned volume', () => {
    expect(fromTagFor({ kind: 'snapshot', id })).toBe(`lvstamp.from=snapshot.${id}`);
    expect(parseFromTag(['lvstamp', fromTagFor({ kind: 'volume', id })])).toEqual({
      kind: 'volume',
      id,
    });
    expect(parseFromTag(['lvstamp'])).toBeNull();
    expect(parseFromTag([`lvstamp.from=disk.${id}`])).toBeNull();
    expect(
      parseFromTag([fromTagFor({ kind: 'volume', id }), fromTagFor({ kind: 'snapshot', id })]),
    ).toBeNull();
  });

  it('leaves one byte less of VG name for a thin class, whose snapshots have the longer prefix', () => {
    expect(vgNameProblem(a(80), DEFAULT_NAMING, 'thin')).toContain('at most 79 bytes');
    expect(vgNameProblem(a(79), DEFAULT_NAMING, 'thin')).toBeNull();
  });
});
