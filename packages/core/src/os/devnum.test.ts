import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FailedPreconditionError, NotFoundError } from '../errors.js';
import {
  blockDeviceNumber,
  formatDeviceNumber,
  requireBlockDeviceNumber,
  sameDevice,
  splitDeviceNumber,
} from './devnum.js';

/** glibc's makedev(3), written out independently of splitDeviceNumber. */
function makedev(major: number, minor: number): bigint {
  const M = BigInt(major);
  const m = BigInt(minor);
  return (
    ((M & 0xfffff000n) << 32n) | ((M & 0xfffn) << 8n) | ((m & 0xffffff00n) << 12n) | (m & 0xffn)
  );
}

describe('splitDeviceNumber', () => {
  it('splits small and large device numbers like glibc', () => {
    expect(splitDeviceNumber(0xfe10n)).toEqual({ major: 254, minor: 16 });
    expect(splitDeviceNumber(makedev(253, 3))).toEqual({ major: 253, minor: 3 });
    expect(splitDeviceNumber(makedev(259, 1048575))).toEqual({ major: 259, minor: 1048575 });
    expect(splitDeviceNumber(makedev(4095, 256))).toEqual({ major: 4095, minor: 256 });
  });

  it('inverts makedev for every 32-bit major and minor (property)', () => {
    fc.assert(
      fc.property(fc.nat({ max: 0xffffffff }), fc.nat({ max: 0xffffffff }), (major, minor) => {
        expect(splitDeviceNumber(makedev(major, minor))).toEqual({ major, minor });
      }),
    );
  });
});

describe('sameDevice / formatDeviceNumber', () => {
  it('compares major and minor', () => {
    expect(sameDevice({ major: 253, minor: 3 }, { major: 253, minor: 3 })).toBe(true);
    expect(sameDevice({ major: 253, minor: 3 }, { major: 3, minor: 253 })).toBe(false);
    expect(formatDeviceNumber({ major: 253, minor: 3 })).toBe('253:3');
  });
});

describe('blockDeviceNumber', () => {
  it('is null for a missing path and refuses what is not a block device', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'lvstamp-devnum-'));
    try {
      const file = join(dir, 'image');
      await writeFile(file, 'x');
      expect(await blockDeviceNumber(join(dir, 'missing'))).toBeNull();
      await expect(blockDeviceNumber(file)).rejects.toThrow(
        new FailedPreconditionError(`${file} is not a block device`),
      );
      await expect(blockDeviceNumber('/dev/null')).rejects.toThrow(FailedPreconditionError);
      await expect(requireBlockDeviceNumber(join(dir, 'missing'))).rejects.toThrow(NotFoundError);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
