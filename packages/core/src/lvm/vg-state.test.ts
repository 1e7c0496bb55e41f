import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  CommandFailedError,
  CommandTimeoutError,
  FailedPreconditionError,
  STDERR_MESSAGE_BYTES,
  NotFoundError,
  OutOfSpaceError,
  VolumeGroupUnusableError,
} from '../errors.js';
import { CORE_FIXTURES_DIR, ReplayRunner, type ReplayStep } from '../testing/replay-runner.js';
import { NoopHostLock } from '../lock/host-lock.js';
import type { HeaderIo } from '../volumes/header-io.js';
import { volumeIdForName } from '../naming.js';
import { VolumeService } from '../volumes/service.js';
import { Lvm } from './lvm.js';
import { classifyLvmFailure, duplicatePvUuids, lvmMessage, problemsOfVgAttr } from './vg-state.js';
import { caught } from '../testing/caught.js';

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
function recorded(name: string, dir = RECORDED): Recording {
  const read = (ext: string) => readFileSync(`${dir}${name}.${ext}`, 'utf8');
  return { stdout: read('stdout'), stderr: read('stderr'), exitCode: Number(read('exit').trim()) };
}
// The look-up's lvm fullreport on the same kind of group, recorded with the exact argv below
// (fixtures/lvm/record-fullreport.sh: lvstamp_<ID> and an inactive lvstamp_new_<ID> in the group).
const fullReport = (name: string): Recording => recorded(name, `${CORE_FIXTURES_DIR}lvm/recorded/`);

// ---- exact argv ----
const REPORT = ['--reportformat', 'json', '--units', 'b', '--nosuffix'];
const FIELDS = ['-o', 'vg_name,vg_uuid,vg_size,vg_free,vg_extent_size,vg_tags,vg_attr'];
const VGS = ['vgs', ...REPORT, ...FIELDS, '-S', `vg_name="${VG}"`];
const VGS_SHARED = ['vgs', '--shared', ...REPORT, ...FIELDS, '-S', `vg_name="${VG}"`];
const PVS = ['pvs', ...REPORT, '-o', 'pv_uuid', '-S', `vg_name="${VG}"`];
// lvm settings the create protocol's lvcreate and lvrename carry (CREATE_PROTOCOL_CONFIG), spelled out
const PINNED = ['--config', 'global/use_lvmlockd=0 devices/allow_changes_with_duplicate_pvs=0'];
const LVCREATE = [
  'lvcreate',
  ...PINNED,
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
const inGroup = `vg_name="${VG}"`;
const NAMES = `lv_name="lvstamp_${ID}" || lv_name="lvstamp_new_${ID}"`;
const FULLREPORT = [
  'lvm',
  'fullreport',
  ...REPORT,
  '--config',
  'report/time_format="%s"',
  '--shared',
  '--configreport',
  'vg',
  ...FIELDS,
  '-S',
  inGroup,
  '--configreport',
  'pv',
  '-o',
  'pv_uuid,pv_name,pv_major,pv_minor',
  '-S',
  inGroup,
  '--configreport',
  'lv',
  '-o',
  'vg_name,lv_name,lv_uuid,lv_size,lv_attr,lv_kernel_major,lv_kernel_minor,lv_dm_path,lv_time,lv_tags',
  '-S',
  `(${inGroup}) && (${NAMES})`,
  '--configreport',
  'pvseg',
  '-o',
  'pvseg_start',
  '-S',
  'pvseg_start<0',
  '--configreport',
  'seg',
  '-o',
  'seg_start',
  '-S',
  'seg_start<0',
];

const step = (argv: readonly string[], name: string): ReplayStep => ({ argv, ...recorded(name) });
const lookupStep = (name: string): ReplayStep => ({ argv: FULLREPORT, ...fullReport(name) });
/**
 * A thick create in a scope of one group runs lvcreate before any look-up (createWithoutLookup),
 * and looks up only after lvm refused it: here lvm2's refusal, recorded (`lvcreate-*`) or, where
 * no recording exists, lvm2's text for it, exit 5 (both print "Cannot process volume group" after
 * the cause, as recorded for vgs in test-e2e/recorded/vgs-missing).
 */
const refusedLvcreate = (nameOrStderr: { recorded: string } | { stderr: string }): ReplayStep =>
  'recorded' in nameOrStderr
    ? step(LVCREATE, nameOrStderr.recorded)
    : { argv: LVCREATE, exitCode: 5, stderr: nameOrStderr.stderr };
const VG_NOT_FOUND = `  Volume group "${VG}" not found\n  Cannot process volume group ${VG}\n`;
const VG_EXPORTED = `  Volume group ${VG} is exported\n  Cannot process volume group ${VG}\n`;

const noHeaders: HeaderIo = {
  writeHeader: () => Promise.reject(new Error('unexpected header write')),
  clearDataArea: () => Promise.reject(new Error('unexpected clear')),
  readHeader: () => Promise.reject(new Error('unexpected header read')),
};

/**
 * sysfs as the test VM showed the recorded groups' PVs (loop0–loop3, 7:0–7:3), each device's
 * `ro` flag `0` unless listed in `readOnly`: the read-only check never reads the host's own.
 */
function sysfsRoot(readOnly: readonly string[] = []): string {
  const root = mkdtempSync(join(tmpdir(), 'lvstamp-vg-state-'));
  for (const device of ['7:0', '7:1', '7:2', '7:3']) {
    mkdirSync(join(root, 'sys/dev/block', device), { recursive: true });
    writeFileSync(
      join(root, 'sys/dev/block', device, 'ro'),
      readOnly.includes(device) ? '1\n' : '0\n',
    );
  }
  return root;
}

function setup(steps: ReplayStep[], hostRoot = sysfsRoot()) {
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
      find: () => Promise.resolve(null),
      create: unexpected,
      reload: unexpected,
      remove: unexpected,
      pathFor: () => '',
      targetOf: unexpected,
    },
    filesystems: { mounts: unexpected, grow: unexpected },
    hostRoot,
  });
  return { runner, manager };
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

  it('read-only PVs: lvm reports nothing wrong, sysfs does; the refused lvcreate is classified and the look-up names the PVs', async () => {
    // the recorded look-up on read-only PVs is the healthy one (same vg_attr, no warning); the
    // group's row without this volume's LVs is the healthy group's look-up of another volume
    expect(fullReport('fullreport-readonly-pv')).toEqual(fullReport('fullreport-found'));
    const { runner, manager } = setup(
      [refusedLvcreate({ recorded: 'lvcreate-readonly-pv' }), lookupStep('fullreport-nomatch')],
      sysfsRoot(['7:0', '7:1']),
    );
    const error = await caught(manager.createVolume(request));
    expect(error).toMatchObject({ name: 'VolumeGroupUnusableError', problem: 'read-only' });
    expect((error as Error).message).toBe(
      `volume group ${VG} is unusable (read-only): the kernel holds PVs /dev/loop0 (7:0), /dev/loop1 (7:1) read-only (sysfs ro), so lvm cannot write the group's metadata`,
    );
    runner.assertDone();
  });

  it('read-only PVs: delete and expand are refused after the look-up, before any act', async () => {
    const scope = { vgNames: [VG], ownerId: OWNER };
    for (const act of [
      (m: VolumeService) => m.delete(ID, scope, { wipe: 'zero' }),
      (m: VolumeService) => m.expand(ID, 2 * request.requiredBytes, scope),
    ]) {
      // The look-up only: no header read, no dmsetup, no blkdiscard, no lvextend, no lvremove.
      const { runner, manager } = setup([lookupStep('fullreport-readonly-pv')], sysfsRoot(['7:1']));
      const error = await caught(act(manager));
      runner.assertDone();
      expect(error).toMatchObject({ name: 'VolumeGroupUnusableError', problem: 'read-only' });
      expect((error as Error).message).toContain('PV /dev/loop1 (7:1) read-only');
    }
  });

  it('an lvremove that cannot write the metadata is VolumeGroupUnusableError, not a bare command failure', async () => {
    const lvm = new Lvm({
      runner: new ReplayRunner([
        { argv: ['lvremove', '--yes', `${VG}/lvstamp_${ID}`], ...recorded('lvcreate-readonly-pv') },
      ]),
      hostLock: new NoopHostLock(),
    });
    const error = await caught(lvm.logicalVolumes.remove(VG, `lvstamp_${ID}`));
    expect(error).toMatchObject({ name: 'VolumeGroupUnusableError', problem: 'read-only' });
  });

  it('"insufficient free space" stays OutOfSpaceError', async () => {
    const stderr =
      '  Volume group "lvse2ebroken" has insufficient free space (110 extents): 17 required.\n';
    const { runner, manager } = setup([
      refusedLvcreate({ stderr }),
      lookupStep('fullreport-nomatch'),
      { argv: LVCREATE, exitCode: 5, stderr },
    ]);
    const error = await caught(manager.createVolume(request));
    expect(error).toBeInstanceOf(OutOfSpaceError);
    expect((error as Error).message).toContain('insufficient free space (110 extents)');
    runner.assertDone();
  });
});

describe('the look-up (one lvm fullreport, recorded) classifies a broken group as vgs did', () => {
  const scope = { vgNames: [VG], ownerId: OWNER };
  const lookUp = async (name: string) => {
    const { runner } = setup([]);
    const replay = new ReplayRunner([lookupStep(name)]);
    const lvm = new Lvm({ runner: replay, hostLock: new NoopHostLock() });
    const found = await lvm.logicalVolumes.inGroups([VG], {
      names: [`lvstamp_${ID}`, `lvstamp_new_${ID}`],
    });
    runner.assertDone();
    return { replay, lvm, found };
  };

  it('healthy: the group row, its PVs and both LVs of the volume from one process', async () => {
    const { replay, lvm, found } = await lookUp('fullreport-found');
    expect(found.groups).toMatchObject([
      { name: VG, uuid: 'rTGx6s-9jWm-oFKn-DxoD-abQr-rj9h-E9Vz2L', extentSizeBytes: 4194304 },
    ]);
    expect(found.lvs.map((lv) => [lv.lvName, lv.active])).toEqual([
      [`lvstamp_${ID}`, true],
      [`lvstamp_new_${ID}`, false],
    ]);
    expect(await lvm.volumeGroups.usable(VG, found)).toMatchObject({ name: VG });
    replay.assertDone();
  });

  it('a PV in no group on the node (its own report object) changes nothing: delete goes on to the header check', async () => {
    const { replay, found } = await lookUp('fullreport-orphan-pv');
    expect(found.groups.map((g) => g.name)).toEqual([VG]);
    replay.assertDone();
    // the delete reads the group as healthy and reaches the header (which this setup refuses to read)
    const { manager } = setup([lookupStep('fullreport-orphan-pv')]);
    await expect(manager.delete(ID, { vgNames: [VG], ownerId: OWNER })).rejects.toThrow(
      'unexpected header read',
    );
  });

  it('a missing group is NotFoundError from the one report (exit 0, no vg row), no second vgs', async () => {
    const { runner, manager } = setup([
      refusedLvcreate({ stderr: VG_NOT_FOUND }),
      lookupStep('fullreport-missing-vg'),
    ]);
    await expect(manager.createVolume(request)).rejects.toThrow(
      new NotFoundError(`volume group ${VG} does not exist`),
    );
    runner.assertDone();
  });

  it("a PV missing: VolumeGroupUnusableError (missing-pv) with lvm's warnings, nothing created", async () => {
    const { runner, manager } = setup([
      refusedLvcreate({ recorded: 'lvcreate-missing-pv' }),
      lookupStep('fullreport-missing-pv'),
    ]);
    const error = await caught(manager.createVolume(request));
    expect(error).toMatchObject({ name: 'VolumeGroupUnusableError', problem: 'missing-pv' });
    // the look-up's answer, as before the fast path (not lvcreate's refusal)
    expect((error as Error).message).toBe(
      `volume group ${VG} is unusable (missing-pv): vg_attr wz-pn-; ${lvmMessage(fullReport('fullreport-missing-pv').stderr)}`,
    );
    runner.assertDone();
  });

  it("this group's PV on two devices: duplicate-pv from the report's own pv rows, no pvs", async () => {
    const { runner, manager } = setup([
      refusedLvcreate({ recorded: 'lvcreate-duplicate-pv' }),
      lookupStep('fullreport-duplicate-pv'),
    ]);
    const error = await caught(manager.createVolume(request));
    expect(error).toMatchObject({ name: 'VolumeGroupUnusableError', problem: 'duplicate-pv' });
    expect((error as Error).message).toBe(
      `volume group ${VG} is unusable (duplicate-pv): ${lvmMessage(fullReport('fullreport-duplicate-pv').stderr)}`,
    );
    runner.assertDone();
  });

  it('delete and expand on that group answer as create does, naming both devices, before any act', async () => {
    const scope = { vgNames: [VG], ownerId: OWNER };
    for (const act of [
      (m: VolumeService) => m.delete(ID, scope, { wipe: 'zero' }),
      (m: VolumeService) => m.expand(ID, 2 * request.requiredBytes, scope),
    ]) {
      // The look-up only: no lvchange, no header read, no dmsetup, no blkdiscard, no lvremove.
      const { runner, manager } = setup([lookupStep('fullreport-duplicate-pv')]);
      const error = await caught(act(manager));
      runner.assertDone();
      expect(error).toBeInstanceOf(VolumeGroupUnusableError);
      expect(error).toMatchObject({ problem: 'duplicate-pv' });
      expect((error as Error).message).toContain('Not using device /dev/loop3 for PV');
      expect((error as Error).message).toContain('prefers device /dev/loop0');
    }
  });

  it('attach of an inactive volume there is refused the same way before its lvchange (an active one still attaches: no lvm change)', async () => {
    const rec = fullReport('fullreport-duplicate-pv');
    // the recorded row of lvstamp_<ID> as after a reboot without auto-activation
    const inactive = rec.stdout.replace(
      /("lv_name":"lvstamp_[0-9a-f]{32}", [^}]*"lv_attr":")-wi-a-----(", "lv_kernel_major":")254(", "lv_kernel_minor":")0"/,
      '$1-wi-------$2-1$3-1"',
    );
    expect(inactive).not.toBe(rec.stdout);
    const lookup: ReplayStep = { argv: FULLREPORT, ...rec, stdout: inactive };
    // the look-up, the look-up again under the host lock, and no lvchange
    const { runner, manager } = setup([lookup, lookup]);
    const error = await caught(manager.attach(ID, { vgNames: [VG], ownerId: OWNER }));
    runner.assertDone();
    expect(error).toBeInstanceOf(VolumeGroupUnusableError);
    expect((error as Error).message).toBe(
      `volume group ${VG} is unusable (duplicate-pv): ${lvmMessage(rec.stderr)}`,
    );
  });

  it("another group's PV on two devices leaves this group usable", async () => {
    const { replay, lvm, found } = await lookUp('fullreport-other-duplicate-pv');
    expect(await lvm.volumeGroups.usable(VG, found)).toMatchObject({ name: VG });
    replay.assertDone();
  });

  it('unusableIn: the groups of the one report lvm refuses to change, with the lines naming the devices, no further process', async () => {
    const cases: [string, string, string][] = [
      [
        'fullreport-missing-pv',
        'missing-pv',
        "WARNING: Couldn't find device with uuid 6NEb6J-4Q1E-PeUA-wt50-YZZ2-qHFv-d0S1Gc. | " +
          `WARNING: VG ${VG} is missing PV 6NEb6J-4Q1E-PeUA-wt50-YZZ2-qHFv-d0S1Gc (last written to /dev/loop1).`,
      ],
      [
        'fullreport-duplicate-pv',
        'duplicate-pv',
        'WARNING: Not using device /dev/loop3 for PV EyaZqw-E1gB-lhZS-caQC-vnyL-nDNB-LNeUsN. | ' +
          'WARNING: PV EyaZqw-E1gB-lhZS-caQC-vnyL-nDNB-LNeUsN prefers device /dev/loop0 because device is used by LV.',
      ],
      ['fullreport-exported', 'exported', 'vg_attr wzx-n-'],
    ];
    for (const [name, problem, detail] of cases) {
      const { replay, lvm, found } = await lookUp(name);
      expect(await lvm.volumeGroups.unusableIn(found)).toEqual([{ vgName: VG, problem, detail }]);
      replay.assertDone();
    }
    for (const name of ['fullreport-found', 'fullreport-other-duplicate-pv']) {
      const { replay, lvm, found } = await lookUp(name);
      expect(await lvm.volumeGroups.unusableIn(found)).toEqual([]);
      replay.assertDone();
    }
  });

  it('a report that lists no PV of the group asks pvs (a group always has one)', async () => {
    const rec = fullReport('fullreport-duplicate-pv');
    const noPvs = rec.stdout.replace(/"pv": \[[^\]]*\]/g, '"pv": [\n              ]');
    expect(noPvs).not.toBe(rec.stdout);
    const replay = new ReplayRunner([
      { argv: FULLREPORT, ...rec, stdout: noPvs },
      {
        argv: PVS,
        stdout: '{"report":[{"pv":[{"pv_uuid":"EyaZqw-E1gB-lhZS-caQC-vnyL-nDNB-LNeUsN"}]}]}',
      },
    ]);
    const lvm = new Lvm({ runner: replay, hostLock: new NoopHostLock() });
    const found = await lvm.logicalVolumes.inGroups([VG], {
      names: [`lvstamp_${ID}`, `lvstamp_new_${ID}`],
    });
    await expect(lvm.volumeGroups.usable(VG, found)).rejects.toMatchObject({
      problem: 'duplicate-pv',
    });
    replay.assertDone();
  });

  it('exported (vg_attr wzx-n-): VolumeGroupUnusableError (exported)', async () => {
    const { runner, manager } = setup([
      refusedLvcreate({ stderr: VG_EXPORTED }),
      lookupStep('fullreport-exported'),
    ]);
    const error = await caught(manager.createVolume(request));
    expect(error).toMatchObject({ name: 'VolumeGroupUnusableError', problem: 'exported' });
    expect((error as Error).message).toBe(
      `volume group ${VG} is unusable (exported): vg_attr wzx-n-`,
    );
    runner.assertDone();
  });

  it('shared (listed by --shared, vg_attr wz--ns): VolumeGroupUnusableError (shared), as the vgs --shared check said', async () => {
    const { runner, manager } = setup([
      refusedLvcreate({ recorded: 'lvcreate-shared' }),
      lookupStep('fullreport-shared'),
    ]);
    const error = await caught(manager.createVolume(request));
    expect(error).toMatchObject({ name: 'VolumeGroupUnusableError', problem: 'shared' });
    expect((error as Error).message).toBe(
      `volume group ${VG} is unusable (shared): vg_attr wz--ns: lvm skips a shared group on a node without lvmlockd`,
    );
    runner.assertDone();
  });

  it("a shared group's LVs stay unlisted (lvm without --shared skips the group): a delete finds nothing", async () => {
    const { runner, manager } = setup([lookupStep('fullreport-shared')]);
    expect(await manager.delete(ID, scope)).toEqual({ existed: false, removed: [] });
    runner.assertDone();
  });

  it('two groups of one name: FailedPreconditionError naming both vg_uuids, nothing else run', async () => {
    const { runner, manager } = setup([lookupStep('fullreport-duplicate-vg')]);
    const error = await caught(manager.delete(ID, scope));
    expect(error).toBeInstanceOf(FailedPreconditionError);
    expect((error as Error).message).toContain(
      `lvm sees 2 volume groups named ${VG} (vg_uuid s032To-Di5G-6UWQ-FygI-vMu1-DGH5-9LuFNE and rTGx6s-9jWm-oFKn-DxoD-abQr-rj9h-E9Vz2L)`,
    );
    runner.assertDone();
  });

  it('an lvm failure is CommandFailedError, a deadline CommandTimeoutError, never "not found"', async () => {
    const failed = setup([
      { argv: FULLREPORT, exitCode: 5, stdout: '{"report": []}', stderr: '  Global lock failed\n' },
    ]);
    const error = await caught(failed.manager.delete(ID, scope));
    expect(error).toBeInstanceOf(CommandFailedError);
    failed.runner.assertDone();
    // lvm refused the lvcreate ("not found"), the look-up that tells why ran past its deadline
    const late = setup([
      refusedLvcreate({ stderr: VG_NOT_FOUND }),
      { argv: FULLREPORT, timeout: true },
    ]);
    await expect(late.manager.createVolume(request)).rejects.toBeInstanceOf(CommandTimeoutError);
    late.runner.assertDone();
    // the lvcreate itself past its deadline: thrown as it is, no look-up
    const lateCreate = setup([{ argv: LVCREATE, timeout: true }]);
    const timedOut = await caught(lateCreate.manager.createVolume(request));
    expect(timedOut).toBeInstanceOf(CommandTimeoutError);
    expect(timedOut).toMatchObject({ argv: LVCREATE });
    lateCreate.runner.assertDone();
  });
});

describe('a create without the look-up answers as the look-up path did', () => {
  it('two groups of one name (a copy, or a nested group): lvcreate refused, the look-up names both vg_uuids, nothing made', async () => {
    const { runner, manager } = setup([
      // lvm2 2.03.16 for any command that names the group (docs/FACTS.md "Two volume groups")
      refusedLvcreate({
        stderr: `  WARNING: VG name ${VG} is used by VGs s032To-Di5G-6UWQ-FygI-vMu1-DGH5-9LuFNE and rTGx6s-9jWm-oFKn-DxoD-abQr-rj9h-E9Vz2L.\n  Multiple VGs found with the same name: skipping ${VG}\n  Use --select vg_uuid=<uuid> in place of the VG name.\n`,
      }),
      lookupStep('fullreport-duplicate-vg'),
    ]);
    const error = await caught(manager.createVolume(request));
    runner.assertDone();
    expect(error).toBeInstanceOf(FailedPreconditionError);
    expect((error as Error).message).toContain(
      `lvm sees 2 volume groups named ${VG} (vg_uuid s032To-Di5G-6UWQ-FygI-vMu1-DGH5-9LuFNE and rTGx6s-9jWm-oFKn-DxoD-abQr-rj9h-E9Vz2L)`,
    );
  });
});
