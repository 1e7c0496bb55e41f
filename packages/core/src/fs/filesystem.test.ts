import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  AlreadyExistsError,
  CommandFailedError,
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  UnparseableOutputError,
} from '../errors.js';
import { ReplayRunner, type ReplayStep } from '../testing/replay-runner.js';
import type { DeviceNumber } from '../device/types.js';
import { statfs } from 'node:fs/promises';
import { FilesystemManager } from './filesystem.js';
import { parseBlkidExport, usageFromStatfs } from './tools.js';
import type { FsType } from './types.js';

const ID = '9a1c5e0b3d7f4a2c8e6b1d0f2a4c6e07';
const DEV = `/dev/mapper/lvstamp-${ID}`;
const DEV_NUMBER: DeviceNumber = { major: 253, minor: 3 };
const LONG = { timeoutMs: 600_000 };

let dir: string;
let mountinfo: string;
let target: string;
let replay: ReplayRunner | undefined;

beforeEach(async () => {
  dir = await realpath(await mkdtemp(join(tmpdir(), 'lvstamp-fs-')));
  mountinfo = join(dir, 'mountinfo');
  target = join(dir, 'target');
  await mkdir(target);
  await writeMountInfo([]);
});

afterEach(async () => {
  replay?.assertDone();
  replay = undefined;
  await rm(dir, { recursive: true, force: true });
});

const BASE = '22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw';

/** Writes the fake mount table: the root line plus the given lines. */
async function writeMountInfo(lines: string[]): Promise<void> {
  await writeFile(mountinfo, [BASE, ...lines].map((l) => `${l}\n`).join(''));
}

function mountLine(
  path: string,
  opts: { dev?: string; fs?: string; ro?: boolean; root?: string; id?: number } = {},
) {
  const escaped = path.replace(/ /g, '\\040');
  return `${opts.id ?? 100} 22 ${opts.dev ?? '253:3'} ${opts.root ?? '/'} ${escaped} ${opts.ro === true ? 'ro' : 'rw'},relatime shared:300 - ${opts.fs ?? 'ext4'} ${DEV} rw`;
}

/**
 * A FilesystemManager over a ReplayRunner; `effects` rewrite the mount table
 * when a command with that program name runs (what the kernel would do).
 */
function setup(
  steps: ReplayStep[],
  effects: Record<string, string[]> = {},
  nodes?: Map<string, DeviceNumber>,
) {
  const runner = new ReplayRunner(steps);
  replay = runner;
  const devices = nodes ?? new Map([[DEV, DEV_NUMBER]]);
  const manager = new FilesystemManager({
    runner: {
      run: async (argv, options) => {
        const result = await runner.run(argv, options);
        const effect = effects[argv[0] ?? ''];
        if (effect !== undefined) await writeMountInfo(effect);
        return result;
      },
    },
    mountinfoPath: mountinfo,
    hostRoot: dir,
    deviceNumberOf: (path) => {
      const found = devices.get(path);
      return found === undefined
        ? Promise.reject(new NotFoundError(`device ${path} does not exist`))
        : Promise.resolve(found);
    },
  });
  return { manager, runner };
}

const blkid = (device: string): string[] => ['blkid', '-p', '-o', 'export', device];

describe('probe', () => {
  it.each<[string, object]>([
    ['blkid-ext4.txt', { kind: 'filesystem', type: 'ext4' }],
    ['blkid-xfs.txt', { kind: 'filesystem', type: 'xfs' }],
    ['blkid-label.txt', { kind: 'filesystem', type: 'ext4' }],
    ['blkid-dos.txt', { kind: 'partition-table', type: 'dos' }],
    ['blkid-swap.txt', { kind: 'other', type: 'swap' }],
  ])('reads %s', async (file, expected) => {
    const { manager, runner } = setup([{ argv: blkid(DEV), stdoutFile: `fs/${file}` }]);
    expect(await manager.probe(DEV)).toEqual(expected);
    expect(runner.calls[0]?.options).toEqual({ allowExitCodes: [2] });
  });

  it('says blank when blkid exits 2 and the device reads', async () => {
    const image = join(dir, 'blank.img');
    await writeFile(image, Buffer.alloc(8192));
    const { manager } = setup([{ argv: blkid(image), exitCode: 2 }]);
    expect(await manager.probe(image)).toEqual({ kind: 'blank' });
  });

  it('probes the data area behind a header with blkid --offset (a volume read through its LV)', async () => {
    const argv = ['blkid', '-p', '--offset', '1048576', '-o', 'export', DEV];
    const { manager, runner } = setup([{ argv, stdoutFile: 'fs/blkid-xfs.txt' }]);
    expect(await manager.probe(DEV, { offsetBytes: 1 << 20 })).toEqual({
      kind: 'filesystem',
      type: 'xfs',
    });
    runner.assertDone();
    const image = join(dir, 'blank-behind-header.img');
    await writeFile(image, Buffer.alloc(8192));
    const blank = setup([
      { argv: ['blkid', '-p', '--offset', '4096', '-o', 'export', image], exitCode: 2 },
    ]);
    expect(await blank.manager.probe(image, { offsetBytes: 4096 })).toEqual({ kind: 'blank' });
  });

  it('never says blank for a missing device (blkid exits 2 there too)', async () => {
    const missing = join(dir, 'missing.img');
    const { manager } = setup([{ argv: blkid(missing), exitCode: 2 }]);
    await expect(manager.probe(missing)).rejects.toThrow(NotFoundError);
  });

  it('never says blank for an unreadable device', async () => {
    const { manager } = setup([{ argv: blkid(dir), exitCode: 2 }]);
    await expect(manager.probe(dir)).rejects.toThrow(FailedPreconditionError);
  });

  it('propagates other blkid failures (exit 8: ambiguous)', async () => {
    const { manager } = setup([{ argv: blkid(DEV), exitCode: 8, stderr: 'ambivalent result' }]);
    await expect(manager.probe(DEV)).rejects.toThrow(CommandFailedError);
  });

  it('refuses output it cannot read', () => {
    const result = (stdout: string) => ({ argv: blkid(DEV), exitCode: 0, stdout, stderr: '' });
    expect(() => parseBlkidExport(result('DEVNAME=/dev/x\nUUID=1\n'))).toThrow(
      UnparseableOutputError,
    );
    expect(() => parseBlkidExport(result('garbage\n'))).toThrow(UnparseableOutputError);
    expect(() => parseBlkidExport(result(''))).toThrow(UnparseableOutputError);
  });
});

describe('format', () => {
  let image: string;
  beforeEach(async () => {
    image = join(dir, 'data.img');
    await writeFile(image, Buffer.alloc(8192));
  });

  it.each<[FsType, string[]]>([
    ['ext4', ['mkfs.ext4', '-F', '-q', '-E', 'nodiscard']],
    ['xfs', ['mkfs.xfs', '-q', '-K']],
  ])('makes %s on a blank, readable device', async (fsType, mkfs) => {
    const { manager, runner } = setup([
      { argv: blkid(image), exitCode: 2 },
      { argv: [...mkfs, image] },
    ]);
    expect(await manager.format(image, fsType)).toEqual({ changed: true });
    expect(runner.calls[1]?.options).toEqual(LONG);
  });

  it('is a no-op when the same filesystem is there', async () => {
    const { manager } = setup([{ argv: blkid(DEV), stdoutFile: 'fs/blkid-xfs.txt' }]);
    expect(await manager.format(DEV, 'xfs')).toEqual({ changed: false });
  });

  it.each([
    [
      'another filesystem',
      'blkid-ext4.txt',
      `${DEV} already holds a ext4 filesystem, not xfs; refusing to format it`,
    ],
    [
      'a partition table',
      'blkid-dos.txt',
      `${DEV} holds a dos partition table; refusing to format it`,
    ],
    ['a swap signature', 'blkid-swap.txt', `${DEV} holds a swap signature; refusing to format it`],
  ])('refuses %s', async (_label, file, message) => {
    const { manager } = setup([{ argv: blkid(DEV), stdoutFile: `fs/${file}` }]);
    await expect(manager.format(DEV, 'xfs')).rejects.toThrow(new FailedPreconditionError(message));
  });

  it('refuses an unsupported type before running anything', async () => {
    const { manager } = setup([]);
    await expect(manager.format(DEV, 'btrfs' as FsType)).rejects.toThrow(InvalidArgumentError);
  });
});

describe('mount', () => {
  it('mounts and confirms the mount in mountinfo', async () => {
    const { manager } = setup([{ argv: ['mount', '-t', 'ext4', DEV, target] }], {
      mount: [mountLine(target)],
    });
    expect(await manager.mount(DEV, target, { fsType: 'ext4' })).toEqual({ changed: true });
  });

  it('passes ro and options with -o', async () => {
    const { manager } = setup(
      [{ argv: ['mount', '-t', 'xfs', '-o', 'ro,noatime,nouuid', DEV, target] }],
      {
        mount: [mountLine(target, { fs: 'xfs', ro: true })],
      },
    );
    expect(
      await manager.mount(DEV, target, {
        fsType: 'xfs',
        readonly: true,
        options: ['noatime', 'nouuid'],
      }),
    ).toEqual({ changed: true });
  });

  it('mounts xfs with nouuid, so a copy of a mounted xfs (same UUID) stages too', async () => {
    const { manager } = setup([{ argv: ['mount', '-t', 'xfs', '-o', 'nouuid', DEV, target] }], {
      mount: [mountLine(target, { fs: 'xfs' })],
    });
    expect(await manager.mount(DEV, target, { fsType: 'xfs' })).toEqual({ changed: true });
  });

  it('adds nouuid after the caller options of an xfs mount, once', async () => {
    const { manager } = setup(
      [{ argv: ['mount', '-t', 'xfs', '-o', 'ro,noatime,nouuid', DEV, target] }],
      { mount: [mountLine(target, { fs: 'xfs', ro: true })] },
    );
    expect(
      await manager.mount(DEV, target, { fsType: 'xfs', readonly: true, options: ['noatime'] }),
    ).toEqual({ changed: true });
  });

  it('is a no-op when the same device is mounted there the same way', async () => {
    await writeMountInfo([mountLine(target)]);
    const { manager } = setup([]);
    expect(await manager.mount(DEV, target, { fsType: 'ext4' })).toEqual({ changed: false });
  });

  it('resolves a symlinked target to the path mountinfo shows', async () => {
    await writeMountInfo([mountLine(target)]);
    const link = join(dir, 'link');
    await symlink(target, link);
    const { manager } = setup([]);
    expect(await manager.mount(DEV, link, { fsType: 'ext4' })).toEqual({ changed: false });
  });

  it('finds a mount point with a space (\\040 in mountinfo)', async () => {
    const spaced = join(dir, 'with space');
    await mkdir(spaced);
    await writeMountInfo([mountLine(spaced)]);
    const { manager } = setup([]);
    expect(await manager.mount(DEV, spaced, { fsType: 'ext4' })).toEqual({ changed: false });
  });

  it.each<[string, Parameters<typeof mountLine>[1], string]>([
    ['another device', { dev: '253:9' }, `${DEV} (253:9) is mounted there, not device 253:3`],
    [
      'a subtree of the same device',
      { root: '/sub' },
      `${DEV} (253:3) (subtree /sub) is mounted there, not device 253:3`,
    ],
    ['another type', { fs: 'xfs' }, 'it is mounted as xfs, not ext4'],
    ['read-only', { ro: true }, 'it is mounted read-only, not read-write'],
  ])('refuses when %s is mounted there', async (_label, opts, why) => {
    await writeMountInfo([mountLine(target, opts)]);
    const { manager } = setup([]);
    await expect(manager.mount(DEV, target, { fsType: 'ext4' })).rejects.toThrow(
      new FailedPreconditionError(`${target} is already a mount point: ${why}`),
    );
  });

  it('looks at the top of stacked mounts', async () => {
    await writeMountInfo([
      mountLine(target, { dev: '253:9', id: 100 }),
      mountLine(target, { id: 101 }),
    ]);
    const { manager } = setup([]);
    expect(await manager.mount(DEV, target, { fsType: 'ext4' })).toEqual({ changed: false });
  });

  it('fails when the mount does not show up afterwards', async () => {
    const { manager } = setup([{ argv: ['mount', '-t', 'ext4', DEV, target] }]);
    await expect(manager.mount(DEV, target, { fsType: 'ext4' })).rejects.toThrow(
      new FailedPreconditionError(
        `mount ${DEV} at ${target} did not take: nothing is mounted there`,
      ),
    );
  });

  it('throws NotFoundError for a missing target or device', async () => {
    const { manager } = setup([]);
    await expect(manager.mount(DEV, join(dir, 'nope'), { fsType: 'ext4' })).rejects.toThrow(
      NotFoundError,
    );
    await expect(manager.mount('/dev/mapper/nope', target, { fsType: 'ext4' })).rejects.toThrow(
      NotFoundError,
    );
  });

  it('refuses a relative target and bad options', async () => {
    const { manager } = setup([]);
    await expect(manager.mount(DEV, 'rel/path', { fsType: 'ext4' })).rejects.toThrow(
      InvalidArgumentError,
    );
    await expect(manager.mount(DEV, target, { fsType: 'ext4', options: ['a,b'] })).rejects.toThrow(
      InvalidArgumentError,
    );
    await expect(manager.mount(DEV, target, { fsType: 'ext4', options: [''] })).rejects.toThrow(
      InvalidArgumentError,
    );
  });

  it('propagates a failing mount command', async () => {
    const { manager } = setup([
      { argv: ['mount', '-t', 'ext4', DEV, target], exitCode: 32, stderr: 'mount: wrong fs type' },
    ]);
    await expect(manager.mount(DEV, target, { fsType: 'ext4' })).rejects.toThrow(
      CommandFailedError,
    );
  });
});

describe('unmount', () => {
  it('unmounts and checks again', async () => {
    await writeMountInfo([mountLine(target)]);
    const { manager } = setup([{ argv: ['umount', target] }], { umount: [] });
    expect(await manager.unmount(target)).toEqual({ changed: true });
  });

  it('succeeds for a path that is not mounted, or does not exist', async () => {
    const { manager } = setup([]);
    expect(await manager.unmount(target)).toEqual({ changed: false });
    expect(await manager.unmount(join(dir, 'gone'))).toEqual({ changed: false });
  });

  it('is not fooled by a mount point whose name is a prefix', async () => {
    await writeMountInfo([mountLine(`${target}2`)]);
    const { manager } = setup([]);
    expect(await manager.unmount(target)).toEqual({ changed: false });
  });

  it('fails when a stacked mount is still there afterwards', async () => {
    await writeMountInfo([mountLine(target, { id: 100 }), mountLine(target, { id: 101 })]);
    const { manager } = setup([{ argv: ['umount', target] }], {
      umount: [mountLine(target, { id: 100 })],
    });
    await expect(manager.unmount(target)).rejects.toThrow(
      new FailedPreconditionError(`${target} is still a mount point after umount (1 mount left)`),
    );
  });

  it('names the other mounts and holders of the device when umount says busy', async () => {
    await writeMountInfo([mountLine(target)]);
    // the host's view (hostRoot): the same device is also bind-mounted into a pod
    await mkdir(join(dir, 'proc/self'), { recursive: true });
    await writeFile(
      join(dir, 'proc/self/mountinfo'),
      [BASE, mountLine(target), mountLine('/pods/p1/mount', { id: 101 })].join('\n'),
    );
    await mkdir(join(dir, 'sys/dev/block'), { recursive: true });
    await symlink('../../block/dm-3', join(dir, 'sys/dev/block/253:3'));
    const { manager } = setup([
      { argv: ['umount', target], exitCode: 32, stderr: `umount: ${target}: target is busy.\n` },
    ]);
    await expect(manager.unmount(target)).rejects.toThrow(
      new CommandFailedError(
        {
          argv: ['umount', target],
          exitCode: 32,
          stdout: '',
          stderr: `umount: ${target}: target is busy.\n`,
        },
        `umount ${target} exited 32: umount: ${target}: target is busy.; 253:3 mounted there: ` +
          `mounted: dm-3 on ${target} (ext4), dm-3 on /pods/p1/mount (ext4)`,
      ),
    );
  });

  it('refuses a relative path', async () => {
    const { manager } = setup([]);
    await expect(manager.unmount('target')).rejects.toThrow(InvalidArgumentError);
  });
});

describe('grow', () => {
  it('runs resize2fs on the device from mountinfo for ext4', async () => {
    await writeMountInfo([mountLine(target)]);
    const { manager, runner } = setup([{ argv: ['resize2fs', DEV] }]);
    await manager.grow(target, 'ext4');
    expect(runner.calls[0]?.options).toEqual(LONG);
  });

  it('runs xfs_growfs -d on the mount point for xfs', async () => {
    await writeMountInfo([mountLine(target, { fs: 'xfs' })]);
    const { manager } = setup([{ argv: ['xfs_growfs', '-d', target] }]);
    await manager.grow(target, 'xfs');
  });

  it('refuses when the source in mountinfo now names another device', async () => {
    await writeMountInfo([mountLine(target)]);
    const { manager } = setup([], {}, new Map([[DEV, { major: 253, minor: 8 }]]));
    await expect(manager.grow(target, 'ext4')).rejects.toThrow(
      new FailedPreconditionError(`${DEV} is device 253:8, but ${target} is mounted from 253:3`),
    );
  });

  it('refuses when nothing or another type is mounted', async () => {
    const { manager } = setup([]);
    await expect(manager.grow(target, 'ext4')).rejects.toThrow(
      new FailedPreconditionError(`nothing is mounted at ${target}`),
    );
    await writeMountInfo([mountLine(target, { fs: 'xfs' })]);
    await expect(manager.grow(target, 'ext4')).rejects.toThrow(
      new FailedPreconditionError(`${target} holds xfs, not ext4`),
    );
    await expect(manager.grow(join(dir, 'nope'), 'ext4')).rejects.toThrow(NotFoundError);
  });
});

describe('usage', () => {
  it('turns statfs blocks into bytes', () => {
    expect(
      usageFromStatfs({
        bsize: 4096,
        blocks: 1000,
        bfree: 300,
        bavail: 250,
        files: 640,
        ffree: 600,
      }),
    ).toEqual({
      totalBytes: 4_096_000,
      availableBytes: 1_024_000,
      usedBytes: 2_867_200,
      totalInodes: 640,
      freeInodes: 600,
    });
  });

  it('reads statfs of a real directory', async () => {
    const { manager } = setup([]);
    const [u, st] = await Promise.all([manager.usage(dir), statfs(dir)]);
    expect(u.totalBytes).toBe(st.blocks * st.bsize);
    expect(u.totalInodes).toBe(st.files);
  });

  it('throws NotFoundError for a missing path', async () => {
    const { manager } = setup([]);
    await expect(manager.usage(join(dir, 'nope'))).rejects.toThrow(NotFoundError);
  });
});

describe('bindMount', () => {
  let staging: string;
  beforeEach(async () => {
    staging = join(dir, 'staging');
    await mkdir(staging);
  });

  it('bind-mounts a staging directory and confirms it in mountinfo', async () => {
    await writeMountInfo([mountLine(staging)]);
    const { manager } = setup([{ argv: ['mount', '--bind', staging, target] }], {
      mount: [mountLine(staging), mountLine(target, { id: 101 })],
    });
    expect(await manager.bindMount(staging, target)).toEqual({ changed: true });
  });

  it('passes -o ro for a read-only bind mount', async () => {
    await writeMountInfo([mountLine(staging)]);
    const { manager } = setup([{ argv: ['mount', '--bind', '-o', 'ro', staging, target] }], {
      mount: [mountLine(staging), mountLine(target, { id: 101, ro: true })],
    });
    expect(await manager.bindMount(staging, target, { readonly: true })).toEqual({
      changed: true,
    });
  });

  it('binds a device node onto a file, matched by its subtree of /dev', async () => {
    const devDir = join(dir, 'dev');
    await mkdir(devDir);
    const node = join(devDir, 'node');
    const file = join(dir, 'block-target');
    await writeFile(node, '');
    await writeFile(file, '');
    const devMount = `30 22 0:5 / ${devDir} rw,nosuid shared:2 - devtmpfs udev rw`;
    await writeMountInfo([devMount]);
    const { manager } = setup([{ argv: ['mount', '--bind', node, file] }], {
      mount: [devMount, `31 22 0:5 /node ${file} rw,nosuid shared:2 - devtmpfs udev rw`],
    });
    expect(await manager.bindMount(node, file)).toEqual({ changed: true });
  });

  it('is a no-op when the same bind mount is there with the same flag', async () => {
    await writeMountInfo([mountLine(staging), mountLine(target, { id: 101, ro: true })]);
    const { manager } = setup([]);
    expect(await manager.bindMount(staging, target, { readonly: true })).toEqual({
      changed: false,
    });
  });

  it('throws AlreadyExistsError for another flag or another source on the target', async () => {
    await writeMountInfo([mountLine(staging), mountLine(target, { id: 101 })]);
    const { manager } = setup([]);
    await expect(manager.bindMount(staging, target, { readonly: true })).rejects.toThrow(
      AlreadyExistsError,
    );
    await writeMountInfo([mountLine(staging), mountLine(target, { id: 101, dev: '253:9' })]);
    await expect(manager.bindMount(staging, target)).rejects.toThrow(
      /is already a mount point: .*253:9/,
    );
  });

  it('fails when the bind mount does not show up afterwards', async () => {
    await writeMountInfo([mountLine(staging)]);
    const { manager } = setup([{ argv: ['mount', '--bind', staging, target] }]);
    await expect(manager.bindMount(staging, target)).rejects.toThrow(FailedPreconditionError);
  });

  it('throws NotFoundError for a missing source or target', async () => {
    const { manager } = setup([]);
    await expect(manager.bindMount(join(dir, 'nope'), target)).rejects.toThrow(NotFoundError);
    await expect(manager.bindMount(staging, join(dir, 'nope'))).rejects.toThrow(NotFoundError);
  });
});
