import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { FailedPreconditionError, UnparseableOutputError } from '../errors.js';
import { isReadonlyMount, mountsAt, parseMountInfo, readMountInfo } from './mountinfo.js';

const FIXTURE = fileURLToPath(new URL('../../fixtures/fs/mountinfo-node.txt', import.meta.url));
const ID = '9a1c5e0b3d7f4a2c8e6b1d0f2a4c6e07';

describe('parseMountInfo', () => {
  const entries = parseMountInfo(readFileSync(FIXTURE));

  it('reads every line in order', () => {
    expect(entries.map((e) => e.mountId)).toEqual([
      22, 23, 24, 100, 101, 102, 103, 104, 105, 106, 107,
    ]);
  });

  it('reads all eleven fields of a plain line', () => {
    expect(entries[3]).toEqual({
      mountId: 100,
      parentId: 22,
      major: 253,
      minor: 3,
      root: '/',
      mountPoint: '/var/lib/kubelet/plugins/kubernetes.io/csi/lvstamp.io/4f0c/globalmount',
      mountOptions: ['rw', 'relatime'],
      optionalFields: ['shared:300'],
      fsType: 'ext4',
      source: `/dev/mapper/lvstamp-${ID}`,
      superOptions: ['rw'],
    });
  });

  it('reads several optional fields and decodes \\040', () => {
    expect(entries[5]).toMatchObject({
      mountPoint: '/mnt/with space',
      mountOptions: ['ro', 'relatime'],
      optionalFields: ['master:7', 'propagate_from:3'],
      fsType: 'xfs',
      superOptions: ['ro', 'attr2', 'inode64', 'logbufs=8', 'logbsize=32k', 'noquota'],
    });
  });

  it('reads no optional fields, \\011 \\012 \\134, non-ASCII paths and an escaped source', () => {
    expect(entries[7]).toMatchObject({
      optionalFields: [],
      mountPoint: '/mnt/tab\tand\nnewline\\back',
      source: 'none',
    });
    expect(entries[8]).toMatchObject({ mountPoint: '/mnt/übung', source: 'tmp fs' });
  });

  it('reads the root of a bind mount of a subtree', () => {
    expect(entries[6]).toMatchObject({
      root: '/srv/data',
      mountPoint: '/mnt/bind',
      major: 254,
      minor: 1,
    });
  });

  it('reads an empty source', () => {
    expect(entries[10]).toMatchObject({ fsType: 'tmpfs', source: '', superOptions: ['rw'] });
  });

  it('keeps bytes that are not UTF-8 text when given a Buffer', () => {
    const line = Buffer.concat([
      Buffer.from('1 0 0:1 / /mnt/'),
      Buffer.from([0xc3, 0xbc]),
      Buffer.from(' rw - tmpfs none rw\n'),
    ]);
    expect(parseMountInfo(line)[0]?.mountPoint).toBe('/mnt/ü');
  });

  it.each([
    ['no separator', '1 0 0:1 / /mnt rw tmpfs none rw'],
    ['a missing super-options field', '1 0 0:1 / /mnt rw - tmpfs none'],
    ['an extra field after the separator', '1 0 0:1 / /mnt rw - tmpfs none rw extra'],
    ['a bad device number', '1 0 0-1 / /mnt rw - tmpfs none rw'],
    ['a non-numeric mount ID', 'x 0 0:1 / /mnt rw - tmpfs none rw'],
    ['too few fields', '1 0 0:1 / - tmpfs none rw'],
  ])('throws UnparseableOutputError for %s', (_label, line) => {
    expect(() => parseMountInfo(`${line}\n`, '/proc/self/mountinfo')).toThrow(
      UnparseableOutputError,
    );
  });

  it('names the file and line in the error', () => {
    expect(() =>
      parseMountInfo('1 0 0:1 / /a rw - tmpfs none rw\nbroken\n', '/x/mountinfo'),
    ).toThrow(
      'cannot parse the output of /x/mountinfo: line 2: no "-" separator after the sixth field: "broken"',
    );
  });
});

describe('mountsAt / isReadonlyMount', () => {
  const entries = parseMountInfo(readFileSync(FIXTURE));

  it('lists stacked mounts bottom first', () => {
    expect(mountsAt(entries, '/mnt/bind').map((e) => e.mountId)).toEqual([103, 106]);
    expect(mountsAt(entries, '/mnt/nothing')).toEqual([]);
  });

  it('reads ro from the per-mount options', () => {
    expect(entries.filter(isReadonlyMount).map((e) => e.mountId)).toEqual([102]);
  });
});

describe('readMountInfo', () => {
  it('reads the file it is given', async () => {
    expect((await readMountInfo(FIXTURE)).length).toBe(11);
  });

  it('throws FailedPreconditionError when the file cannot be read', async () => {
    await expect(readMountInfo('/nonexistent/mountinfo')).rejects.toThrow(FailedPreconditionError);
  });

  it('parses the real /proc/self/mountinfo of this process', async () => {
    const real = await readMountInfo();
    expect(real.some((e) => e.mountPoint === '/')).toBe(true);
  });
});
