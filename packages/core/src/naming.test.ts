import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from './errors.js';
import { vgNameProblem } from './name-limits.js';
import {
  DEFAULT_NAMING,
  fromTagFor,
  MAX_NAME_BYTES,
  parseFromTag,
  parseLvName,
  parseSnapshotLvName,
  parseSnapshotTags,
  snapshotIdForName,
  snapshotLvNameFor,
  snapshotTagsFor,
  validateVolumeName,
  volumeIdForName,
} from './naming.js';

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
