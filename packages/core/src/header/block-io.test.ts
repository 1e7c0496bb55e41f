import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FailedPreconditionError, InvalidArgumentError, NotFoundError } from '../errors.js';
import {
  BlockHeaderIo,
  clearDataAreaSignatures,
  logicalBlockSize,
  logicalBlockSizeOfDevice,
  readHeader,
  readHeaderBlock,
  writeHeaderBlock,
} from './block-io.js';
import { encodeHeader } from './codec.js';
import type { GcHeaderPort } from '../gc/ports.js';
import type { HeaderIo } from '../volumes/header-io.js';
import type { HeaderFields } from './types.js';

const MiB = 1024 * 1024;

const fields: HeaderFields = {
  volumeId: '9a1c0000000000000000000000e07b00',
  ownerId: '0123456789abcdef0123456789abcdef',
  createdAtMs: 1_767_225_600_000,
  dataOffsetBytes: MiB,
  requestedBytes: 64 * MiB,
  name: 'pvc-block-io',
};

let dir: string;
let image: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lvstamp-block-io-'));
  image = join(dir, 'disk.img');
  // A 1 MiB image whose every byte is 0xAB, so that writes show up exactly.
  await writeFile(image, Buffer.alloc(MiB, 0xab));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A fake sysfs: `dev/block/<M:m>/queue/logical_block_size` for a disk, a partition symlinked under it. */
async function fakeSysfs(): Promise<string> {
  const root = join(dir, 'sys');
  const disk = join(root, 'devices', 'virtual', 'block', 'vdb');
  await mkdir(join(disk, 'queue'), { recursive: true });
  await mkdir(join(disk, 'vdb1'), { recursive: true });
  await writeFile(join(disk, 'queue', 'logical_block_size'), '4096\n');
  await mkdir(join(root, 'dev', 'block'), { recursive: true });
  await symlink(disk, join(root, 'dev', 'block', '254:16'));
  await symlink(join(disk, 'vdb1'), join(root, 'dev', 'block', '254:17'));
  const odd = join(root, 'devices', 'virtual', 'block', 'odd');
  await mkdir(join(odd, 'queue'), { recursive: true });
  await writeFile(join(odd, 'queue', 'logical_block_size'), '1000\n');
  await symlink(odd, join(root, 'dev', 'block', '254:32'));
  return root;
}

describe('logicalBlockSize', () => {
  it('is 512 for a regular image file', async () => {
    expect(await logicalBlockSize(image)).toBe(512);
  });

  it('throws NotFoundError for a missing path', async () => {
    await expect(logicalBlockSize(join(dir, 'missing'))).rejects.toThrow(NotFoundError);
  });

  it('throws FailedPreconditionError for a directory', async () => {
    await expect(logicalBlockSize(dir)).rejects.toThrow(FailedPreconditionError);
  });

  it('reads queue/logical_block_size of a disk from sysfs', async () => {
    const sysfsRoot = await fakeSysfs();
    expect(await logicalBlockSizeOfDevice({ major: 254, minor: 16 }, { sysfsRoot })).toBe(4096);
  });

  it("reads a partition's value from its parent disk", async () => {
    const sysfsRoot = await fakeSysfs();
    expect(await logicalBlockSizeOfDevice({ major: 254, minor: 17 }, { sysfsRoot })).toBe(4096);
  });

  it('refuses an unknown device and a value that is not a power of two', async () => {
    const sysfsRoot = await fakeSysfs();
    await expect(logicalBlockSizeOfDevice({ major: 9, minor: 9 }, { sysfsRoot })).rejects.toThrow(
      new FailedPreconditionError('sysfs has no logical_block_size for block device 9:9'),
    );
    await expect(
      logicalBlockSizeOfDevice({ major: 254, minor: 32 }, { sysfsRoot }),
    ).rejects.toThrow(
      new FailedPreconditionError(
        'block device 254:32 reports an impossible logical block size "1000"',
      ),
    );
  });
});

describe('writeHeaderBlock / readHeaderBlock', () => {
  it('writes the header, zeros to the end of the block, and leaves the rest untouched', async () => {
    const header = encodeHeader(fields);
    await writeHeaderBlock(image, header);
    const after = await readFile(image);
    expect(after.length).toBe(MiB);
    expect(after.subarray(0, 512).equals(header)).toBe(true);
    expect(after.subarray(512).every((b) => b === 0xab)).toBe(true);
  });

  it('fills a whole 4096-byte block with the header and zeros', async () => {
    const header = encodeHeader(fields);
    await writeHeaderBlock(image, header, { blockSizeBytes: 4096 });
    const after = await readFile(image);
    expect(after.subarray(0, 512).equals(header)).toBe(true);
    expect(after.subarray(512, 4096).every((b) => b === 0)).toBe(true);
    expect(after.subarray(4096).every((b) => b === 0xab)).toBe(true);
    const block = await readHeaderBlock(image, { blockSizeBytes: 4096 });
    expect(block.length).toBe(4096);
    expect(block.equals(after.subarray(0, 4096))).toBe(true);
  });

  it('refuses a block size that is not a power of two in 512–65536', async () => {
    await expect(readHeaderBlock(image, { blockSizeBytes: 1000 })).rejects.toThrow(
      new InvalidArgumentError('blockSizeBytes must be a power of two in 512–65536, got 1000'),
    );
    await expect(
      writeHeaderBlock(image, encodeHeader(fields), { blockSizeBytes: 256 }),
    ).rejects.toThrow(InvalidArgumentError);
  });

  it('reads exactly one block from offset 0', async () => {
    const block = await readHeaderBlock(image);
    expect(block.length).toBe(512);
    expect(block.every((b) => b === 0xab)).toBe(true);
  });

  it('refuses a header that is not 512 bytes', async () => {
    await expect(writeHeaderBlock(image, new Uint8Array(511))).rejects.toThrow(
      InvalidArgumentError,
    );
    await expect(writeHeaderBlock(image, new Uint8Array(4096))).rejects.toThrow(
      InvalidArgumentError,
    );
    expect((await readFile(image)).every((b) => b === 0xab)).toBe(true);
  });

  it('never creates a missing file', async () => {
    const missing = join(dir, 'missing.img');
    await expect(writeHeaderBlock(missing, encodeHeader(fields))).rejects.toThrow(NotFoundError);
    await expect(readFile(missing)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('throws FailedPreconditionError on a short read', async () => {
    const tiny = join(dir, 'tiny.img');
    await writeFile(tiny, Buffer.alloc(100));
    await expect(readHeaderBlock(tiny)).rejects.toThrow(
      new FailedPreconditionError(
        `short read from ${tiny}: 100 of 512 bytes (the device is smaller than one block)`,
      ),
    );
  });

  it('throws FailedPreconditionError (not NotFoundError) for a path it cannot examine', async () => {
    // ENOTDIR: a path "under" a regular file.
    await expect(writeHeaderBlock(join(image, 'x'), encodeHeader(fields))).rejects.toThrow(
      FailedPreconditionError,
    );
    await expect(readHeaderBlock(join(image, 'x'))).rejects.toThrow(FailedPreconditionError);
  });
});

describe('clearDataAreaSignatures', () => {
  /** An image of `mib` MiB whose every byte is 0xAB. */
  async function patterned(mib: number): Promise<string> {
    const path = join(dir, `lv-${mib}.img`);
    await writeFile(path, Buffer.alloc(mib * MiB, 0xab));
    return path;
  }
  const isZero = (b: Buffer): boolean => b.every((x) => x === 0);
  const isPattern = (b: Buffer): boolean => b.every((x) => x === 0xab);

  it('zeroes the first and last MiB of the data area and nothing else (8 MiB LV)', async () => {
    const lv = await patterned(8);
    await clearDataAreaSignatures(lv, { dataOffsetBytes: MiB, sizeBytes: 8 * MiB });
    const after = await readFile(lv);
    expect(after.length).toBe(8 * MiB);
    expect(isPattern(after.subarray(0, MiB))).toBe(true); // the header area is not touched
    expect(isZero(after.subarray(MiB, 2 * MiB))).toBe(true);
    expect(isPattern(after.subarray(2 * MiB, 7 * MiB))).toBe(true);
    expect(isZero(after.subarray(7 * MiB))).toBe(true);
  });

  it('zeroes a data area smaller than two MiB whole, once, never past the end', async () => {
    const lv = await patterned(2);
    await clearDataAreaSignatures(lv, { dataOffsetBytes: MiB, sizeBytes: 2 * MiB - 512 });
    const after = await readFile(lv);
    expect(after.length).toBe(2 * MiB);
    expect(isPattern(after.subarray(0, MiB))).toBe(true);
    expect(isZero(after.subarray(MiB, 2 * MiB - 512))).toBe(true);
    expect(isPattern(after.subarray(2 * MiB - 512))).toBe(true);
  });

  it('works through BlockHeaderIo.clearDataArea, leaving a written header alone', async () => {
    const lv = await patterned(4);
    const io: HeaderIo = new BlockHeaderIo();
    await io.writeHeader(lv, fields);
    await io.clearDataArea(lv, { dataOffsetBytes: MiB, sizeBytes: 4 * MiB });
    expect(await io.readHeader(lv)).toEqual({ status: 'ok', version: 2, header: fields });
    const after = await readFile(lv);
    expect(isZero(after.subarray(MiB, 2 * MiB))).toBe(true);
    expect(isPattern(after.subarray(2 * MiB, 3 * MiB))).toBe(true);
    expect(isZero(after.subarray(3 * MiB))).toBe(true);
  });

  it('refuses sizes that leave no data area or are not whole sectors, writing nothing', async () => {
    const lv = await patterned(2);
    await expect(
      clearDataAreaSignatures(lv, { dataOffsetBytes: MiB, sizeBytes: MiB }),
    ).rejects.toThrow(
      new InvalidArgumentError(
        `an LV of ${MiB} bytes has no data area after the ${MiB}-byte offset`,
      ),
    );
    await expect(
      clearDataAreaSignatures(lv, { dataOffsetBytes: 1000, sizeBytes: 2 * MiB }),
    ).rejects.toThrow(
      new InvalidArgumentError(
        'dataOffsetBytes must be a positive multiple of 512 bytes, got 1000',
      ),
    );
    expect(isPattern(await readFile(lv))).toBe(true);
  });

  it('never creates a missing device', async () => {
    const missing = join(dir, 'missing.img');
    await expect(
      clearDataAreaSignatures(missing, { dataOffsetBytes: MiB, sizeBytes: 4 * MiB }),
    ).rejects.toThrow(NotFoundError);
    await expect(readFile(missing)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('readHeader / BlockHeaderIo', () => {
  it('round-trips through an image file, as the LVM manager and the GC use it', async () => {
    const io: HeaderIo & GcHeaderPort = new BlockHeaderIo();
    await io.writeHeader(image, fields);
    expect(await io.readHeader(image)).toEqual({ status: 'ok', version: 2, header: fields });
    expect(await readHeader(image)).toEqual({ status: 'ok', version: 2, header: fields });
  });

  it('reports an unstamped image as not-stamped without throwing', async () => {
    expect(await new BlockHeaderIo().readHeader(image)).toEqual({
      status: 'not-stamped',
      reason: 'no lvstamp magic at byte 0',
    });
  });

  it('throws NotFoundError for a missing device', async () => {
    await expect(new BlockHeaderIo().readHeader(join(dir, 'nope'))).rejects.toThrow(NotFoundError);
  });

  it('refuses what is neither a block device nor a file, and a file shorter than a header', async () => {
    await expect(readHeader(dir)).rejects.toThrow(
      new FailedPreconditionError(`${dir} is neither a block device nor a regular file`),
    );
    const tiny = join(dir, 'tiny.img');
    await writeFile(tiny, Buffer.alloc(511));
    await expect(readHeader(tiny)).rejects.toThrow(
      new FailedPreconditionError(
        `short read from ${tiny}: 511 of 512 bytes (the device is smaller than a header)`,
      ),
    );
  });

  it('rejects invalid fields before touching the device', async () => {
    await expect(new BlockHeaderIo().writeHeader(image, { ...fields, name: '' })).rejects.toThrow(
      InvalidArgumentError,
    );
    expect((await readFile(image)).every((b) => b === 0xab)).toBe(true);
  });
});
