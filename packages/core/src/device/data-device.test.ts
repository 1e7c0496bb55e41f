import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  CommandFailedError,
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  UnparseableOutputError,
} from '../errors.js';
import { ReplayRunner, type ReplayStep } from '../testing/replay-runner.js';
import type { Naming } from '../naming.js';
import { DataDeviceManager } from './data-device.js';
import {
  formatLinearTable,
  linearTableFor,
  parseConciseTables,
  parseDmInfo,
  parseLinearTable,
} from './dm-tables.js';
import type { GcDevicePort, GcDeviceRemoverPort } from '../gc/ports.js';
import type { DeviceNumber } from './types.js';

const ID = '9a1c5e0b3d7f4a2c8e6b1d0f2a4c6e07';
const ID2 = '0b7e2a9c4d6f8e1a3c5b7d9f0e2a4c6b';
const NAME = `lvstamp-${ID}`;
const PATH = `/dev/mapper/${NAME}`;
const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/** The LV behind ID: 253:0, 1 GiB + 1 MiB, so the data area is 1 GiB = 2097152 sectors. */
const LV = { kernelMajor: 253, kernelMinor: 0, sizeBytes: GiB + MiB };
const TABLE = '0 2097152 linear 253:0 2048';

const INFO = [
  'dmsetup',
  'info',
  '-c',
  '--noheadings',
  '--separator',
  '|',
  '-o',
  'name,uuid,major,minor,open',
];
const info = (stdout: string): ReplayStep => ({ argv: INFO, stdout });
const infoFile = (file: string): ReplayStep => ({ argv: INFO, stdoutFile: `device/${file}` });
const ourMap = (minor: number, open = 0): string => `${NAME}|LVSTAMP-${ID}|253|${minor}|${open}\n`;
const lvMap = `vg--data-lvstamp_${ID}|LVM-abc|253|0|1\n`;

/** A fake /dev: path → device number, changed by the steps of a test. */
class FakeNodes {
  readonly nodes = new Map<string, DeviceNumber>();
  readonly lookups: string[] = [];
  readonly lookup = (path: string): Promise<DeviceNumber | null> => {
    this.lookups.push(path);
    return Promise.resolve(this.nodes.get(path) ?? null);
  };
}

let runner: ReplayRunner | undefined;

function setup(
  steps: ReplayStep[],
  onRun?: (argv: readonly string[]) => void,
  naming?: Naming,
  hostRoot = '/nonexistent-host-root',
) {
  const replay = new ReplayRunner(steps);
  runner = replay;
  const nodes = new FakeNodes();
  const manager = new DataDeviceManager({
    runner: {
      run: async (argv, options) => {
        const result = await replay.run(argv, options);
        onRun?.(argv);
        return result;
      },
    },
    deviceNumberOf: nodes.lookup,
    hostRoot,
    ...(naming === undefined ? {} : { naming }),
  });
  return { manager, nodes, replay };
}

afterEach(() => {
  runner?.assertDone();
  runner = undefined;
});

describe('linearTableFor', () => {
  it('maps the data area after the offset, in 512-byte sectors', () => {
    expect(linearTableFor(LV, MiB)).toEqual({
      startSector: 0,
      sectors: 2097152,
      major: 253,
      minor: 0,
      offsetSectors: 2048,
    });
    expect(formatLinearTable(linearTableFor(LV, MiB))).toBe(TABLE);
  });

  it.each<[string, number, number]>([
    ['no data area', MiB, MiB],
    ['a negative data area', MiB - 512, MiB],
    ['a data area that is not whole sectors', MiB + 1000, MiB],
    ['an offset that is not whole sectors', GiB, 1000],
    ['a zero offset', GiB, 0],
    ['a fractional size', 1.5 * MiB + 0.5, MiB],
  ])('refuses %s with InvalidArgumentError', (_label, sizeBytes, offset) => {
    expect(() => linearTableFor({ ...LV, sizeBytes }, offset)).toThrow(InvalidArgumentError);
  });

  it('maps exactly the capacity when given, leaving the extent slack behind it unmapped', () => {
    const lv = { ...LV, sizeBytes: GiB + 4 * MiB };
    expect(formatLinearTable(linearTableFor(lv, MiB, GiB))).toBe('0 2097152 linear 253:0 2048');
    expect(formatLinearTable(linearTableFor(lv, MiB, GiB + 3 * MiB))).toBe(
      '0 2103296 linear 253:0 2048',
    );
  });

  it.each<[string, number]>([
    ['a capacity beyond the LV', GiB + 3 * MiB + 4096],
    ['a capacity of 0', 0],
    ['a capacity that is not whole sectors', GiB + 100],
  ])('refuses %s with InvalidArgumentError', (_label, dataBytes) => {
    expect(() => linearTableFor({ ...LV, sizeBytes: GiB + 4 * MiB }, MiB, dataBytes)).toThrow(
      InvalidArgumentError,
    );
  });

  it('refuses an inactive LV with FailedPreconditionError', () => {
    expect(() => linearTableFor({ ...LV, kernelMajor: null, kernelMinor: null }, MiB)).toThrow(
      FailedPreconditionError,
    );
  });
});

describe('parseDmInfo', () => {
  const result = (stdout: string) => ({ argv: INFO, exitCode: 0, stdout, stderr: '' });

  it('reads every map, LV devices and maps without UUID included', async () => {
    const { manager } = setup([infoFile('dmsetup-info-mixed.txt')]);
    expect(await manager.listAll()).toEqual([
      {
        name: `vg--data-lvstamp_${ID}`,
        uuid: expect.stringMatching(/^LVM-/) as string,
        major: 253,
        minor: 0,
        openCount: 1,
      },
      { name: NAME, uuid: `LVSTAMP-${ID}`, major: 253, minor: 3, openCount: 1 },
      {
        name: `vg--data-lvstamp_${ID2}`,
        uuid: expect.stringMatching(/^LVM-/) as string,
        major: 253,
        minor: 1,
        openCount: 0,
      },
      { name: `lvstamp-${ID2}`, uuid: `LVSTAMP-${ID2}`, major: 253, minor: 4, openCount: 0 },
      { name: 'cryptswap', uuid: '', major: 253, minor: 2, openCount: 2 },
      { name: 'LVSTAMP-lookalike', uuid: 'LVSTAMP-not-an-id', major: 253, minor: 5, openCount: 0 },
    ]);
  });

  it('reads "No devices found" as no maps', () => {
    expect(parseDmInfo(result('No devices found\n'))).toEqual([]);
  });

  it.each([
    ['empty output', ''],
    ['four fields', 'a|b|253|0\n'],
    ['six fields', 'a|b|c|253|0|0\n'],
    ['a non-numeric major', 'a|b|x|0|0\n'],
    ['a negative open count', 'a|b|253|0|-1\n'],
    ['an empty name', '|b|253|0|0\n'],
    ['"No devices found" among maps', 'No devices found\na|b|253|0|0\n'],
  ])('throws UnparseableOutputError for %s', (_label, stdout) => {
    expect(() => parseDmInfo(result(stdout))).toThrow(UnparseableOutputError);
  });
});

describe('DataDeviceManager.list', () => {
  it('keeps only maps whose UUID is LVSTAMP-<id>, from one dmsetup info', async () => {
    const { manager } = setup([infoFile('dmsetup-info-mixed.txt')]);
    const asGcPorts: GcDevicePort & GcDeviceRemoverPort = manager;
    expect(asGcPorts).toBe(manager);
    expect(await manager.list()).toEqual([
      { name: NAME, uuid: `LVSTAMP-${ID}`, major: 253, minor: 3, openCount: 1, volumeId: ID },
      {
        name: `lvstamp-${ID2}`,
        uuid: `LVSTAMP-${ID2}`,
        major: 253,
        minor: 4,
        openCount: 0,
        volumeId: ID2,
      },
    ]);
  });

  it('honours a configured UUID prefix', async () => {
    const naming: Naming = {
      lvPrefix: 'x_',
      newLvPrefix: 'x_new_',
      snapshotLvPrefix: 'x_snap_',
      tag: 'x',
      dmNamePrefix: 'x-',
      dmUuidPrefix: 'X-',
    };
    const { manager } = setup(
      [info(`x-${ID}|X-${ID}|253|9|0\n${NAME}|LVSTAMP-${ID}|253|3|0\n`)],
      undefined,
      naming,
    );
    expect(await manager.list()).toEqual([
      { name: `x-${ID}`, uuid: `X-${ID}`, major: 253, minor: 9, openCount: 0, volumeId: ID },
    ]);
  });

  it('propagates a failed dmsetup as CommandFailedError, never as "no maps"', async () => {
    const { manager } = setup([
      {
        argv: INFO,
        exitCode: 1,
        // not root: libdevmapper says "Failure to communicate" for this too, but the driver is there
        stderr:
          '/dev/mapper/control: open failed: Permission denied\n' +
          'Failure to communicate with kernel device-mapper driver.\nCommand failed.\n',
      },
    ]);
    await expect(manager.list()).rejects.toThrow(CommandFailedError);
  });

  it('says in one line that the kernel has no device-mapper driver (docs/FACTS.md)', async () => {
    // dmsetup's stderr on the development host, whose kernel has no device-mapper
    const stderr =
      '/dev/mapper/control: open failed: No such device\n' +
      'Failure to communicate with kernel device-mapper driver.\n' +
      'Check that device-mapper is available in the kernel.\n' +
      'Incompatible libdevmapper 1.02.185 (2022-05-18) and kernel driver (unknown version).\n' +
      'Command failed.\n';
    const { manager } = setup([{ argv: INFO, exitCode: 1, stderr }]);
    const error = await manager.list().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FailedPreconditionError);
    expect((error as Error).message).toBe(
      "this host's kernel has no device-mapper driver (dmsetup info: /dev/mapper/control: open failed: No such device); " +
        'lvstamp volumes cannot be activated or listed with their data devices here: load the driver (modprobe dm_mod) or run lvstamp on a node that has it',
    );
    expect((error as Error).cause).toBeInstanceOf(CommandFailedError);
  });
});

/**
 * A host root whose sys/block holds the maps of `lines` (dmsetup info's
 * `name|uuid|major|minor|open`, the open count dropped: sysfs has none), as
 * the test VM shows them: `dm-<minor>/dm/name`, `dm/uuid`, `dev`.
 */
const sysfsRoots: string[] = [];
afterEach(() => {
  for (const root of sysfsRoots.splice(0)) rmSync(root, { recursive: true, force: true });
});
function sysfsWith(lines: string, root = mkdtempSync(join(tmpdir(), 'lvstamp-sysfs-'))): string {
  sysfsRoots.push(root);
  mkdirSync(join(root, 'sys/block/loop0'), { recursive: true });
  for (const line of lines.split('\n').filter((l) => l !== '')) {
    const [name = '', uuid = '', major = '', minor = ''] = line.split('|');
    const dir = join(root, 'sys/block', `dm-${minor}`);
    mkdirSync(join(dir, 'dm'), { recursive: true });
    writeFileSync(join(dir, 'dm/name'), `${name}\n`);
    writeFileSync(join(dir, 'dm/uuid'), `${uuid}\n`);
    writeFileSync(join(dir, 'dev'), `${major}:${minor}\n`);
  }
  return root;
}

describe('DataDeviceManager.create', () => {
  const createArgv = [
    'dmsetup',
    'create',
    NAME,
    '--uuid',
    `LVSTAMP-${ID}`,
    '--noudevsync',
    '--table',
    TABLE,
  ];
  /** setup over a sysfs that shows `maps` (dmsetup info lines). */
  const setupAt = (maps: string, steps: ReplayStep[], onRun?: (argv: readonly string[]) => void) =>
    setup(steps, onRun, undefined, sysfsWith(maps));

  it('creates the map, makes its node and checks the node by major:minor; the map is read from sysfs', async () => {
    const root = sysfsWith(lvMap);
    const { manager, nodes } = setup(
      [{ argv: createArgv }, { argv: ['dmsetup', 'mknodes', NAME] }],
      (argv) => {
        if (argv[1] === 'create') sysfsWith(ourMap(3), root);
        if (argv[1] === 'mknodes') nodes.nodes.set(PATH, { major: 253, minor: 3 });
      },
      undefined,
      root,
    );
    expect(await manager.create(ID, LV, MiB)).toEqual({ path: PATH, major: 253, minor: 3 });
    expect(nodes.lookups).toEqual([PATH, PATH]);
  });

  it('fails when dmsetup create succeeded but sysfs shows no map', async () => {
    const { manager } = setup([{ argv: createArgv }], undefined, undefined, sysfsWith(lvMap));
    await expect(manager.create(ID, LV, MiB)).rejects.toThrow(
      new FailedPreconditionError(`dmsetup create ${NAME} succeeded but the map is not listed`),
    );
  });

  it('uses the 1 MiB data offset by default', async () => {
    const { manager, nodes } = setupAt(lvMap + ourMap(3), [
      { argv: ['dmsetup', 'table', NAME], stdout: `${TABLE}\n` },
    ]);
    nodes.nodes.set(PATH, { major: 253, minor: 3 });
    expect(await manager.create(ID, LV)).toEqual({ path: PATH, major: 253, minor: 3 });
  });

  it('is a no-op for an existing map with the same table and a good node', async () => {
    const { manager, nodes } = setupAt(lvMap + ourMap(3), [
      { argv: ['dmsetup', 'table', NAME], stdoutFile: 'device/dmsetup-table-linear.txt' },
    ]);
    nodes.nodes.set(PATH, { major: 253, minor: 3 });
    expect(await manager.create(ID, LV, MiB)).toEqual({ path: PATH, major: 253, minor: 3 });
  });

  it('reloads and resumes an existing map with another table', async () => {
    const { manager, nodes } = setupAt(lvMap + ourMap(3), [
      { argv: ['dmsetup', 'table', NAME], stdout: '0 1024 linear 253:0 2048\n' },
      { argv: ['dmsetup', 'reload', NAME, '--table', TABLE] },
      { argv: ['dmsetup', 'resume', '--noudevsync', NAME] },
    ]);
    nodes.nodes.set(PATH, { major: 253, minor: 3 });
    expect(await manager.create(ID, LV, MiB)).toEqual({ path: PATH, major: 253, minor: 3 });
  });

  it('loads a table into a map left without one by an interrupted create', async () => {
    const { manager, nodes } = setupAt(ourMap(3), [
      { argv: ['dmsetup', 'table', NAME], stdout: '' },
      { argv: ['dmsetup', 'reload', NAME, '--table', TABLE] },
      { argv: ['dmsetup', 'resume', '--noudevsync', NAME] },
    ]);
    nodes.nodes.set(PATH, { major: 253, minor: 3 });
    expect(await manager.create(ID, LV, MiB)).toEqual({ path: PATH, major: 253, minor: 3 });
  });

  it('replaces a stale node that names another device', async () => {
    const { manager, nodes } = setupAt(
      ourMap(3),
      [
        { argv: ['dmsetup', 'table', NAME], stdout: `${TABLE}\n` },
        { argv: ['dmsetup', 'mknodes', NAME] },
      ],
      (argv) => {
        if (argv[1] === 'mknodes') nodes.nodes.set(PATH, { major: 253, minor: 3 });
      },
    );
    nodes.nodes.set(PATH, { major: 253, minor: 7 });
    expect(await manager.create(ID, LV, MiB)).toEqual({ path: PATH, major: 253, minor: 3 });
  });

  it('fails when the node still does not match after mknodes', async () => {
    const { manager, nodes } = setupAt(ourMap(3), [
      { argv: ['dmsetup', 'table', NAME], stdout: `${TABLE}\n` },
      { argv: ['dmsetup', 'mknodes', NAME] },
    ]);
    nodes.nodes.set(PATH, { major: 253, minor: 7 });
    await expect(manager.create(ID, LV, MiB)).rejects.toThrow(
      new FailedPreconditionError(`${PATH} is device 253:7 after dmsetup mknodes, expected 253:3`),
    );
  });

  it('fails when no node appears', async () => {
    const { manager } = setupAt(ourMap(3), [
      { argv: ['dmsetup', 'table', NAME], stdout: `${TABLE}\n` },
      { argv: ['dmsetup', 'mknodes', NAME] },
    ]);
    await expect(manager.create(ID, LV, MiB)).rejects.toThrow(
      new FailedPreconditionError(`${PATH} is missing after dmsetup mknodes, expected 253:3`),
    );
  });

  it('refuses a map of our name with a foreign UUID, and our UUID under another name', async () => {
    const a = setupAt(`${NAME}|CRYPT-xyz|253|3|0\n`, []);
    await expect(a.manager.create(ID, LV, MiB)).rejects.toThrow(FailedPreconditionError);
    a.replay.assertDone();
    const b = setupAt(`other|LVSTAMP-${ID}|253|3|0\n`, []);
    await expect(b.manager.create(ID, LV, MiB)).rejects.toThrow(FailedPreconditionError);
  });

  it('refuses a bad volume ID or an inactive LV before running anything', async () => {
    const { manager } = setup([]);
    await expect(manager.create('NOT-AN-ID', LV, MiB)).rejects.toThrow(InvalidArgumentError);
    await expect(manager.create(ID, { ...LV, kernelMajor: null }, MiB)).rejects.toThrow(
      FailedPreconditionError,
    );
    await expect(manager.create(ID, LV, MiB + 100)).rejects.toThrow(InvalidArgumentError);
  });

  it('propagates a failing dmsetup create', async () => {
    const { manager } = setupAt(lvMap, [
      {
        argv: createArgv,
        exitCode: 1,
        stderr: 'device-mapper: create ioctl on ... failed: Device or resource busy\n',
      },
    ]);
    await expect(manager.create(ID, LV, MiB)).rejects.toThrow(CommandFailedError);
  });
});

describe('DataDeviceManager.reload', () => {
  const GROWN = { ...LV, sizeBytes: 2 * GiB + MiB };

  it('loads the grown table and resumes', async () => {
    const { manager, nodes } = setup([
      info(ourMap(3, 1)),
      { argv: ['dmsetup', 'table', NAME], stdout: `${TABLE}\n` },
      { argv: ['dmsetup', 'reload', NAME, '--table', '0 4194304 linear 253:0 2048'] },
      { argv: ['dmsetup', 'resume', '--noudevsync', NAME] },
    ]);
    nodes.nodes.set(PATH, { major: 253, minor: 3 });
    expect(await manager.reload(ID, GROWN, MiB)).toEqual({ path: PATH, major: 253, minor: 3 });
  });

  it('does nothing when the table is already current (a retried resize)', async () => {
    const { manager, nodes } = setup([
      info(ourMap(3, 1)),
      { argv: ['dmsetup', 'table', NAME], stdout: '0 4194304 linear 253:0 2048\n' },
    ]);
    nodes.nodes.set(PATH, { major: 253, minor: 3 });
    expect(await manager.reload(ID, GROWN, MiB)).toEqual({ path: PATH, major: 253, minor: 3 });
  });

  it('throws NotFoundError when the map does not exist', async () => {
    const { manager } = setup([infoFile('dmsetup-info-none.txt')]);
    await expect(manager.reload(ID, GROWN, MiB)).rejects.toThrow(NotFoundError);
  });
});

describe('DataDeviceManager.remove', () => {
  it('removes the map and clears the node with mknodes', async () => {
    const { manager, nodes } = setup(
      [
        info(lvMap + ourMap(3)),
        { argv: ['dmsetup', 'remove', '--noudevsync', NAME] },
        { argv: ['dmsetup', 'mknodes', NAME] },
      ],
      (argv) => {
        if (argv[1] === 'mknodes') nodes.nodes.delete(PATH);
      },
    );
    nodes.nodes.set(PATH, { major: 253, minor: 3 });
    await manager.remove(ID);
    expect(nodes.nodes.has(PATH)).toBe(false);
  });

  it('succeeds at once when the map and its node are absent', async () => {
    const { manager, nodes } = setup([infoFile('dmsetup-info-none.txt')]);
    await manager.remove(ID);
    expect(nodes.lookups).toEqual([PATH]);
  });

  it('clears a stale node left by an interrupted remove', async () => {
    const { manager, nodes } = setup([info(lvMap), { argv: ['dmsetup', 'mknodes', NAME] }]);
    nodes.nodes.set(PATH, { major: 253, minor: 3 });
    await manager.remove(ID);
  });

  it('refuses an open map with FailedPreconditionError naming its holders and mounts', async () => {
    const root = mkdtempSync(join(tmpdir(), 'lvstamp-dd-'));
    try {
      mkdirSync(join(root, 'sys/dev/block'), { recursive: true });
      symlinkSync('../../block/dm-3', join(root, 'sys/dev/block/253:3'));
      mkdirSync(join(root, 'sys/block/dm-3/holders'), { recursive: true });
      mkdirSync(join(root, 'sys/block/loop4'), { recursive: true });
      writeFileSync(join(root, 'sys/block/loop4/dev'), '7:4\n');
      symlinkSync('../../loop4', join(root, 'sys/block/dm-3/holders/loop4'));
      mkdirSync(join(root, 'proc/self'), { recursive: true });
      writeFileSync(
        join(root, 'proc/self/mountinfo'),
        '97 22 253:3 / /stage/a rw,relatime - ext4 /dev/mapper/x rw\n',
      );
      const { manager } = setup([info(ourMap(3, 2))], undefined, undefined, root);
      await expect(manager.remove(ID)).rejects.toThrow(
        new FailedPreconditionError(
          `data device ${NAME} is open (2 holders: held by loop4; mounted: dm-3 on /stage/a (ext4)); unmount or detach it first`,
        ),
      );
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('says so when the holders of an open map cannot be found', async () => {
    const { manager } = setup([info(ourMap(3, 1))]);
    await expect(manager.remove(ID)).rejects.toThrow(
      new FailedPreconditionError(
        `data device ${NAME} is open (1 holder: no holder or mount of 253:3 found in sysfs or mountinfo: a process may hold it open (fuser -v on its device)); unmount or detach it first`,
      ),
    );
  });

  it('fails when the node survives remove and mknodes', async () => {
    const { manager, nodes } = setup([
      info(ourMap(3)),
      { argv: ['dmsetup', 'remove', '--noudevsync', NAME] },
      { argv: ['dmsetup', 'mknodes', NAME] },
    ]);
    nodes.nodes.set(PATH, { major: 253, minor: 3 });
    await expect(manager.remove(ID)).rejects.toThrow(FailedPreconditionError);
  });
});

describe('DataDeviceManager.table / parseLinearTable', () => {
  it('reads the live table of an existing map', async () => {
    const { manager } = setup([
      info(ourMap(3)),
      { argv: ['dmsetup', 'table', NAME], stdoutFile: 'device/dmsetup-table-linear.txt' },
    ]);
    expect(await manager.table(ID)).toEqual({
      startSector: 0,
      sectors: 2097152,
      major: 253,
      minor: 0,
      offsetSectors: 2048,
    });
  });

  it('finds the map by UUID, whatever its name', async () => {
    const { manager } = setup([
      info(`renamed|LVSTAMP-${ID}|253|3|0\n`),
      { argv: ['dmsetup', 'table', 'renamed'], stdout: `${TABLE}\n` },
    ]);
    expect(await manager.table(ID)).toMatchObject({ sectors: 2097152, offsetSectors: 2048 });
  });

  it('is null for an absent map, without asking for a table', async () => {
    const { manager } = setup([info(lvMap)]);
    expect(await manager.table(ID)).toBeNull();
  });

  it.each(['dmsetup-table-two-segments.txt', 'dmsetup-table-striped.txt'])(
    'throws UnparseableOutputError for %s',
    async (file) => {
      const { manager } = setup([
        info(ourMap(3)),
        { argv: ['dmsetup', 'table', NAME], stdoutFile: `device/${file}` },
      ]);
      await expect(manager.table(ID)).rejects.toThrow(UnparseableOutputError);
    },
  );

  it('rejects numbers beyond 2^53', () => {
    const result = {
      argv: ['dmsetup', 'table', NAME],
      exitCode: 0,
      stdout: '0 99999999999999999999 linear 253:0 2048\n',
      stderr: '',
    };
    expect(() => parseLinearTable(result)).toThrow(UnparseableOutputError);
  });
});

/**
 * Recorded in the test VM by fixtures/device/record-dmsetup-table.sh (lvm2
 * 2.03.16, kernel 6.1): two LVs (254:0, 254:1) and, over them, the maps below
 * plus foreign maps named `foreign:colon`, `foreign,comma;semi\back` and
 * `lvstamp-<LINEAR>: 0 8 linear 7:0 0`.
 */
describe('DataDeviceManager.tables / parseConciseTables (recorded)', () => {
  const LINEAR = '9a1c0d3b5e7f4a2c8b6d1e0f3a5c7e0b'; // 0 30720 linear 254:0 2048
  const SECOND = '0b7e5c3a1f2e4d6c8a0b9c7e5d3f1a2c'; // 0 30720 linear 254:1 2048
  const TWOSEG = '3c5e7a9b1d2f4e6a8c0b2d4f6e8a0c1b'; // two linear segments
  const NOTABLE = '4d6f8b0c2e3a5f7b9d1c3e5a7f9b1d2c'; // created with --notable
  const ERRTGT = '5e7a9c1d3f4b6a8c0e2d4f6b8a0c2e3d'; // 0 2048 error
  const RENAMED = '6f8b0d2e4a5c7b9d1f3e5a7c9b1d3f4e'; // UUID LVSTAMP-<id>, name renamed-data-device
  const NOUUID = '7a9c1e3f5b6d8c0a2f4e6b8d0c2a4f5b'; // name lvstamp-<id>, no UUID
  const ABSENT = 'f'.repeat(32);
  const TABLES = ['dmsetup', 'table', '--concise'];
  const recorded = (name: string): ReplayStep => ({
    argv: TABLES,
    stdoutFile: `device/recorded/${name}.stdout`,
  });
  const concise = (stdout: string): ReplayStep => ({ argv: TABLES, stdout });
  const linear = (sectors: number, minor: number, offsetSectors: number) => ({
    startSector: 0,
    sectors,
    major: 254,
    minor,
    offsetSectors,
  });

  it('splits every map of the recorded output, undoing the backslash escapes', () => {
    const stdout = readFileSync(
      new URL('../../fixtures/device/recorded/mixed-table-concise.stdout', import.meta.url),
      'utf8',
    );
    const lvUuid = 'LVM-uKnWrXqeAeDeVtVUhSjr4kqx99L2slvyd';
    expect(parseConciseTables({ argv: TABLES, exitCode: 0, stdout, stderr: '' })).toEqual([
      {
        name: 'foreign:colon',
        uuid: '',
        minor: 9,
        readOnly: false,
        segments: ['0 2048 linear 254:0 8192'],
      },
      {
        name: 'foreign,comma;semi\\back',
        uuid: 'FOREIGN-uuid,with;separators',
        minor: 11,
        readOnly: false,
        segments: ['0 2048 zero '],
      },
      {
        name: `lvsdmrec-lvstamp_${SECOND}`,
        uuid: `${lvUuid}CXcHTpnkerlEAn0uzWskPXdOwiKzI2G`,
        minor: 1,
        readOnly: false,
        segments: ['0 32768 linear 7:0 34816'],
      },
      {
        name: `lvsdmrec-lvstamp_${LINEAR}`,
        uuid: `${lvUuid}We2fIyLTsp76uLNJVpj0ZgTCCGZ21NE`,
        minor: 0,
        readOnly: false,
        segments: ['0 32768 linear 7:0 2048'],
      },
      {
        name: `lvstamp-${SECOND}`,
        uuid: `LVSTAMP-${SECOND}`,
        minor: 3,
        readOnly: false,
        segments: ['0 30720 linear 254:1 2048'],
      },
      {
        name: `lvstamp-${TWOSEG}`,
        uuid: `LVSTAMP-${TWOSEG}`,
        minor: 4,
        readOnly: false,
        segments: ['0 1024 linear 254:0 2048', '1024 1024 linear 254:1 2048'],
      },
      {
        name: `lvstamp-${NOTABLE}`,
        uuid: `LVSTAMP-${NOTABLE}`,
        minor: 5,
        readOnly: false,
        segments: [],
      },
      {
        name: `lvstamp-${ERRTGT}`,
        uuid: `LVSTAMP-${ERRTGT}`,
        minor: 6,
        readOnly: false,
        segments: ['0 2048 error '],
      },
      {
        name: `lvstamp-${NOUUID}`,
        uuid: '',
        minor: 8,
        readOnly: false,
        segments: ['0 2048 linear 254:0 4096'],
      },
      {
        name: `lvstamp-${LINEAR}`,
        uuid: `LVSTAMP-${LINEAR}`,
        minor: 2,
        readOnly: false,
        segments: ['0 30720 linear 254:0 2048'],
      },
      {
        name: `lvstamp-${LINEAR}: 0 8 linear 7:0 0`,
        uuid: '',
        minor: 10,
        readOnly: false,
        segments: ['0 2048 linear 254:1 8192'],
      },
      {
        name: 'renamed-data-device',
        uuid: `LVSTAMP-${RENAMED}`,
        minor: 7,
        readOnly: false,
        segments: ['0 2048 linear 254:1 4096'],
      },
    ]);
  });

  it('reads the tables of many maps with one dmsetup table --concise, found by UUID', async () => {
    const { manager, replay } = setup([recorded('mixed-table-concise')]);
    const tables = await manager.tables([LINEAR, SECOND, RENAMED, NOTABLE, NOUUID, ABSENT, LINEAR]);
    expect(replay.calls.map((c) => c.argv)).toEqual([TABLES]);
    expect(tables).toEqual(
      new Map([
        // Not the foreign map named "lvstamp-<LINEAR>: 0 8 linear 7:0 0".
        [LINEAR, linear(30720, 0, 2048)],
        [SECOND, linear(30720, 1, 2048)],
        // By UUID, whatever the name (as table(id)).
        [RENAMED, linear(2048, 1, 4096)],
        // No live table: dmsetup prints name,uuid,minor,rw and nothing more.
        [NOTABLE, null],
        // A map named lvstamp-<id> without the UUID is not the data device.
        [NOUUID, null],
        [ABSENT, null],
      ]),
    );
  });

  it.each([
    ['two segments', TWOSEG],
    ['an error target', ERRTGT],
  ])(
    'gives null for a map with %s (the GC keeps it) and still reads the others',
    async (_label, id) => {
      const { manager } = setup([recorded('mixed-table-concise')]);
      const tables = await manager.tables([LINEAR, id]);
      expect(tables.get(id)).toBeNull();
      expect(tables.get(LINEAR)).not.toBeNull();
    },
  );

  it('gives what table(id) gives for the recorded per-map outputs, null where table(id) refuses', async () => {
    const info = { argv: INFO, stdoutFile: 'device/recorded/mixed-info.stdout' };
    const one = (name: string, file: string): ReplayStep => ({
      argv: ['dmsetup', 'table', name],
      stdoutFile: `device/recorded/${file}.stdout`,
    });
    const { manager } = setup([
      info,
      one(`lvstamp-${NOTABLE}`, 'table-one-notable'),
      recorded('mixed-table-concise'),
      info,
      one(`lvstamp-${TWOSEG}`, 'table-one-twoseg'),
      recorded('mixed-table-concise'),
    ]);
    expect(await manager.table(NOTABLE)).toBeNull();
    expect((await manager.tables([NOTABLE])).get(NOTABLE)).toBeNull();
    // one map's table that is not one linear segment: table(id) refuses, tables() gives null
    const perMap = await manager.table(TWOSEG).catch((e: unknown) => e);
    expect(perMap).toBeInstanceOf(UnparseableOutputError);
    expect((await manager.tables([TWOSEG])).get(TWOSEG)).toBeNull();
  });

  it('reads "No devices found" (recorded) as no map: null for every ID', async () => {
    const { manager } = setup([recorded('none-table-concise')]);
    expect(await manager.tables([LINEAR])).toEqual(new Map([[LINEAR, null]]));
  });

  it('runs nothing for no IDs', async () => {
    const { manager, replay } = setup([]);
    expect(await manager.tables([])).toEqual(new Map());
    expect(replay.calls).toEqual([]);
  });

  it('refuses a malformed ID before running anything', async () => {
    const { manager, replay } = setup([]);
    await expect(manager.tables([LINEAR, 'LVSTAMP-x'])).rejects.toThrow(InvalidArgumentError);
    expect(replay.calls).toEqual([]);
  });

  it('propagates a failed dmsetup (a map removed while it walks the list)', async () => {
    const { manager } = setup([
      {
        argv: TABLES,
        exitCode: 1,
        stderr: `device-mapper: table ioctl on lvstamp-${LINEAR}  failed: No such device or address\nCommand failed.\n`,
      },
    ]);
    await expect(manager.tables([LINEAR])).rejects.toThrow(CommandFailedError);
  });

  it('throws UnparseableOutputError when two maps carry an asked-for UUID', async () => {
    const entry = `lvstamp-${LINEAR},LVSTAMP-${LINEAR},2,rw,0 30720 linear 254:0 2048`;
    const { manager } = setup([concise(`${entry};${entry.replace('lvstamp-', 'copy-')}\n`)]);
    await expect(manager.tables([LINEAR])).rejects.toThrow(UnparseableOutputError);
  });

  it('reads a read-only map and a name with an escaped separator at its end', () => {
    const stdout = `ro-map\\;,,3,ro,0 8 linear 254:0 0\n`;
    expect(parseConciseTables({ argv: TABLES, exitCode: 0, stdout, stderr: '' })).toEqual([
      { name: 'ro-map;', uuid: '', minor: 3, readOnly: true, segments: ['0 8 linear 254:0 0'] },
    ]);
  });

  it.each([
    ['empty output', ''],
    ['a lone newline', '\n'],
    ['three fields', 'a,b,3\n'],
    ['an empty name', ',b,3,rw\n'],
    ['a non-numeric minor', 'a,b,x,rw\n'],
    ['an unknown flag', 'a,b,3,rx,0 8 linear 254:0 0\n'],
    ['an empty segment', 'a,b,3,rw,\n'],
    ['a dangling backslash', 'a,b,3,rw,0 8 linear 254:0 0\\'],
    ['an empty device between separators', 'a,b,3,rw;;c,d,4,rw\n'],
    ['plain (non-concise) table output', `lvstamp-${LINEAR}: 0 30720 linear 254:0 2048\n`],
  ])('parseConciseTables throws UnparseableOutputError for %s', (_label, stdout) => {
    expect(() => parseConciseTables({ argv: TABLES, exitCode: 0, stdout, stderr: '' })).toThrow(
      UnparseableOutputError,
    );
  });

  it('parses the recorded dmsetup info of the same node (names with ":", "," and ";")', async () => {
    const { manager } = setup([{ argv: INFO, stdoutFile: 'device/recorded/mixed-info.stdout' }]);
    const maps = await manager.listAll();
    expect(maps).toHaveLength(12);
    expect(maps.filter((m) => m.uuid.startsWith('LVSTAMP-')).map((m) => [m.name, m.minor])).toEqual(
      [
        [`lvstamp-${SECOND}`, 3],
        [`lvstamp-${TWOSEG}`, 4],
        [`lvstamp-${NOTABLE}`, 5],
        [`lvstamp-${ERRTGT}`, 6],
        [`lvstamp-${LINEAR}`, 2],
        ['renamed-data-device', 7],
      ],
    );
    expect(maps).toContainEqual({
      name: 'foreign,comma;semi\\back',
      uuid: 'FOREIGN-uuid,with;separators',
      major: 254,
      minor: 11,
      openCount: 0,
    });
  });
});

describe('DataDeviceManager.targetOf (recorded table, sysfs)', () => {
  const LINEAR = '9a1c0d3b5e7f4a2c8b6d1e0f3a5c7e0b'; // 0 30720 linear 254:0 2048
  const NOTABLE = '4d6f8b0c2e3a5f7b9d1c3e5a7f9b1d2c'; // created with --notable
  const TABLES = ['dmsetup', 'table', '--concise'];
  const recorded: ReplayStep = {
    argv: TABLES,
    stdoutFile: 'device/recorded/mixed-table-concise.stdout',
  };
  /** A host root whose sys/dev/block holds these device numbers. */
  function hostRootWith(devices: readonly string[]): string {
    const root = mkdtempSync(join(tmpdir(), 'lvstamp-sysdev-'));
    mkdirSync(join(root, 'sys/dev/block'), { recursive: true });
    for (const dev of devices) symlinkSync('../../block/dm-0', join(root, 'sys/dev/block', dev));
    return root;
  }

  it('the target of the table, present while sys/dev/block/<major:minor> exists', async () => {
    const root = hostRootWith(['254:0', '254:2']);
    const { manager, replay } = setup([recorded], undefined, undefined, root);
    expect(await manager.targetOf(LINEAR)).toEqual({
      device: { major: 254, minor: 0 },
      present: true,
    });
    expect(replay.calls.map((c) => c.argv)).toEqual([TABLES]);
    rmSync(root, { recursive: true });
  });

  it('not present once the target device is gone', async () => {
    const root = hostRootWith(['254:2']);
    const { manager } = setup([recorded], undefined, undefined, root);
    expect(await manager.targetOf(LINEAR)).toEqual({
      device: { major: 254, minor: 0 },
      present: false,
    });
    rmSync(root, { recursive: true });
  });

  it('null for a map without a live table (it maps nothing)', async () => {
    const root = hostRootWith([]);
    const { manager } = setup([recorded], undefined, undefined, root);
    expect(await manager.targetOf(NOTABLE)).toBeNull();
    rmSync(root, { recursive: true });
  });

  it('no sysfs is an error, never "target gone"', async () => {
    const { manager } = setup([recorded]);
    await expect(manager.targetOf(LINEAR)).rejects.toThrow(
      new FailedPreconditionError('/nonexistent-host-root/sys/dev/block does not exist'),
    );
  });
});

describe('DataDeviceManager.find (sysfs, no process)', () => {
  const ID = '9a1c0d3b5e7f4a2c8b6d1e0f3a5c7e0b';
  /** A host root whose sys/block holds these dm devices (as the test VM showed them). */
  function hostRootWith(devices: Record<string, { name: string; uuid: string; dev: string }>) {
    const root = mkdtempSync(join(tmpdir(), 'lvstamp-sysfs-'));
    mkdirSync(join(root, 'sys/block/loop0'), { recursive: true });
    for (const [entry, d] of Object.entries(devices)) {
      mkdirSync(join(root, 'sys/block', entry, 'dm'), { recursive: true });
      writeFileSync(join(root, 'sys/block', entry, 'dm/name'), `${d.name}\n`);
      writeFileSync(join(root, 'sys/block', entry, 'dm/uuid'), `${d.uuid}\n`);
      writeFileSync(join(root, 'sys/block', entry, 'dev'), `${d.dev}\n`);
    }
    return root;
  }

  it('finds the map by its UUID among the LV maps, reading files only', async () => {
    const root = hostRootWith({
      'dm-0': { name: `lvsperf-lvstamp_${ID}`, uuid: 'LVM-Z2qeODhl96uF', dev: '254:0' },
      'dm-1': { name: `lvstamp-${ID}`, uuid: `LVSTAMP-${ID}`, dev: '254:1' },
    });
    const runner = new ReplayRunner([]);
    const manager = new DataDeviceManager({ runner, hostRoot: root });
    expect(await manager.find(ID)).toEqual({
      volumeId: ID,
      name: `lvstamp-${ID}`,
      major: 254,
      minor: 1,
    });
    expect(runner.calls).toEqual([]);
    rmSync(root, { recursive: true });
  });

  it('null when no map carries the UUID (only the LV is active)', async () => {
    const root = hostRootWith({
      'dm-0': { name: `lvsperf-lvstamp_${ID}`, uuid: 'LVM-Z2qeODhl96uF', dev: '254:0' },
    });
    const manager = new DataDeviceManager({ runner: new ReplayRunner([]), hostRoot: root });
    expect(await manager.find(ID)).toBeNull();
    rmSync(root, { recursive: true });
  });

  it('a sysfs that cannot be read is an error, never "no map"', async () => {
    const manager = new DataDeviceManager({
      runner: new ReplayRunner([]),
      hostRoot: '/nonexistent-host-root',
    });
    await expect(manager.find(ID)).rejects.toThrow(/cannot list/);
  });
});
