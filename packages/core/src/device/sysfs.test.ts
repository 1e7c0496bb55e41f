import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FailedPreconditionError } from '../errors.js';

// readFile counted: how many sysfs files are read at once (each read waits a moment)
const reading = vi.hoisted(() => ({ now: 0, most: 0, total: 0, fail: new Map<string, string>() }));
vi.mock('node:fs/promises', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:fs/promises')>();
  return {
    ...actual,
    readFile: async (...args: Parameters<typeof actual.readFile>) => {
      reading.now += 1;
      reading.total += 1;
      reading.most = Math.max(reading.most, reading.now);
      try {
        await new Promise((resolve) => setTimeout(resolve, 1));
        const code = typeof args[0] === 'string' ? reading.fail.get(args[0]) : undefined;
        if (code !== undefined) throw Object.assign(new Error(`${code}: injected`), { code });
        return await actual.readFile(...args);
      } finally {
        reading.now -= 1;
      }
    },
  };
});

const { SYSFS_READS_AT_ONCE, blockDeviceReadOnly, sysfsMaps, sysfsMapsWith } =
  await import('./sysfs.js');

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
  reading.fail.clear();
});

/** A host root whose sys/block holds dm-0 … dm-(count − 1), each an lvstamp map. */
function sysfsOf(count: number): string {
  const root = mkdtempSync(join(tmpdir(), 'lvstamp-sysfs-'));
  roots.push(root);
  for (let minor = 0; minor < count; minor++) {
    const dir = join(root, 'sys/block', `dm-${minor}`);
    mkdirSync(join(dir, 'dm'), { recursive: true });
    writeFileSync(join(dir, 'dm/name'), `map${minor}\n`);
    writeFileSync(join(dir, 'dm/uuid'), `LVSTAMP-${minor}\n`);
    writeFileSync(join(dir, 'dev'), `253:${minor}\n`);
  }
  mkdirSync(join(root, 'sys/block/loop0'), { recursive: true });
  return root;
}

describe('sysfsMaps', () => {
  it('lists every dm device by name, uuid and device number', async () => {
    const maps = await sysfsMaps(sysfsOf(2));
    expect(maps.sort((a, b) => a.minor - b.minor)).toEqual([
      { name: 'map0', uuid: 'LVSTAMP-0', major: 253, minor: 0 },
      { name: 'map1', uuid: 'LVSTAMP-1', major: 253, minor: 1 },
    ]);
  });

  it(`reads at most ${SYSFS_READS_AT_ONCE} files at once, however many scans run together`, async () => {
    const root = sysfsOf(40);
    reading.most = 0;
    const scans = await Promise.all(Array.from({ length: 16 }, () => sysfsMaps(root)));
    expect(scans.map((maps) => maps.length)).toEqual(Array.from({ length: 16 }, () => 40));
    expect(reading.most).toBe(SYSFS_READS_AT_ONCE);
  });

  it('leaves out a device that went away while it was read (its files gone)', async () => {
    const root = sysfsOf(2);
    rmSync(join(root, 'sys/block/dm-1/dm/uuid'));
    expect(await sysfsMaps(root)).toEqual([
      { name: 'map0', uuid: 'LVSTAMP-0', major: 253, minor: 0 },
    ]);
  });

  it('leaves out a dm device being removed: its dm/ files answer EINVAL (drivers/md/dm-sysfs.c)', async () => {
    const root = sysfsOf(2);
    reading.fail.set(join(root, 'sys/block/dm-1/dm/uuid'), 'EINVAL');
    expect(await sysfsMaps(root)).toEqual([
      { name: 'map0', uuid: 'LVSTAMP-0', major: 253, minor: 0 },
    ]);
    expect(await sysfsMapsWith(root, 'name', 'map1')).toEqual([]);
  });

  it('EINVAL from a file outside dm/, EMFILE or EIO from any: an error naming the file', async () => {
    for (const [file, code] of [
      ['dev', 'EINVAL'],
      ['dm/name', 'EMFILE'],
      ['dm/uuid', 'EIO'],
    ] as const) {
      const root = sysfsOf(2);
      const path = join(root, 'sys/block/dm-1', file);
      reading.fail.set(path, code);
      await expect(sysfsMaps(root)).rejects.toThrow(
        new FailedPreconditionError(`cannot read ${path}: ${code}: injected`),
      );
    }
  });

  it('a file that cannot be read for another reason is an error naming it, never "no device"', async () => {
    const root = sysfsOf(2);
    const path = join(root, 'sys/block/dm-1/dm/name');
    rmSync(path);
    mkdirSync(path); // EISDIR, as EMFILE or EIO would be: nothing proves the device absent
    const error = await sysfsMaps(root).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FailedPreconditionError);
    expect((error as Error).message).toMatch(new RegExp(`^cannot read ${path}: .*EISDIR`));
  });
});

describe('sysfsMapsWith', () => {
  it('finds the map of one name or uuid, reading one file per device and the rest of the match only', async () => {
    const root = sysfsOf(10);
    reading.total = 0;
    expect(await sysfsMapsWith(root, 'uuid', 'LVSTAMP-7')).toEqual([
      { name: 'map7', uuid: 'LVSTAMP-7', major: 253, minor: 7 },
    ]);
    expect(reading.total).toBe(10 + 3);
    expect(await sysfsMapsWith(root, 'name', 'map3')).toEqual([
      { name: 'map3', uuid: 'LVSTAMP-3', major: 253, minor: 3 },
    ]);
    expect(await sysfsMapsWith(root, 'name', 'map')).toEqual([]);
  });

  it('is an error, never "none", when a file cannot be read', async () => {
    const root = sysfsOf(2);
    const path = join(root, 'sys/block/dm-0/dm/uuid');
    rmSync(path);
    mkdirSync(path);
    await expect(sysfsMapsWith(root, 'uuid', 'LVSTAMP-1')).rejects.toThrow(FailedPreconditionError);
  });
});

describe('blockDeviceReadOnly', () => {
  function withRo(text: string | null): string {
    const root = mkdtempSync(join(tmpdir(), 'lvstamp-sysfs-'));
    roots.push(root);
    mkdirSync(join(root, 'sys/dev/block/7:3'), { recursive: true });
    if (text !== null) writeFileSync(join(root, 'sys/dev/block/7:3/ro'), text);
    return root;
  }
  const LOOP3 = { major: 7, minor: 3 };

  it('reads sys/dev/block/<major>:<minor>/ro under the host root: 1 read-only, 0 writable', async () => {
    expect(await blockDeviceReadOnly(withRo('1\n'), LOOP3)).toBe(true);
    expect(await blockDeviceReadOnly(withRo('0\n'), LOOP3)).toBe(false);
  });

  it('a flag it cannot read, or that is neither 0 nor 1, is FailedPreconditionError naming the file', async () => {
    const missing = withRo(null);
    await expect(blockDeviceReadOnly(missing, LOOP3)).rejects.toThrow(
      new FailedPreconditionError(
        `cannot read ${missing}/sys/dev/block/7:3/ro: ENOENT: no such file or directory, open '${missing}/sys/dev/block/7:3/ro'`,
      ),
    );
    const odd = withRo('yes\n');
    await expect(blockDeviceReadOnly(odd, LOOP3)).rejects.toThrow(
      `${odd}/sys/dev/block/7:3/ro holds "yes", not 0 or 1`,
    );
  });
});
