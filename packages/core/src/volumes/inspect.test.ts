import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../errors.js';
import { BlockHeaderIo } from '../header/block-io.js';
import { decodeHeader, encodeHeader } from '../header/codec.js';
import type { DecodeResult } from '../header/types.js';
import type { Volume } from './types.js';
import { InspectService } from './inspect.js';

const ID = 'c'.repeat(32);
const notStamped: DecodeResult = { status: 'not-stamped', reason: 'magic absent' };

function service(found: Volume | null) {
  const calls: string[] = [];
  const inspector = new InspectService({
    volumes: {
      resolve: (ref) => {
        calls.push(`resolve ${ref}`);
        return Promise.resolve(ID);
      },
      findVolume: (id) => {
        calls.push(`findVolume ${id}`);
        return Promise.resolve(found);
      },
      readHeader: (volume) => {
        calls.push(`readHeader ${volume.lvName}`);
        return Promise.resolve(notStamped);
      },
    },
    headers: {
      readHeader: (path) => {
        calls.push(`read path ${path}`);
        return Promise.resolve(notStamped);
      },
    },
  });
  return { inspector, calls };
}

const scope = () => Promise.resolve({ vgNames: ['vg0'] });

describe('InspectService.inspect: a path or a volume', () => {
  it('takes a name that is a directory in the working directory as a volume, not as a path', async () => {
    // vitest runs in the package directory, where `src` is a directory.
    const { inspector, calls } = service({
      vgName: 'vg0',
      lvName: `lvstamp_${ID}`,
      dmPath: null,
      volumeId: ID,
    } as unknown as Volume);
    const report = await inspector.inspect('src', scope);
    expect(calls).toEqual(['resolve src', `findVolume ${ID}`, `readHeader lvstamp_${ID}`]);
    expect(report.devicePath).toBe(`vg0/lvstamp_${ID}`);
  });

  it('refuses a name over 128 bytes (CSI "Size Limits") before any volume group is looked up', async () => {
    const { inspector, calls } = service(null);
    let scoped = false;
    const scopeOf = () => {
      scoped = true;
      return scope();
    };
    // 43 three-byte characters: 129 bytes of UTF-8
    await expect(inspector.inspect('€'.repeat(43), scopeOf)).rejects.toThrow(
      new InvalidArgumentError(
        'volume name must be 1–128 bytes of UTF-8, the CSI limit on a string field, got 129',
      ),
    );
    expect(scoped).toBe(false);
    expect(calls).toEqual([]);
  });

  it('takes an existing regular file, and anything with a /, as a path', async () => {
    const { inspector, calls } = service(null);
    await inspector.inspect('package.json', scope);
    await inspector.inspect('no/such/file', scope);
    expect(calls).toEqual(['read path package.json', 'read path no/such/file']);
  });
});

describe('InspectService.inspect: the header version read', () => {
  const fields = {
    volumeId: ID,
    ownerId: '0'.repeat(32),
    createdAtMs: 1_700_000_000_000,
    dataOffsetBytes: 1048576,
    requestedBytes: 8 * 1048576,
    name: 'pvc-1',
  };

  for (const version of [1, 2] as const) {
    it(`reports and explains a v${version} header as v${version}`, async () => {
      const inspector = new InspectService({
        volumes: {} as never,
        headers: { readHeader: () => Promise.resolve(decodeHeader(encodeHeader(fields, version))) },
      });
      const report = await inspector.inspect('/dev/some/device', scope);
      expect(report.decode).toEqual({ status: 'ok', version, header: fields });
      expect(report.explanation).toBe(
        `a valid lvstamp v${version} header: this device is an lvstamp volume`,
      );
    });
  }

  it.each([1, 2] as const)(
    'an image file holding a v%i header, read from disk by BlockHeaderIo, is reported as that version',
    async (version) => {
      const dir = await mkdtemp(join(tmpdir(), 'lvstamp-inspect-'));
      try {
        const image = join(dir, 'disk.img');
        const header = encodeHeader(fields, version);
        await writeFile(image, Buffer.concat([header, Buffer.alloc(1048576 - header.length)]));
        // the codec's version field: bytes 8–9, little-endian (DESIGN.md §4)
        expect([header[8], header[9]]).toEqual([version, 0]);
        const inspector = new InspectService({
          volumes: {} as never,
          headers: new BlockHeaderIo(),
        });
        const report = await inspector.inspect(image, scope);
        expect(report.decode).toEqual({ status: 'ok', version, header: fields });
        expect(report.explanation).toBe(
          `a valid lvstamp v${version} header: this device is an lvstamp volume`,
        );
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  );
});
