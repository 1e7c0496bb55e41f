import { afterEach, describe, expect, it } from 'vitest';
import {
  CommandFailedError,
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  UnparseableOutputError,
} from '../errors.js';
import { ReplayRunner, type ReplayStep } from '../exec/replay-runner.js';
import type { Naming } from '../naming.js';
import {
  DataDeviceManager,
  formatLinearTable,
  linearTableFor,
  parseDmInfo,
  parseLinearTable,
} from './data-device.js';
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

function setup(steps: ReplayStep[], onRun?: (argv: readonly string[]) => void, naming?: Naming) {
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
        stderr: 'Failure to communicate with kernel device-mapper driver.\n',
      },
    ]);
    await expect(manager.list()).rejects.toThrow(CommandFailedError);
  });
});

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

  it('creates the map, makes its node and checks the node by major:minor', async () => {
    const { manager, nodes } = setup(
      [
        infoFile('dmsetup-info-none.txt'),
        { argv: createArgv },
        info(lvMap + ourMap(3)),
        { argv: ['dmsetup', 'mknodes', NAME] },
      ],
      (argv) => {
        if (argv[1] === 'mknodes') nodes.nodes.set(PATH, { major: 253, minor: 3 });
      },
    );
    expect(await manager.create(ID, LV, MiB)).toEqual({ path: PATH, major: 253, minor: 3 });
    expect(nodes.lookups).toEqual([PATH, PATH]);
  });

  it('uses the 1 MiB data offset by default', async () => {
    const { manager, nodes } = setup([
      info(lvMap + ourMap(3)),
      { argv: ['dmsetup', 'table', NAME], stdout: `${TABLE}\n` },
    ]);
    nodes.nodes.set(PATH, { major: 253, minor: 3 });
    expect(await manager.create(ID, LV)).toEqual({ path: PATH, major: 253, minor: 3 });
  });

  it('is a no-op for an existing map with the same table and a good node', async () => {
    const { manager, nodes } = setup([
      info(lvMap + ourMap(3)),
      { argv: ['dmsetup', 'table', NAME], stdoutFile: 'device/dmsetup-table-linear.txt' },
    ]);
    nodes.nodes.set(PATH, { major: 253, minor: 3 });
    expect(await manager.create(ID, LV, MiB)).toEqual({ path: PATH, major: 253, minor: 3 });
  });

  it('reloads and resumes an existing map with another table', async () => {
    const { manager, nodes } = setup([
      info(lvMap + ourMap(3)),
      { argv: ['dmsetup', 'table', NAME], stdout: '0 1024 linear 253:0 2048\n' },
      { argv: ['dmsetup', 'reload', NAME, '--table', TABLE] },
      { argv: ['dmsetup', 'resume', '--noudevsync', NAME] },
    ]);
    nodes.nodes.set(PATH, { major: 253, minor: 3 });
    expect(await manager.create(ID, LV, MiB)).toEqual({ path: PATH, major: 253, minor: 3 });
  });

  it('loads a table into a map left without one by an interrupted create', async () => {
    const { manager, nodes } = setup([
      info(ourMap(3)),
      { argv: ['dmsetup', 'table', NAME], stdout: '' },
      { argv: ['dmsetup', 'reload', NAME, '--table', TABLE] },
      { argv: ['dmsetup', 'resume', '--noudevsync', NAME] },
    ]);
    nodes.nodes.set(PATH, { major: 253, minor: 3 });
    expect(await manager.create(ID, LV, MiB)).toEqual({ path: PATH, major: 253, minor: 3 });
  });

  it('replaces a stale node that names another device', async () => {
    const { manager, nodes } = setup(
      [
        info(ourMap(3)),
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
    const { manager, nodes } = setup([
      info(ourMap(3)),
      { argv: ['dmsetup', 'table', NAME], stdout: `${TABLE}\n` },
      { argv: ['dmsetup', 'mknodes', NAME] },
    ]);
    nodes.nodes.set(PATH, { major: 253, minor: 7 });
    await expect(manager.create(ID, LV, MiB)).rejects.toThrow(
      new FailedPreconditionError(`${PATH} is device 253:7 after dmsetup mknodes, expected 253:3`),
    );
  });

  it('fails when no node appears', async () => {
    const { manager } = setup([
      info(ourMap(3)),
      { argv: ['dmsetup', 'table', NAME], stdout: `${TABLE}\n` },
      { argv: ['dmsetup', 'mknodes', NAME] },
    ]);
    await expect(manager.create(ID, LV, MiB)).rejects.toThrow(
      new FailedPreconditionError(`${PATH} is missing after dmsetup mknodes, expected 253:3`),
    );
  });

  it('refuses a map of our name with a foreign UUID, and our UUID under another name', async () => {
    const a = setup([info(`${NAME}|CRYPT-xyz|253|3|0\n`)]);
    await expect(a.manager.create(ID, LV, MiB)).rejects.toThrow(FailedPreconditionError);
    a.replay.assertDone();
    const b = setup([info(`other|LVSTAMP-${ID}|253|3|0\n`)]);
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
    const { manager } = setup([
      infoFile('dmsetup-info-none.txt'),
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

  it('refuses an open map with FailedPreconditionError', async () => {
    const { manager } = setup([info(ourMap(3, 2))]);
    await expect(manager.remove(ID)).rejects.toThrow(
      new FailedPreconditionError(
        `data device ${NAME} is open (2 holders); unmount or detach it first`,
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
