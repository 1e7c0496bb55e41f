import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  CommandFailedError,
  STDERR_MESSAGE_BYTES,
  NotFoundError,
  OutOfSpaceError,
  VolumeGroupUnusableError,
} from '../errors.js';
import { ReplayRunner, type ReplayStep } from '../testing/replay-runner.js';
import { NoopHostLock } from '../lock/host-lock.js';
import type { HeaderIo } from '../volumes/header-io.js';
import { volumeIdForName } from '../naming.js';
import { VolumeService } from '../volumes/service.js';
import { Lvm } from './lvm.js';
import { classifyLvmFailure, duplicatePvUuids, lvmMessage, problemsOfVgAttr } from './vg-state.js';

// Real lvm2 2.03.16 in the test VM (test-e2e/scripts/measure-lvm-config.sh): group lvse2ebroken
// of two PVs, one removed, one attached twice, both read-only, or marked shared (lock type dlm).
const RECORDED = fileURLToPath(new URL('../../../../test-e2e/recorded/', import.meta.url));
const VG = 'lvse2ebroken';
// 67 MiB + the 1 MiB data offset = 71303168 bytes, whole 4 MiB extents, as in the recording.
const request = {
  name: 'pvc-broken',
  requiredBytes: 67 * 1048576,
  vgName: VG,
  ownerId: '0'.repeat(32),
};
// The recordings used another volume ID; only their stdout, stderr and exit code are replayed.
const ID = volumeIdForName(request.name);
const OWNER = '00000000000000000000000000000000';

interface Recording {
  readonly stdout: string;
  readonly stderr: string;
  readonly exitCode: number;
}
function recorded(name: string): Recording {
  const read = (ext: string) => readFileSync(`${RECORDED}${name}.${ext}`, 'utf8');
  return { stdout: read('stdout'), stderr: read('stderr'), exitCode: Number(read('exit').trim()) };
}

// ---- exact argv ----
const REPORT = ['--reportformat', 'json', '--units', 'b', '--nosuffix'];
const FIELDS = ['-o', 'vg_name,vg_uuid,vg_size,vg_free,vg_extent_size,vg_tags,vg_attr'];
const VGS = ['vgs', ...REPORT, ...FIELDS, '-S', `vg_name="${VG}"`];
const VGS_SHARED = ['vgs', '--shared', ...REPORT, ...FIELDS, '-S', `vg_name="${VG}"`];
const PVS = ['pvs', ...REPORT, '-o', 'pv_uuid', '-S', `vg_name="${VG}"`];
const LOOKUP = [
  'lvs',
  ...REPORT,
  '--config',
  'report/time_format="%s"',
  '-o',
  'vg_name,lv_name,lv_uuid,lv_size,lv_attr,lv_kernel_major,lv_kernel_minor,lv_dm_path,lv_time,lv_tags',
  '-S',
  `(vg_name="${VG}") && (lv_name="lvstamp_${ID}" || lv_name="lvstamp_new_${ID}")`,
];
const LVCREATE = [
  'lvcreate',
  '--yes',
  '--wipesignatures',
  'y',
  '--zero',
  'y',
  '--activate',
  'y',
  '-n',
  `lvstamp_new_${ID}`,
  '-L',
  '71303168b',
  '--addtag',
  'lvstamp',
  '--addtag',
  `lvstamp.owner=${OWNER}`,
  VG,
];
const EMPTY_LVS = '{"report":[{"lv":[]}]}';

const step = (argv: readonly string[], name: string): ReplayStep => ({ argv, ...recorded(name) });

const noHeaders: HeaderIo = {
  writeHeader: () => Promise.reject(new Error('unexpected header write')),
  clearDataArea: () => Promise.reject(new Error('unexpected clear')),
  readHeader: () => Promise.reject(new Error('unexpected header read')),
};

function setup(steps: ReplayStep[]) {
  const runner = new ReplayRunner(steps);
  const hostLock = new NoopHostLock();
  const unexpected = () => Promise.reject(new Error('unexpected data device or mount call'));
  const manager = new VolumeService({
    lvm: new Lvm({ runner, hostLock }),
    runner,
    hostLock,
    headers: noHeaders,
    dataDevices: {
      list: unexpected,
      find: unexpected,
      create: unexpected,
      reload: unexpected,
      remove: unexpected,
      pathFor: () => '',
    },
    filesystems: { mounts: unexpected, grow: unexpected },
  });
  return { runner, manager };
}

async function caught(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: unknown) => error,
  );
}

describe('problemsOfVgAttr (vgs(8) vg_attr bits)', () => {
  it.each([
    ['wz--n-', []],
    ['wz-pn-', ['missing-pv']],
    ['rz--n-', ['read-only']],
    ['wzx-n-', ['exported']],
    ['wz--ns', ['shared']],
    ['wz--nc', ['shared']],
  ])('%s → %j', (attr, problems) => {
    expect(problemsOfVgAttr(attr)).toEqual(problems);
  });
});

describe('classifyLvmFailure, on lvcreate stderr recorded from lvm2 2.03.16', () => {
  it.each([
    ['lvcreate-missing-pv', 'missing-pv'],
    ['lvcreate-duplicate-pv', 'duplicate-pv'],
    ['lvcreate-readonly-pv', 'read-only'],
    ['lvcreate-shared', 'shared'],
  ])('%s → %s, with the whole message', (name, problem) => {
    const rec = recorded(name);
    const failure = new CommandFailedError({ argv: LVCREATE, ...rec });
    const error = classifyLvmFailure(VG, failure);
    expect(error).toBeInstanceOf(VolumeGroupUnusableError);
    expect(error).toMatchObject({ vgName: VG, problem, detail: lvmMessage(rec.stderr) });
    expect((error as Error).cause).toBe(failure);
  });

  it('leaves any other failure as it is', () => {
    const other = new CommandFailedError({
      argv: LVCREATE,
      exitCode: 5,
      stdout: '',
      stderr: '  Logical Volume "other" already exists in volume group "vg0"\n',
    });
    expect(classifyLvmFailure(VG, other)).toBe(other);
    const plain = new Error('x');
    expect(classifyLvmFailure(VG, plain)).toBe(plain);
  });

  it('keeps every line of stderr, bounded to 4 KiB', () => {
    const message = lvmMessage(recorded('lvcreate-missing-pv').stderr);
    expect(message.split(' | ')).toHaveLength(5);
    expect(message).toMatch(
      /^WARNING: Couldn't find device .* \| Cannot process volume group lvse2ebroken$/,
    );
    const long = lvmMessage(`first\n${'x'.repeat(10_000)}\nlast`);
    expect(Buffer.byteLength(long)).toBeLessThanOrEqual(STDERR_MESSAGE_BYTES);
    expect(long).toMatch(/^first \| x+ \[… \d+ bytes cut …\] x+ \| last$/);
  });

  it('reads the PV uuids lvm warns it sees twice', () => {
    expect(duplicatePvUuids(recorded('vgs-duplicate-pv').stderr)).toEqual([
      'DMgc9Z-XdlH-x9P0-byJ4-F6NI-8eWV-gcETWT',
    ]);
    expect(duplicatePvUuids(recorded('vgs-missing-pv').stderr)).toEqual([]);
  });
});

describe('VolumeService and VolumeGroups on a broken volume group', () => {
  it('healthy: capacity as usual', async () => {
    const { runner, manager } = setup([step(VGS, 'vgs-healthy')]);
    expect(await manager.capacity(VG)).toMatchObject({ vgName: VG, freeBytes: 461373440 });
    runner.assertDone();
  });

  it("a PV missing (vg_attr wz-pn-): capacity throws VolumeGroupUnusableError with lvm's warnings", async () => {
    const { runner, manager } = setup([step(VGS, 'vgs-missing-pv')]);
    const error = await caught(manager.capacity(VG));
    expect(error).toBeInstanceOf(VolumeGroupUnusableError);
    expect(error).toMatchObject({ problem: 'missing-pv' });
    expect((error as Error).message).toBe(
      `volume group ${VG} is unusable (missing-pv): vg_attr wz-pn-; ${lvmMessage(recorded('vgs-missing-pv').stderr)}`,
    );
    expect((error as Error).message).toContain(
      'is missing PV uoW5Bd-wRrK-ST8d-SgBF-MwY0-U4aa-RVu9lK',
    );
    runner.assertDone();
  });

  it('the same PV on two devices: one pvs tells the group owns it', async () => {
    const { runner, manager } = setup([
      step(VGS, 'vgs-duplicate-pv'),
      {
        argv: PVS,
        stdout:
          '{"report":[{"pv":[{"pv_uuid":"DMgc9Z-XdlH-x9P0-byJ4-F6NI-8eWV-gcETWT"},{"pv_uuid":"uoW5Bd-wRrK-ST8d-SgBF-MwY0-U4aa-RVu9lK"}]}]}',
      },
    ]);
    await expect(manager.capacity(VG)).rejects.toMatchObject({
      name: 'VolumeGroupUnusableError',
      problem: 'duplicate-pv',
    });
    runner.assertDone();
  });

  it("another group's duplicate PV leaves this group usable", async () => {
    const { runner, manager } = setup([
      step(VGS, 'vgs-duplicate-pv'),
      {
        argv: PVS,
        stdout: '{"report":[{"pv":[{"pv_uuid":"uoW5Bd-wRrK-ST8d-SgBF-MwY0-U4aa-RVu9lK"}]}]}',
      },
    ]);
    expect(await manager.capacity(VG)).toMatchObject({ vgName: VG });
    runner.assertDone();
  });

  it('a shared group, which vgs skips without a word: one vgs --shared tells it from a missing one', async () => {
    const { runner, manager } = setup([
      step(VGS, 'vgs-shared'),
      {
        argv: VGS_SHARED,
        stdout: `{"report":[{"vg":[{"vg_name":"${VG}", "vg_uuid":"VwkuNG-tZp9-U8qp-sQ3k-DtjK-H5E2-7Djkdz", "vg_size":"528482304", "vg_free":"461373440", "vg_extent_size":"4194304", "vg_tags":"", "vg_attr":"wz--ns"}]}]}`,
      },
    ]);
    await expect(manager.capacity(VG)).rejects.toMatchObject({
      name: 'VolumeGroupUnusableError',
      problem: 'shared',
    });
    runner.assertDone();
  });

  it('a missing group stays NotFoundError', async () => {
    const { manager } = setup([
      step(VGS, 'vgs-shared'),
      { argv: VGS_SHARED, stdout: '{"report":[{"vg":[]}]}' },
    ]);
    await expect(manager.capacity(VG)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('read-only PVs: vgs sees nothing wrong, lvcreate fails and is classified', async () => {
    const { runner, manager } = setup([
      step(VGS, 'vgs-readonly-pv'), // the look-up's report: the group's row and its warnings
      { argv: LOOKUP, stdout: EMPTY_LVS },
      step(LVCREATE, 'lvcreate-readonly-pv'),
    ]);
    const error = await caught(manager.createVolume(request));
    expect(error).toMatchObject({ name: 'VolumeGroupUnusableError', problem: 'read-only' });
    expect((error as Error).message).toContain('Failed to write VG lvse2ebroken.');
    runner.assertDone();
  });

  it('"insufficient free space" stays OutOfSpaceError', async () => {
    const { manager } = setup([
      step(VGS, 'vgs-healthy'), // the look-up's report: the group's row and its warnings
      { argv: LOOKUP, stdout: EMPTY_LVS },
      {
        argv: LVCREATE,
        exitCode: 5,
        stderr:
          '  Volume group "lvse2ebroken" has insufficient free space (110 extents): 17 required.\n',
      },
    ]);
    await expect(manager.createVolume(request)).rejects.toBeInstanceOf(OutOfSpaceError);
  });
});
