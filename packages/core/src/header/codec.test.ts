import { readFileSync } from 'node:fs';
import * as zlib from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../errors.js';
import { volumeIdForName } from '../naming.js';
import { DATA_OFFSET_BYTES, HEADER_MAGIC, HEADER_SIZE } from './constants.js';
import { decodeHeader, describeDecode, encodeHeader } from './codec.js';
import { crc32, crc32Table } from './crc32.js';
import type { DecodeResult, HeaderFields } from './types.js';

const fixture = (name: string): string =>
  readFileSync(new URL(`../../fixtures/header/${name}`, import.meta.url), 'utf8');

const golden = {
  fields: JSON.parse(fixture('golden-v1.json')) as HeaderFields,
  bytes: Buffer.from(
    fixture('golden-v1.hex')
      .split('\n')
      .filter((line) => !line.startsWith('#'))
      .join(''),
    'hex',
  ),
};

const sample: HeaderFields = {
  volumeId: volumeIdForName('pvc-sample'),
  ownerId: '0'.repeat(32),
  createdAtMs: 1_700_000_000_000,
  dataOffsetBytes: DATA_OFFSET_BYTES,
  requestedBytes: 10 * 1024 * 1024,
  name: 'pvc-sample',
};

/** Re-seals bytes 0–507 with a correct checksum, so that later checks are reached. */
function reseal(buf: Buffer): Buffer {
  buf.writeUInt32LE(zlib.crc32(buf.subarray(0, 508)), 508);
  return buf;
}

function reason(result: DecodeResult): string {
  return result.status === 'ok' ? '' : result.reason;
}

const hexId = fc
  .uint8Array({ minLength: 16, maxLength: 16 })
  .map((b) => Buffer.from(b).toString('hex'));
const volumeName = fc
  .string({ unit: 'binary', minLength: 1, maxLength: 256 })
  .filter((s) => !s.includes('\0'))
  .filter((s) => Buffer.byteLength(s, 'utf8') <= 256)
  .filter((s) => Buffer.from(s, 'utf8').toString('utf8') === s);
const headerFields: fc.Arbitrary<HeaderFields> = fc.record({
  volumeId: hexId,
  ownerId: hexId,
  createdAtMs: fc.maxSafeNat(),
  dataOffsetBytes: fc.integer({ min: 1, max: 2 ** 40 }).map((n) => n * 4096),
  requestedBytes: fc.maxSafeNat(),
  name: volumeName,
});

describe('crc32', () => {
  it('matches the IEEE check value for "123456789"', () => {
    expect(crc32Table(Buffer.from('123456789'))).toBe(0xcbf43926);
    expect(crc32(Buffer.from('123456789'))).toBe(0xcbf43926);
    expect(crc32Table(new Uint8Array(0))).toBe(0);
  });

  it('table fallback and zlib.crc32 agree on random input', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 2048 }), (data) => {
        expect(crc32Table(data)).toBe(zlib.crc32(data));
      }),
      { numRuns: 500 },
    );
  });
});

describe('encodeHeader', () => {
  it('writes the golden bytes of DESIGN.md §4 exactly', () => {
    expect(golden.bytes.length).toBe(HEADER_SIZE);
    expect(encodeHeader(golden.fields, 1).toString('hex')).toBe(golden.bytes.toString('hex'));
  });

  it('writes version 2 by default, the v1 layout with only the version changed', () => {
    const v2 = encodeHeader(golden.fields);
    const v1 = Buffer.from(golden.bytes);
    expect(v2.readUInt16LE(8)).toBe(2);
    expect(v2.subarray(10, 508).equals(v1.subarray(10, 508))).toBe(true);
    expect(v2.readUInt32LE(508)).toBe(zlib.crc32(v2.subarray(0, 508)));
    expect(decodeHeader(v2)).toEqual({ status: 'ok', version: 2, header: golden.fields });
  });

  it('refuses a version other than 1 or 2', () => {
    expect(() => encodeHeader(golden.fields, 3 as 2)).toThrow(InvalidArgumentError);
  });

  it('lays out every field at its offset, little-endian', () => {
    const b = encodeHeader(sample, 1);
    expect(b.length).toBe(512);
    expect(b.subarray(0, 8).toString('latin1')).toBe('LVSTAMP\0');
    expect(Buffer.from(HEADER_MAGIC).toString('latin1')).toBe('LVSTAMP\0');
    expect([b[8], b[9]]).toEqual([1, 0]);
    expect([b[10], b[11]]).toEqual([0x00, 0x02]);
    expect(b.readUInt32LE(12)).toBe(0);
    expect(b.subarray(16, 32).toString('hex')).toBe(sample.volumeId);
    expect(b.subarray(32, 48).toString('hex')).toBe(sample.ownerId);
    expect(b.readBigUInt64LE(48)).toBe(1_700_000_000_000n);
    expect(b.readBigUInt64LE(56)).toBe(1_048_576n);
    expect(b.readBigUInt64LE(64)).toBe(10_485_760n);
    expect(b.readUInt16LE(72)).toBe(10);
    expect(b.subarray(74, 84).toString('utf8')).toBe('pvc-sample');
    expect(b.subarray(84, 508).every((x) => x === 0)).toBe(true);
    expect(b.readUInt32LE(508)).toBe(zlib.crc32(b.subarray(0, 508)));
  });

  it('takes a 256-byte name that fills the field', () => {
    const name = 'é'.repeat(128);
    const b = encodeHeader({ ...sample, name });
    expect(b.readUInt16LE(72)).toBe(256);
    expect(decodeHeader(b)).toEqual({ status: 'ok', version: 2, header: { ...sample, name } });
  });

  it.each<[string, Partial<HeaderFields>]>([
    ['uppercase volume ID', { volumeId: 'A'.repeat(32) }],
    ['short volume ID', { volumeId: 'a'.repeat(31) }],
    ['bad owner ID', { ownerId: 'x'.repeat(32) }],
    ['empty name', { name: '' }],
    ['257-byte name', { name: 'a'.repeat(257) }],
    ['name with NUL', { name: 'a\0b' }],
    ['lone surrogate in name', { name: 'a\ud800' }],
    ['negative createdAt', { createdAtMs: -1 }],
    ['fractional requestedBytes', { requestedBytes: 1.5 }],
    ['requestedBytes above 2^53', { requestedBytes: 2 ** 53 }],
    ['zero data offset', { dataOffsetBytes: 0 }],
    ['unaligned data offset', { dataOffsetBytes: 4096 + 512 }],
    ['NaN createdAt', { createdAtMs: Number.NaN }],
  ])('rejects %s with InvalidArgumentError', (_label, patch) => {
    expect(() => encodeHeader({ ...sample, ...patch })).toThrow(InvalidArgumentError);
  });
});

describe('decodeHeader', () => {
  it('decodes the golden bytes to the golden fields', () => {
    expect(decodeHeader(golden.bytes)).toEqual({ status: 'ok', version: 1, header: golden.fields });
  });

  it('reads only the first 512 bytes of a whole 4096-byte block', () => {
    const block = Buffer.alloc(4096, 0xff);
    golden.bytes.copy(block, 0);
    expect(decodeHeader(block)).toEqual({ status: 'ok', version: 1, header: golden.fields });
  });

  it('reads a header inside a larger ArrayBuffer at a non-zero byteOffset', () => {
    const backing = new Uint8Array(1024);
    backing.set(golden.bytes, 100);
    expect(decodeHeader(backing.subarray(100, 612)).status).toBe('ok');
  });

  it.each<[string, Uint8Array, string]>([
    ['empty input', new Uint8Array(0), 'only 0 bytes, too short to hold the lvstamp magic'],
    ['all zeros', new Uint8Array(512), 'no lvstamp magic at byte 0'],
    [
      'an ext4 image start',
      Buffer.from('53ef0100', 'hex'),
      'only 4 bytes, too short to hold the lvstamp magic',
    ],
    ['magic without its NUL', Buffer.from('LVSTAMPX'), 'no lvstamp magic at byte 0'],
  ])('says not-stamped for %s', (_label, input, why) => {
    expect(decodeHeader(input)).toEqual({ status: 'not-stamped', reason: why });
  });

  it('says unsupported for version 3 whatever follows', () => {
    const b = Buffer.alloc(16);
    b.set(HEADER_MAGIC, 0);
    b.writeUInt16LE(3, 8);
    expect(decodeHeader(b)).toEqual({
      status: 'unsupported',
      version: 3,
      reason: 'header version 3 is newer than the supported versions 1 and 2',
    });
    const full = Buffer.from(golden.bytes);
    full.writeUInt16LE(0xffff, 8);
    expect(decodeHeader(full)).toMatchObject({ status: 'unsupported', version: 65535 });
  });

  const corruptCases: [string, (b: Buffer) => Buffer, string][] = [
    ['version 0', (b) => reseal((b.writeUInt16LE(0, 8), b)), 'version is 0'],
    ['magic only', (b) => b.subarray(0, 9), 'truncated after the magic: only 9 bytes'],
    ['511 bytes', (b) => b.subarray(0, 511), 'truncated: 511 of 512 bytes'],
    [
      'headerSize 4096',
      (b) => reseal((b.writeUInt16LE(4096, 10), b)),
      'headerSize is 4096, expected 512',
    ],
    [
      'a wrong checksum',
      (b) => (b.writeUInt32LE(0xdeadbeef, 508), b),
      'checksum mismatch: stored 0xdeadbeef, computed 0xf223c74a',
    ],
    [
      'flags set',
      (b) => reseal((b.writeUInt32LE(1, 12), b)),
      'flags are 0x00000001, expected 0 (reserved)',
    ],
    ['nameLength 0', (b) => reseal((b.writeUInt16LE(0, 72), b)), 'nameLength is 0, expected 1–256'],
    [
      'nameLength 257',
      (b) => reseal((b.writeUInt16LE(257, 72), b)),
      'nameLength is 257, expected 1–256',
    ],
    [
      'huge nameLength',
      (b) => reseal((b.writeUInt16LE(65535, 72), b)),
      'nameLength is 65535, expected 1–256',
    ],
    [
      'a name shorter than its bytes',
      (b) => reseal((b.writeUInt16LE(5, 72), b)),
      'non-zero byte at offset 79 in the name padding',
    ],
    [
      'invalid UTF-8 in the name',
      (b) => reseal((b.writeUInt16LE(21, 72), b.writeUInt8(0, 95), b)),
      'the name is not valid UTF-8',
    ],
    [
      'a NUL inside the name',
      (b) => reseal((b.writeUInt16LE(23, 72), b)),
      'the name contains a NUL byte',
    ],
    [
      'a reserved byte',
      (b) => reseal((b.writeUInt8(7, 400), b)),
      'non-zero reserved byte at offset 400',
    ],
    [
      'the last reserved byte',
      (b) => reseal((b.writeUInt8(1, 507), b)),
      'non-zero reserved byte at offset 507',
    ],
    [
      'createdAt above 2^53',
      (b) => reseal((b.writeBigUInt64LE(2n ** 60n, 48), b)),
      'createdAt exceeds 2^53',
    ],
    [
      'requestedBytes above 2^53',
      (b) => reseal((b.writeBigUInt64LE(2n ** 63n, 64), b)),
      'requestedBytes exceeds 2^53',
    ],
    [
      'dataOffset 0',
      (b) => reseal((b.writeBigUInt64LE(0n, 56), b)),
      'dataOffset 0 is not a positive multiple of 4096',
    ],
    [
      'dataOffset 1000',
      (b) => reseal((b.writeBigUInt64LE(1000n, 56), b)),
      'dataOffset 1000 is not a positive multiple of 4096',
    ],
  ];
  it.each(corruptCases)('says corrupt for %s', (_label, mutate, why) => {
    expect(decodeHeader(mutate(Buffer.from(golden.bytes)))).toEqual({
      status: 'corrupt',
      reason: why,
    });
  });

  it('round-trips any valid fields (property)', () => {
    fc.assert(
      fc.property(headerFields, fc.constantFrom(1 as const, 2 as const), (fields, version) => {
        expect(decodeHeader(encodeHeader(fields, version))).toEqual({
          status: 'ok',
          version,
          header: fields,
        });
      }),
      { numRuns: 1000 },
    );
  });

  it('detects any single flipped bit in bytes 0–511 (property)', () => {
    fc.assert(
      fc.property(
        headerFields,
        fc.integer({ min: 0, max: 511 }),
        fc.integer({ min: 0, max: 7 }),
        (fields, at, bit) => {
          const b = encodeHeader(fields);
          b[at] = (b[at] ?? 0) ^ (1 << bit);
          expect(decodeHeader(b).status).not.toBe('ok');
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('detects any single changed byte in bytes 0–511 (property)', () => {
    fc.assert(
      fc.property(
        headerFields,
        fc.integer({ min: 0, max: 511 }),
        fc.integer({ min: 1, max: 255 }),
        (fields, at, xor) => {
          const b = encodeHeader(fields);
          b[at] = (b[at] ?? 0) ^ xor;
          const result = decodeHeader(b);
          expect(result.status).not.toBe('ok');
          expect(reason(result)).not.toBe('');
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('detects every single flipped bit of the golden header (exhaustive)', () => {
    for (let at = 0; at < 512; at++) {
      for (let bit = 0; bit < 8; bit++) {
        const b = Buffer.from(golden.bytes);
        b[at] = (b[at] ?? 0) ^ (1 << bit);
        expect(decodeHeader(b).status, `byte ${at} bit ${bit}`).not.toBe('ok');
      }
    }
  });

  it('never throws on random input, with or without the magic (property)', () => {
    const withMagic = fc.uint8Array({ maxLength: 700 }).map((tail) => {
      const b = new Uint8Array(8 + tail.length);
      b.set(HEADER_MAGIC, 0);
      b.set(tail, 8);
      return b;
    });
    const sealed = fc.uint8Array({ minLength: 512, maxLength: 512 }).map((raw) => {
      const b = Buffer.from(raw);
      b.set(HEADER_MAGIC, 0);
      b.writeUInt16LE(1, 8);
      b.writeUInt16LE(512, 10);
      return reseal(b);
    });
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 1024 }), withMagic, sealed), (input) => {
        const result = decodeHeader(input);
        expect(['ok', 'not-stamped', 'unsupported', 'corrupt']).toContain(result.status);
        if (result.status !== 'ok') expect(result.reason.length).toBeGreaterThan(0);
      }),
      { numRuns: 3000 },
    );
  });
});

describe('describeDecode', () => {
  it('explains a valid header field by field', () => {
    expect(describeDecode(decodeHeader(golden.bytes))).toBe(
      [
        'lvstamp header v1 (valid checksum)',
        '  name:            "pvc-4f0c7a2e-golden-ü"',
        '  volume ID:       fc35bf5890de5585d1d325d588b2ca1c',
        '  owner ID:        0123456789abcdef0123456789abcdef',
        '  created:         2026-01-01T00:00:00.123Z (1767225600123 ms)',
        '  data offset:     1048576 bytes',
        '  requested bytes: 1073741824',
      ].join('\n'),
    );
  });

  it('explains each non-ok result with what lvstamp will do', () => {
    expect(describeDecode({ status: 'not-stamped', reason: 'no lvstamp magic at byte 0' })).toBe(
      'not stamped by lvstamp: no lvstamp magic at byte 0; lvstamp never touches such a device',
    );
    expect(describeDecode({ status: 'unsupported', version: 3, reason: 'newer' })).toBe(
      'lvstamp header of unsupported version 3: newer; lvstamp never modifies or deletes it',
    );
    expect(describeDecode({ status: 'corrupt', reason: 'version is 0' })).toBe(
      'corrupt lvstamp header: version is 0; lvstamp never deletes it automatically',
    );
  });

  it('says "out of range" for a creation time a Date cannot hold', () => {
    const text = describeDecode({
      status: 'ok',
      version: 1,
      header: { ...sample, createdAtMs: 2 ** 53 - 1 },
    });
    expect(text).toContain('created:         out of range (9007199254740991 ms)');
  });
});
