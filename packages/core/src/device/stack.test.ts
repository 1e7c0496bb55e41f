import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_NAMING } from '../naming.js';
import { restsOnDataDevice, type PathStat } from './stack.js';

let root: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'lvstamp-stack-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

async function put(path: string, text: string): Promise<void> {
  await mkdir(dirname(join(root, path)), { recursive: true });
  await writeFile(join(root, path), text);
}

/**
 * A block device as sysfs shows it: `sys/devices/<path>` with `dev`, and
 * `sys/dev/block/M:m` → ../../devices/<path>.
 */
async function device(path: string, dev: string): Promise<void> {
  await put(`sys/devices/${path}/dev`, `${dev}\n`);
  await mkdir(join(root, 'sys/dev/block'), { recursive: true });
  await symlink(`../../devices/${path}`, join(root, 'sys/dev/block', dev));
}

async function dm(name: string, dev: string, dmName: string, uuid: string, slaves: string[] = []) {
  const path = `virtual/block/${name}`;
  await device(path, dev);
  await put(`sys/devices/${path}/dm/name`, `${dmName}\n`);
  await put(`sys/devices/${path}/dm/uuid`, `${uuid}\n`);
  await mkdir(join(root, 'sys/devices', path, 'slaves'), { recursive: true });
  for (const slave of slaves) {
    await symlink(
      join(root, 'sys/devices', slave),
      join(root, 'sys/devices', path, 'slaves', basename(slave)),
    );
  }
}

async function loop(name: string, dev: string, backingFile: string): Promise<void> {
  const path = `virtual/block/${name}`;
  await device(path, dev);
  await put(`sys/devices/${path}/loop/backing_file`, `${backingFile}\n`);
}

const devT = (major: number, minor: number): bigint => BigInt((major << 8) | minor);

/** A stat over a table: block device nodes by rdev, regular files by the device of their filesystem. */
function fakeStat(table: Record<string, { block: [number, number] } | { file: [number, number] }>) {
  return (path: string): Promise<PathStat> => {
    const entry = table[path];
    if (entry === undefined) {
      return Promise.reject(
        Object.assign(new Error(`ENOENT: no such file or directory, stat '${path}'`), {
          code: 'ENOENT',
        }),
      );
    }
    const block = 'block' in entry;
    const [major, minor] = block ? entry.block : entry.file;
    return Promise.resolve({
      isBlockDevice: () => block,
      isFile: () => !block,
      rdev: block ? devT(major, minor) : 0n,
      dev: block ? devT(0, 6) : devT(major, minor),
    });
  };
}

const DATA_UUID = 'LVSTAMP-746bf03d564ec8613ddeb80287a0caa1';
const DATA_NAME = 'lvstamp-746bf03d564ec8613ddeb80287a0caa1';
const LV_UUID = 'LVM-yKUTHdtI0yOEnMfff5ApJsM2dxZXYmQRh7z2M6fwYAN10LEvAYIRiUoFpK5KBgwS';

/** The node's disk sda with partition sda1, an LV on it (dm-0), and a data device dm-3 over the LV. */
async function node(): Promise<void> {
  await device('pci0000:00/block/sda', '8:0');
  await device('pci0000:00/block/sda/sda1', '8:1');
  await put('sys/devices/pci0000:00/block/sda/sda1/partition', '1\n');
  await dm('dm-0', '253:0', 'vg0-lvstamp_746bf03d564ec8613ddeb80287a0caa1', LV_UUID, [
    'pci0000:00/block/sda/sda1',
  ]);
  await dm('dm-3', '253:3', DATA_NAME, DATA_UUID, ['virtual/block/dm-0']);
}

describe('restsOnDataDevice (DESIGN.md §2.3 "Scope")', () => {
  it('a loop device over a data device is nested', async () => {
    await node();
    await loop('loop0', '7:0', `/dev/mapper/${DATA_NAME}`);
    const stat = fakeStat({
      '/dev/loop0': { block: [7, 0] },
      [`/dev/mapper/${DATA_NAME}`]: { block: [253, 3] },
    });
    expect(await restsOnDataDevice('/dev/loop0', { hostRoot: root, stat })).toEqual({
      nested: true,
      reason: `/dev/loop0 rests on lvstamp data device ${DATA_NAME} (dm-3)`,
    });
  });

  it('a loop device over a file on a filesystem on a data device is nested', async () => {
    await node();
    await loop('loop1', '7:1', '/mnt/tenant/disk.img');
    const stat = fakeStat({
      '/dev/loop1': { block: [7, 1] },
      '/mnt/tenant/disk.img': { file: [253, 3] },
    });
    expect(await restsOnDataDevice('/dev/loop1', { hostRoot: root, stat })).toEqual({
      nested: true,
      reason: `/dev/loop1 rests on lvstamp data device ${DATA_NAME} (dm-3)`,
    });
  });

  it('a dm linear map over a data device (a tenant LV, a crypt) is nested', async () => {
    await node();
    await dm('dm-4', '253:4', 'tenant-crypt', 'CRYPT-LUKS2-abc', ['virtual/block/dm-3']);
    const stat = fakeStat({ '/dev/mapper/tenant-crypt': { block: [253, 4] } });
    expect(await restsOnDataDevice('/dev/mapper/tenant-crypt', { hostRoot: root, stat })).toEqual({
      nested: true,
      reason: `/dev/mapper/tenant-crypt rests on lvstamp data device ${DATA_NAME} (dm-3)`,
    });
  });

  it('a partition of a disk is not nested; a partition of a loop device over a data device is', async () => {
    await node();
    const stat = fakeStat({ '/dev/sda1': { block: [8, 1] }, '/dev/loop2p1': { block: [259, 0] } });
    expect(await restsOnDataDevice('/dev/sda1', { hostRoot: root, stat })).toEqual({
      nested: false,
    });
    await loop('loop2', '7:2', '/mnt/tenant/disk.img');
    await device('virtual/block/loop2/loop2p1', '259:0');
    await put('sys/devices/virtual/block/loop2/loop2p1/partition', '1\n');
    const withFile = fakeStat({
      '/dev/loop2p1': { block: [259, 0] },
      '/mnt/tenant/disk.img': { file: [253, 3] },
    });
    expect(await restsOnDataDevice('/dev/loop2p1', { hostRoot: root, stat: withFile })).toEqual({
      nested: true,
      reason: `/dev/loop2p1 rests on lvstamp data device ${DATA_NAME} (dm-3)`,
    });
  });

  it('a plain disk, and a loop device over a file on it, are not nested', async () => {
    await node();
    await loop('loop3', '7:3', '/var/tmp/pv.img');
    const stat = fakeStat({
      '/dev/sda': { block: [8, 0] },
      '/dev/loop3': { block: [7, 3] },
      '/var/tmp/pv.img': { file: [8, 1] },
    });
    expect(await restsOnDataDevice('/dev/sda', { hostRoot: root, stat })).toEqual({
      nested: false,
    });
    expect(await restsOnDataDevice('/dev/loop3', { hostRoot: root, stat })).toEqual({
      nested: false,
    });
  });

  it('another naming prefix decides', async () => {
    await node();
    const stat = fakeStat({ '/dev/dm-3': { block: [253, 3] } });
    const naming = { ...DEFAULT_NAMING, dmUuidPrefix: 'OTHER-' };
    expect(await restsOnDataDevice('/dev/dm-3', { hostRoot: root, stat, naming })).toEqual({
      nested: false,
    });
  });

  it('what cannot be read counts as nested, with why: no sysfs, a gone PV path, a gone backing file', async () => {
    const stat = fakeStat({ '/dev/sda': { block: [8, 0] }, '/dev/loop0': { block: [7, 0] } });
    expect(await restsOnDataDevice('/dev/sda', { hostRoot: root, stat })).toEqual({
      nested: true,
      reason: `the device stack of /dev/sda cannot be followed (cannot resolve ${join(root, 'sys/dev/block/8:0')}: ENOENT: no such file or directory, realpath '${join(root, 'sys/dev/block/8:0')}')`,
    });
    expect(await restsOnDataDevice('/dev/gone', { hostRoot: root, stat })).toEqual({
      nested: true,
      reason:
        "the device stack of /dev/gone cannot be followed (cannot stat /dev/gone: ENOENT: no such file or directory, stat '/dev/gone')",
    });
    await node();
    await loop('loop0', '7:0', '/mnt/gone.img');
    expect(await restsOnDataDevice('/dev/loop0', { hostRoot: root, stat })).toEqual({
      nested: true,
      reason:
        "the device stack of /dev/loop0 cannot be followed (cannot stat /mnt/gone.img: ENOENT: no such file or directory, stat '/mnt/gone.img')",
    });
  });

  it('a file on tmpfs is not nested; on btrfs over a data device it is; a layer device number goes by the mount holding the path; no mount at all counts as nested', async () => {
    await node();
    await put(
      'proc/self/mountinfo',
      [
        '30 1 0:45 / /run rw,nosuid - tmpfs tmpfs rw',
        `31 1 0:46 / /mnt/tenant rw - btrfs /dev/mapper/${DATA_NAME} rw`,
        `32 1 0:48 / /mnt/over rw - btrfs /dev/mapper/${DATA_NAME} rw`,
        '',
      ].join('\n'),
    );
    await loop('loop4', '7:4', '/run/pv.img');
    await loop('loop5', '7:5', '/mnt/tenant/pv.img');
    await loop('loop6', '7:6', '/gone/pv.img');
    await loop('loop7', '7:7', '/mnt/over/layer/pv.img');
    const stat = fakeStat({
      '/dev/loop4': { block: [7, 4] },
      '/dev/loop5': { block: [7, 5] },
      '/dev/loop6': { block: [7, 6] },
      '/run/pv.img': { file: [0, 45] },
      '/mnt/tenant/pv.img': { file: [0, 46] },
      '/gone/pv.img': { file: [0, 47] },
      '/dev/loop7': { block: [7, 7] },
      '/mnt/over/layer/pv.img': { file: [0, 49] },
      [`/dev/mapper/${DATA_NAME}`]: { block: [253, 3] },
    });
    expect(await restsOnDataDevice('/dev/loop4', { hostRoot: root, stat })).toEqual({
      nested: false,
    });
    expect(await restsOnDataDevice('/dev/loop5', { hostRoot: root, stat })).toEqual({
      nested: true,
      reason: `/dev/loop5 rests on lvstamp data device ${DATA_NAME} (dm-3)`,
    });
    expect(await restsOnDataDevice('/dev/loop6', { hostRoot: root, stat })).toEqual({
      nested: true,
      reason: `the device stack of /dev/loop6 cannot be followed (no mount of 0:47 or above /gone/pv.img in ${join(root, 'proc/self/mountinfo')})`,
    });
    // A device number no mount has (an overlay's layer): the mount holding the path decides.
    expect(await restsOnDataDevice('/dev/loop7', { hostRoot: root, stat })).toEqual({
      nested: true,
      reason: `/dev/loop7 rests on lvstamp data device ${DATA_NAME} (dm-3)`,
    });
  });
});
