import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError, OutOfRangeError } from '../errors.js';
import {
  CAPACITY_BLOCK_BYTES,
  capacityOf,
  FILESYSTEM_MINIMUM_BYTES,
  volumeSize,
  type SizeRequest,
} from './size.js';

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;

function outcome(request: SizeRequest): string {
  try {
    const { capacityBytes, lvSizeBytes } = volumeSize(request);
    return `${capacityBytes} ${lvSizeBytes}`;
  } catch (error) {
    return error instanceof OutOfRangeError ? 'OUT_OF_RANGE' : String(error);
  }
}

describe('volumeSize: examples', () => {
  it.each([
    // required, limit, extent, minimum → capacity, LV size
    ['1 GiB in 4 MiB extents', GiB, 0, 4 * MiB, 0, `${GiB} ${GiB + 4 * MiB}`],
    ['required == limit == 1 GiB', GiB, GiB, 4 * MiB, 0, `${GiB} ${GiB + 4 * MiB}`],
    ['2 GiB expansion', 2 * GiB, 0, 4 * MiB, 0, `${2 * GiB} ${2 * GiB + 4 * MiB}`],
    [
      'an odd whole-4 KiB size, required == limit',
      12_345 * 4096,
      12_345 * 4096,
      4 * MiB,
      0,
      `${12_345 * 4096} ${Math.ceil((12_345 * 4096 + MiB) / (4 * MiB)) * 4 * MiB}`,
    ],
    ['1 byte is one 4 KiB block', 1, 0, 4 * MiB, 0, `4096 ${4 * MiB}`],
    [
      'only a limit: the limit, rounded down to 4 KiB',
      0,
      10 * MiB + 100,
      4 * MiB,
      0,
      `${10 * MiB} ${12 * MiB}`,
    ],
    [
      'xfs minimum raises 16 MiB to 300 MiB',
      16 * MiB,
      0,
      4 * MiB,
      FILESYSTEM_MINIMUM_BYTES.xfs,
      `${300 * MiB} ${304 * MiB}`,
    ],
    [
      'xfs minimum with a 16 MiB limit',
      16 * MiB,
      16 * MiB,
      4 * MiB,
      FILESYSTEM_MINIMUM_BYTES.xfs,
      'OUT_OF_RANGE',
    ],
    ['required rounded to 4 KiB above the limit', 5000, 6000, 4 * MiB, 0, 'OUT_OF_RANGE'],
    ['limit below required', 2 * MiB, MiB, 4 * MiB, 0, 'OUT_OF_RANGE'],
    ['a lone limit below one block', 0, 4095, 4 * MiB, 0, 'OUT_OF_RANGE'],
    ['beyond 2^53 − 1 bytes', Number.MAX_SAFE_INTEGER - 4096, 0, 4 * MiB, 0, 'OUT_OF_RANGE'],
    ['1 KiB extents', 4096, 0, KiB, 0, `4096 ${MiB + 4096}`],
  ])('%s', (_label, requiredBytes, limitBytes, extentSizeBytes, minimumBytes, expected) => {
    expect(outcome({ requiredBytes, limitBytes, extentSizeBytes, minimumBytes })).toBe(expected);
  });

  it.each([
    ['neither required nor limit', { requiredBytes: 0, extentSizeBytes: 4 * MiB }],
    ['a negative size', { requiredBytes: -1, extentSizeBytes: 4 * MiB }],
    ['a fraction', { requiredBytes: 1.5, extentSizeBytes: 4 * MiB }],
    ['extent size 0', { requiredBytes: MiB, extentSizeBytes: 0 }],
    [
      'a data offset not a multiple of 4 KiB',
      { requiredBytes: MiB, extentSizeBytes: 4 * MiB, dataOffsetBytes: 512 },
    ],
  ])('InvalidArgumentError (not OUT_OF_RANGE) for %s', (_label, request) => {
    let error: unknown = null;
    try {
      volumeSize(request);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect(error).not.toBeInstanceOf(OutOfRangeError);
  });
});

const extents = fc.constantFrom(KiB, 4 * KiB, MiB, 4 * MiB, 32 * MiB, GiB);
const bytes = fc.integer({ min: 0, max: 2 ** 44 });

describe('volumeSize: properties', () => {
  it('capacity: whole 4 KiB blocks, ≥ required and ≥ minimum, ≤ limit, and the least such; LV: whole extents holding offset + capacity, less than one extent of slack', () => {
    fc.assert(
      fc.property(bytes, bytes, bytes, extents, (required, limit, minimum, extent) => {
        fc.pre(required > 0 || limit > 0);
        const request = {
          requiredBytes: required,
          limitBytes: limit,
          extentSizeBytes: extent,
          minimumBytes: minimum,
        };
        let size;
        try {
          size = volumeSize(request);
        } catch (error) {
          expect(error).toBeInstanceOf(OutOfRangeError);
          // refused only when no whole-block capacity ≥ max(required, minimum) fits the limit
          const least = Math.max(
            Math.ceil(Math.max(required, minimum, 1) / 4096) * 4096,
            required === 0 ? 0 : 4096,
          );
          expect(limit !== 0 && (limit < required || least > limit)).toBe(true);
          return;
        }
        const { capacityBytes, lvSizeBytes } = size;
        expect(capacityBytes % CAPACITY_BLOCK_BYTES).toBe(0);
        expect(capacityBytes).toBeGreaterThanOrEqual(Math.max(required, minimum, 1));
        if (limit !== 0) expect(capacityBytes).toBeLessThanOrEqual(limit);
        if (required !== 0) {
          // exactly what was asked for, unless the filesystem needs more
          expect(capacityBytes).toBe(Math.ceil(Math.max(required, minimum) / 4096) * 4096);
        } else {
          expect(capacityBytes).toBe(
            Math.max(Math.floor(limit / 4096) * 4096, Math.ceil(minimum / 4096) * 4096),
          );
        }
        expect(lvSizeBytes % extent).toBe(0);
        expect(lvSizeBytes - MiB).toBeGreaterThanOrEqual(capacityBytes);
        expect(lvSizeBytes - MiB - capacityBytes).toBeLessThan(extent);
      }),
      { numRuns: 2000 },
    );
  });

  it('required == limit works for every whole-4 KiB size', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2 ** 30 }), extents, (blocks, extent) => {
        const bytes = blocks * 4096;
        const size = volumeSize({
          requiredBytes: bytes,
          limitBytes: bytes,
          extentSizeBytes: extent,
        });
        expect(size.capacityBytes).toBe(bytes);
      }),
    );
  });

  it('never throws anything but InvalidArgumentError or OutOfRangeError', () => {
    fc.assert(
      fc.property(fc.double(), fc.double(), fc.double(), fc.double(), (r, l, m, e) => {
        try {
          volumeSize({ requiredBytes: r, limitBytes: l, minimumBytes: m, extentSizeBytes: e });
        } catch (error) {
          expect(error).toBeInstanceOf(InvalidArgumentError);
        }
      }),
    );
  });
});

describe('capacityOf', () => {
  const header = (version: number, requestedBytes: number) => ({
    version,
    dataOffsetBytes: MiB,
    requestedBytes,
  });

  it('v1: the whole LV after the data offset, whatever was requested (its data device always was)', () => {
    expect(capacityOf(header(1, GiB), GiB + 4 * MiB)).toBe(GiB + 3 * MiB);
  });

  it('v2: exactly the recorded capacity, the extent slack left out', () => {
    expect(capacityOf(header(2, GiB), GiB + 4 * MiB)).toBe(GiB);
    expect(capacityOf(header(2, GiB + 3 * MiB), GiB + 4 * MiB)).toBe(GiB + 3 * MiB);
  });

  it('null when the header does not fit the LV', () => {
    expect(capacityOf(header(2, GiB + 3 * MiB + 4096), GiB + 4 * MiB)).toBeNull();
    expect(capacityOf(header(2, 0), GiB)).toBeNull();
    expect(capacityOf(header(1, GiB), MiB)).toBeNull();
  });
});
