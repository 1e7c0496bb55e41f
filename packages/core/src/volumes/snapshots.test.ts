import { describe, expect, it } from 'vitest';
import {
  AlreadyExistsError,
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  NotOwnedError,
  OutOfRangeError,
  OutOfSpaceError,
  VolumeGroupUnusableError,
} from '../errors.js';
import type { DecodeResult, HeaderFields } from '../header/types.js';
import { NoopHostLock } from '../lock/host-lock.js';
import { Lvm } from '../lvm/lvm.js';
import { snapshotIdForName, volumeIdForName } from '../naming.js';
import { ReplayRunner, type ReplayStep } from '../testing/replay-runner.js';
import type { HeaderIo } from './header-io.js';
import { SnapshotService } from './snapshot-service.js';
import { ThickVolumeError } from './source.js';
import { caught } from '../testing/caught.js';

// ---- exact argv, spelled out here on purpose (not imported from the lvm module) ----
// lvm settings the create protocol's lvcreate and lvrename carry (CREATE_PROTOCOL_CONFIG), spelled out
const PINNED = ['--config', 'global/use_lvmlockd=0 devices/allow_changes_with_duplicate_pvs=0'];
const REPORT = ['--reportformat', 'json', '--units', 'b', '--nosuffix'];
const VGS = [
  'vgs',
  ...REPORT,
  '-o',
  'vg_name,vg_uuid,vg_size,vg_free,vg_extent_size,vg_tags,vg_attr',
];
const LVS = [
  'lvs',
  ...REPORT,
  '--config',
  'report/time_format="%s"',
  '-o',
  'vg_name,lv_name,lv_uuid,lv_size,lv_attr,lv_kernel_major,lv_kernel_minor,lv_dm_path,lv_time,lv_tags',
];
const MiB = 1024 * 1024;
const NOW = 1_732_900_000_000;
// The recorded thin fixtures' names (packages/core/fixtures/thin/README.md): group lvsthin,
// origin volume 9a1c…, owner all zeros.
const VG = 'lvsthin';
const OWNER = '0'.repeat(32);
const OTHER_OWNER = 'f'.repeat(32);
const VID = '9a1c0d3b5e7f4a2c8b6d1e0f3a5c7e0b';
const SOURCE_LV = `lvstamp_${VID}`;
const SOURCE_PATH = `/dev/mapper/${VG}-${SOURCE_LV}`;
const SNAP_NAME = 'snapshot-1';
const SID = snapshotIdForName(SNAP_NAME);
const SNAP_LV = `lvstamp_snap_${SID}`;
const SNAP_PATH = `/dev/mapper/${VG}-${SNAP_LV}`;
const SCOPE = { vgNames: [VG], ownerId: OWNER };
const CAPACITY = 60 * MiB; // a 64 MiB LV: 1 MiB header, 60 MiB data, extent slack
const SNAP_TAGS = [
  'lvstamp',
  `lvstamp.owner=${OWNER}`,
  `lvstamp.source=${VID}`,
  `lvstamp.size=${CAPACITY}`,
  `lvstamp.created=${NOW}`,
];

interface Row {
  name: string;
  attr: string;
  tags: readonly string[];
  size?: number;
  major?: number;
}

/** One `lvs` row as LV_REPORT_FIELDS asks, with the recorded thin attributes. */
function lvRow(row: Row): Record<string, string> {
  const active = row.attr[4] === 'a';
  return {
    vg_name: VG,
    lv_name: row.name,
    lv_uuid: `uuid-${row.name.length}-${row.name.slice(-6)}`,
    lv_size: String(row.size ?? 64 * MiB),
    lv_attr: row.attr,
    lv_kernel_major: active ? String(row.major ?? 254) : '-1',
    lv_kernel_minor: active ? '3' : '-1',
    lv_dm_path: `/dev/mapper/${VG}-${row.name}`,
    lv_time: '1732900000',
    lv_tags: row.tags.join(','),
  };
}
const lvsJson = (...rows: Row[]): string => JSON.stringify({ report: [{ lv: rows.map(lvRow) }] });
const VG_ROW = {
  vg_name: VG,
  vg_uuid: 'vg-uuid',
  vg_size: '8585740288',
  vg_free: '7000000000',
  vg_extent_size: '4194304',
  vg_tags: '',
  vg_attr: 'wz--n-',
};
const inVg = `vg_name="${VG}"`;

/**
 * The look-up (LogicalVolumes.inGroups): one `lvm fullreport` with the vg,
 * pv and lv sub-reports selected by the scope and the names, spelled out.
 */
const lookupArgv = (lvSelection: string): string[] => [
  'lvm',
  'fullreport',
  ...REPORT,
  '--config',
  'report/time_format="%s"',
  '--shared',
  '--configreport',
  'vg',
  '-o',
  VGS[VGS.length - 1] ?? '',
  '-S',
  inVg,
  '--configreport',
  'pv',
  '-o',
  'pv_uuid,pv_name,pv_major,pv_minor',
  '-S',
  inVg,
  '--configreport',
  'lv',
  '-o',
  LVS[LVS.length - 1] ?? '',
  '-S',
  `(${inVg}) && (${lvSelection})`,
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
const fullReport = (...rows: Row[]): string =>
  JSON.stringify({
    report: [
      {
        vg: [VG_ROW],
        pv: [{ pv_uuid: 'pv-1', pv_name: '/dev/pv', pv_major: '', pv_minor: '' }],
        lv: rows.map(lvRow),
        pvseg: [],
        seg: [],
      },
    ],
  });
const lvsStep = (names: readonly string[], ...rows: Row[]): ReplayStep => ({
  argv: lookupArgv(names.map((n) => `lv_name="${n}"`).join(' || ')),
  stdout: fullReport(...rows),
});
// lvm's warnings when the group's one PV (pv-1 in fullReport) is seen on two devices, as recorded
// in fixtures/lvm/recorded/fullreport-duplicate-pv.stderr, and the refusal create answers with.
const DUPLICATE_PV =
  '  WARNING: Not using device /dev/loop3 for PV pv-1.\n' +
  '  WARNING: PV pv-1 prefers device /dev/loop0 because device is used by LV.\n';
const DUPLICATE_PV_REFUSAL =
  `volume group ${VG} is unusable (duplicate-pv): WARNING: Not using device /dev/loop3 for PV pv-1. | ` +
  'WARNING: PV pv-1 prefers device /dev/loop0 because device is used by LV.';
const readBackStep = (...rows: Row[]): ReplayStep => ({
  argv: [...LVS, '-S', `lv_name="${rows[0]?.name ?? ''}"`, VG],
  stdout: lvsJson(...rows),
});

const OWN_TAGS = ['lvstamp', `lvstamp.owner=${OWNER}`];
// lv_attr values as recorded (snaps-fields, snap-ro-*): a thin volume, a read-only snapshot with
// the activation-skip flag, inactive and after `lvchange -ay -K`, and a thick LV.
const source: Row = { name: SOURCE_LV, attr: 'Vwi-a-tz--', tags: OWN_TAGS };
const snapInactive: Row = { name: SNAP_LV, attr: 'Vri---tz-k', tags: SNAP_TAGS };
const snapActive: Row = { name: SNAP_LV, attr: 'Vri-a-tz-k', tags: SNAP_TAGS };

const snapshotArgv = [
  'lvcreate',
  '--yes',
  '-s',
  '-pr',
  '-n',
  SNAP_LV,
  ...SNAP_TAGS.flatMap((t) => ['--addtag', t]),
  `${VG}/${SOURCE_LV}`,
];

function header(volumeId: string, name: string, capacity = CAPACITY, owner = OWNER): DecodeResult {
  return {
    status: 'ok',
    version: 2,
    header: {
      volumeId,
      ownerId: owner,
      createdAtMs: NOW - 1000,
      dataOffsetBytes: MiB,
      requestedBytes: capacity,
      name,
    },
  };
}

class FakeHeaderIo implements HeaderIo {
  readonly headers = new Map<string, DecodeResult>();
  readonly writes: { devicePath: string; header: HeaderFields }[] = [];
  readonly calls: string[] = [];

  clearDataArea(devicePath: string): Promise<void> {
    this.calls.push(`clear ${devicePath}`);
    return Promise.resolve();
  }

  writeHeader(devicePath: string, fields: HeaderFields): Promise<void> {
    this.calls.push(`write ${devicePath}`);
    this.writes.push({ devicePath, header: fields });
    return Promise.resolve();
  }

  readHeader(devicePath: string): Promise<DecodeResult> {
    this.calls.push(`read ${devicePath}`);
    return Promise.resolve(
      this.headers.get(devicePath) ?? { status: 'not-stamped', reason: 'no magic' },
    );
  }
}

function setup(
  steps: ReplayStep[],
  options: { mounted?: boolean; maps?: boolean } = {},
): { runner: ReplayRunner; headers: FakeHeaderIo; service: SnapshotService; warnings: string[] } {
  const runner = new ReplayRunner(steps);
  const hostLock = new NoopHostLock();
  const headers = new FakeHeaderIo();
  headers.headers.set(SOURCE_PATH, header(VID, 'pvc-origin'));
  const warnings: string[] = [];
  const device = { volumeId: VID, name: `lvstamp-${VID}`, major: 254, minor: 9 };
  const service = new SnapshotService({
    lvm: new Lvm({ runner, hostLock }),
    runner,
    hostLock,
    headers,
    dataDevices: {
      find: (id: string) => Promise.resolve(options.mounted && id === VID ? device : null),
      list: () =>
        Promise.resolve(
          options.maps ? [{ ...device, openCount: 1, uuid: `LVSTAMP-${VID}`, tables: [] }] : [],
        ),
    },
    filesystems: {
      mounts: () =>
        Promise.resolve(
          options.mounted || options.maps
            ? [
                {
                  mountId: 1,
                  parentId: 0,
                  major: 254,
                  minor: 9,
                  root: '/',
                  mountPoint: '/staging/a',
                  mountOptions: [],
                  optionalFields: [],
                  fsType: 'ext4',
                  source: `/dev/mapper/lvstamp-${VID}`,
                  superOptions: [],
                },
              ]
            : [],
        ),
    },
    clock: () => NOW,
    logger: { warn: (message) => void warnings.push(message) },
  });
  return { runner, headers, service, warnings };
}

describe('createSnapshot', () => {
  it('makes one read-only thin snapshot with all five tags in one lvcreate (recorded snap-ro-inactive), no header write, no read-back', async () => {
    const { runner, headers, service } = setup([
      lvsStep([SNAP_LV, SOURCE_LV], source),
      { argv: snapshotArgv, stdoutFile: 'thin/recorded/snap-ro-inactive.stdout' },
    ]);
    const snapshot = await service.createSnapshot({
      name: SNAP_NAME,
      sourceVolumeId: VID,
      scope: SCOPE,
    });
    runner.assertDone();
    expect(snapshot).toEqual({
      snapshotId: SID,
      vgName: VG,
      lvName: SNAP_LV,
      sourceVolumeId: VID,
      sizeBytes: CAPACITY,
      createdMs: NOW,
    });
    expect(headers.writes).toEqual([]);
    expect(headers.calls).toEqual([`read ${SOURCE_PATH}`]);
  });

  it('a retry finds its snapshot and answers with the tags values, without another lvcreate', async () => {
    const { runner, service } = setup([lvsStep([SNAP_LV, SOURCE_LV], source, snapInactive)]);
    const snapshot = await service.createSnapshot({
      name: SNAP_NAME,
      sourceVolumeId: VID,
      scope: SCOPE,
    });
    runner.assertDone();
    expect(snapshot).toMatchObject({ snapshotId: SID, sizeBytes: CAPACITY, createdMs: NOW });
  });

  it('the same name for another source is ALREADY_EXISTS', async () => {
    const other = 'b'.repeat(32);
    const { service } = setup([lvsStep([SNAP_LV, `lvstamp_${other}`], snapInactive)]);
    const error = await caught(
      service.createSnapshot({ name: SNAP_NAME, sourceVolumeId: other, scope: SCOPE }),
    );
    expect(error).toBeInstanceOf(AlreadyExistsError);
  });

  it('an absent source, a malformed ID and a source without this owner are NOT_FOUND, nothing created', async () => {
    const missing = setup([lvsStep([SNAP_LV, SOURCE_LV])]);
    expect(
      await caught(
        missing.service.createSnapshot({ name: SNAP_NAME, sourceVolumeId: VID, scope: SCOPE }),
      ),
    ).toBeInstanceOf(NotFoundError);
    missing.runner.assertDone();
    const malformed = setup([]);
    expect(
      await caught(
        malformed.service.createSnapshot({ name: SNAP_NAME, sourceVolumeId: 'x', scope: SCOPE }),
      ),
    ).toBeInstanceOf(NotFoundError);
    const foreign = setup([
      lvsStep([SNAP_LV, SOURCE_LV], {
        ...source,
        tags: ['lvstamp', `lvstamp.owner=${OTHER_OWNER}`],
      }),
    ]);
    expect(
      await caught(
        foreign.service.createSnapshot({ name: SNAP_NAME, sourceVolumeId: VID, scope: SCOPE }),
      ),
    ).toBeInstanceOf(NotFoundError);
    foreign.runner.assertDone();
  });

  it('a name over 128 bytes (CSI "Size Limits") is INVALID_ARGUMENT before any lvm command', async () => {
    const { runner, service } = setup([]);
    const error = await caught(
      service.createSnapshot({ name: 's'.repeat(129), sourceVolumeId: VID, scope: SCOPE }),
    );
    expect(error).toEqual(
      new InvalidArgumentError(
        'snapshot name must be 1–128 bytes of UTF-8, the CSI limit on a string field, got 129',
      ),
    );
    expect(runner.calls).toEqual([]);
  });

  it('a thick source is INVALID_ARGUMENT naming the LV, before any change', async () => {
    const { runner, service } = setup([
      lvsStep([SNAP_LV, SOURCE_LV], { ...source, attr: '-wi-a-----' }),
    ]);
    const error = await caught(
      service.createSnapshot({ name: SNAP_NAME, sourceVolumeId: VID, scope: SCOPE }),
    );
    runner.assertDone();
    expect(error).toBeInstanceOf(ThickVolumeError);
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect((error as Error).message).toMatch(/thick logical volume lvsthin\/lvstamp_9a1c/);
  });

  it("a source whose header is another volume's is NotOwnedError('header-id') as in attach, expand and delete; nothing created", async () => {
    const { runner, headers, service } = setup([lvsStep([SNAP_LV, SOURCE_LV], source)]);
    headers.headers.set(SOURCE_PATH, header('c'.repeat(32), 'other'));
    const error = await caught(
      service.createSnapshot({ name: SNAP_NAME, sourceVolumeId: VID, scope: SCOPE }),
    );
    runner.assertDone();
    expect(error).toBeInstanceOf(NotOwnedError);
    expect(error).toMatchObject({ check: 'header-id', lv: `${VG}/${SOURCE_LV}` });
    expect((error as Error).message).toBe(
      `${VG}/${SOURCE_LV} is not provably this installation's volume: refusing to snapshot: its header belongs to volume ${'c'.repeat(32)}, not ${VID}; left untouched`,
    );
  });

  it('on a group whose PV lvm sees twice: VolumeGroupUnusableError naming the devices, after the look-up only (no activation, no lvcreate)', async () => {
    const inactive = { ...source, attr: 'Vwi---tz--' };
    const { runner, headers, service } = setup([
      { ...lvsStep([SNAP_LV, SOURCE_LV], inactive), stderr: DUPLICATE_PV },
    ]);
    const error = await caught(
      service.createSnapshot({ name: SNAP_NAME, sourceVolumeId: VID, scope: SCOPE }),
    );
    runner.assertDone();
    expect(headers.calls).toEqual([]);
    expect(error).toBeInstanceOf(VolumeGroupUnusableError);
    expect((error as Error).message).toBe(DUPLICATE_PV_REFUSAL);
  });

  it('an inactive source is activated (this LV only) to read its header', async () => {
    const inactive = { ...source, attr: 'Vwi---tz--' };
    const { runner, service } = setup([
      lvsStep([SNAP_LV, SOURCE_LV], inactive),
      { argv: ['lvchange', '--activate', 'y', `${VG}/${SOURCE_LV}`] },
      readBackStep(source),
      { argv: snapshotArgv },
    ]);
    await service.createSnapshot({ name: SNAP_NAME, sourceVolumeId: VID, scope: SCOPE });
    runner.assertDone();
  });

  it('a filesystem frozen already by someone else: FailedPreconditionError, no snapshot, their freeze kept', async () => {
    const { runner, service } = setup(
      [
        lvsStep([SNAP_LV, SOURCE_LV], source),
        {
          argv: ['fsfreeze', '-f', '/staging/a'],
          exitCode: 1,
          stderr: 'fsfreeze: /staging/a: freeze failed: Device or resource busy\n',
        },
      ],
      { mounted: true },
    );
    const error = await caught(
      service.createSnapshot({ name: SNAP_NAME, sourceVolumeId: VID, scope: SCOPE }),
    );
    runner.assertDone();
    expect(error).toBeInstanceOf(FailedPreconditionError);
    expect((error as Error).message).toBe(
      'the filesystem on /staging/a is frozen already (fsfreeze -f: Device or resource busy); thaw it (fsfreeze -u) and retry',
    );
  });

  it('a mounted source is frozen around the lvcreate and thawed after it, also when lvcreate fails', async () => {
    const ok = setup(
      [
        lvsStep([SNAP_LV, SOURCE_LV], source),
        { argv: ['fsfreeze', '-f', '/staging/a'] },
        { argv: snapshotArgv },
        { argv: ['fsfreeze', '-u', '/staging/a'] },
      ],
      { mounted: true },
    );
    await ok.service.createSnapshot({ name: SNAP_NAME, sourceVolumeId: VID, scope: SCOPE });
    ok.runner.assertDone();
    const full = setup(
      [
        lvsStep([SNAP_LV, SOURCE_LV], source),
        { argv: ['fsfreeze', '-f', '/staging/a'] },
        {
          argv: snapshotArgv,
          exitCode: 5,
          stdoutFile: 'thin/recorded/full-snap-when-full.stdout',
          stderr:
            '  WARNING: Thin pool lvsthin/small is out of data space.\n  Cannot create new thin volume, free space in thin pool lvsthin/small reached threshold.\n',
        },
        { argv: ['fsfreeze', '-u', '/staging/a'] },
      ],
      { mounted: true },
    );
    const error = await caught(
      full.service.createSnapshot({ name: SNAP_NAME, sourceVolumeId: VID, scope: SCOPE }),
    );
    full.runner.assertDone();
    expect(error).toBeInstanceOf(OutOfSpaceError);
  });
});

describe('deleteSnapshot', () => {
  const removeStep: ReplayStep = {
    argv: ['lvremove', '--yes', `${VG}/${SNAP_LV}`],
    stdoutFile: 'thin/recorded/snap-ro-inactive-remove.stdout',
  };
  const activateK: ReplayStep = {
    argv: ['lvchange', '-ay', '-K', `${VG}/${SNAP_LV}`],
    stdoutFile: 'thin/recorded/snap-ro-activate-K.stdout',
  };

  // Snapshots rest inactive (docs/DESIGN.md §3): what a refused or failed delete activated goes back.
  const deactivate: ReplayStep = { argv: ['lvchange', '--activate', 'n', `${VG}/${SNAP_LV}`] };

  it('on a group whose PV lvm sees twice: VolumeGroupUnusableError naming the devices, after the look-up only (no lvchange, no lvremove), --force-unowned too', async () => {
    for (const options of [{}, { forceUnowned: true }]) {
      const { runner, headers, service } = setup([
        { ...lvsStep([SNAP_LV], snapInactive), stderr: DUPLICATE_PV },
      ]);
      const error = await caught(service.deleteSnapshot(SID, SCOPE, options));
      runner.assertDone();
      expect(headers.calls).toEqual([]);
      expect(error).toBeInstanceOf(VolumeGroupUnusableError);
      expect((error as Error).message).toBe(DUPLICATE_PV_REFUSAL);
    }
  });

  it('refused after it activated the snapshot: deactivated again with lvchange --activate n, nothing removed', async () => {
    for (const [decoded, check] of [
      [header('c'.repeat(32), 'x'), 'header-id'],
      [header(VID, 'x', CAPACITY, OTHER_OWNER), 'header-owner'],
    ] as const) {
      const { runner, headers, service, warnings } = setup([
        lvsStep([SNAP_LV], snapInactive),
        activateK,
        readBackStep(snapActive),
        deactivate,
      ]);
      headers.headers.set(SNAP_PATH, decoded);
      const error = await caught(service.deleteSnapshot(SID, SCOPE));
      runner.assertDone();
      expect(warnings).toEqual([]);
      expect(error).toBeInstanceOf(NotOwnedError);
      expect(error).toMatchObject({ check });
    }
  });

  it('a failed lvremove after the activation deactivates the snapshot; the lvremove error stands', async () => {
    const { runner, headers, service, warnings } = setup([
      lvsStep([SNAP_LV], snapInactive),
      activateK,
      readBackStep(snapActive),
      { argv: removeStep.argv, exitCode: 5, stderr: '  Failed to update pool lvsthin/pool0.\n' },
      deactivate,
    ]);
    headers.headers.set(SNAP_PATH, header(VID, 'pvc-origin'));
    const error = await caught(service.deleteSnapshot(SID, SCOPE));
    runner.assertDone();
    expect(warnings).toEqual([]);
    expect((error as Error).message).toMatch(/Failed to update pool/);
  });

  it('never deactivates what it did not activate: an untagged inactive one, or one active before', async () => {
    const untagged = setup([lvsStep([SNAP_LV], { ...snapInactive, tags: OWN_TAGS })]);
    expect(await caught(untagged.service.deleteSnapshot(SID, SCOPE))).toBeInstanceOf(NotOwnedError);
    expect(untagged.runner.calls).toHaveLength(1);
    const wasActive = setup([lvsStep([SNAP_LV], snapActive)]);
    wasActive.headers.headers.set(SNAP_PATH, header('c'.repeat(32), 'x'));
    expect(await caught(wasActive.service.deleteSnapshot(SID, SCOPE))).toBeInstanceOf(
      NotOwnedError,
    );
    expect(wasActive.runner.calls).toHaveLength(1);
  });

  it('a deactivation that fails is logged; the refusal stands', async () => {
    const { runner, headers, service, warnings } = setup([
      lvsStep([SNAP_LV], snapInactive),
      activateK,
      readBackStep(snapActive),
      { ...deactivate, exitCode: 5, stderr: '  Logical volume lvsthin/x in use.\n' },
    ]);
    headers.headers.set(SNAP_PATH, header('c'.repeat(32), 'x'));
    expect(await caught(service.deleteSnapshot(SID, SCOPE))).toBeInstanceOf(NotOwnedError);
    runner.assertDone();
    expect(warnings).toEqual(['snapshot left active: deactivation failed']);
  });

  it('an inactive snapshot is activated with -K, its sector 0 checked against lvstamp.source, then removed', async () => {
    const { runner, headers, service } = setup([
      lvsStep([SNAP_LV], snapInactive),
      activateK,
      readBackStep(snapActive),
      removeStep,
    ]);
    headers.headers.set(SNAP_PATH, header(VID, 'pvc-origin'));
    expect(await service.deleteSnapshot(SID, SCOPE)).toEqual({ existed: true });
    runner.assertDone();
    expect(headers.calls).toEqual([`read ${SNAP_PATH}`]);
  });

  it('activated but lv_kernel_major still -1 is an error, and nothing is removed', async () => {
    const { runner, service, warnings } = setup([
      lvsStep([SNAP_LV], snapInactive),
      activateK,
      readBackStep(snapInactive),
      deactivate,
    ]);
    const error = await caught(service.deleteSnapshot(SID, SCOPE));
    runner.assertDone();
    expect(warnings).toEqual([]);
    expect(error).toBeInstanceOf(FailedPreconditionError);
    expect((error as Error).message).toMatch(/lv_kernel_major is still -1/);
  });

  it('a sector 0 of another volume or owner, or missing tags, is refused (NotOwnedError) before lvremove', async () => {
    for (const [decoded, check] of [
      [header('c'.repeat(32), 'x'), 'header-id'],
      [header(VID, 'x', CAPACITY, OTHER_OWNER), 'header-owner'],
      [{ status: 'not-stamped', reason: 'no magic' } as DecodeResult, 'header'],
    ] as const) {
      const { runner, headers, service } = setup([lvsStep([SNAP_LV], snapActive)]);
      headers.headers.set(SNAP_PATH, decoded);
      const error = await caught(service.deleteSnapshot(SID, SCOPE));
      runner.assertDone();
      expect(error).toBeInstanceOf(NotOwnedError);
      expect(error).toMatchObject({ check });
    }
    const untagged = setup([
      lvsStep([SNAP_LV], { ...snapActive, tags: ['lvstamp', `lvstamp.owner=${OWNER}`] }),
    ]);
    expect(await caught(untagged.service.deleteSnapshot(SID, SCOPE))).toBeInstanceOf(NotOwnedError);
    untagged.runner.assertDone();
  });

  it('an absent snapshot is success with existed false; a malformed ID is INVALID_ARGUMENT', async () => {
    const { runner, service } = setup([lvsStep([SNAP_LV])]);
    expect(await service.deleteSnapshot(SID, SCOPE)).toEqual({ existed: false });
    runner.assertDone();
    expect(await caught(setup([]).service.deleteSnapshot('reallyfake', SCOPE))).toBeInstanceOf(
      InvalidArgumentError,
    );
  });

  it('--force-unowned removes without the tag and header checks (still by name in the scope)', async () => {
    const { runner, service } = setup([
      lvsStep([SNAP_LV], { ...snapInactive, tags: [] }),
      removeStep,
    ]);
    expect(await service.deleteSnapshot(SID, SCOPE, { forceUnowned: true })).toEqual({
      existed: true,
    });
    runner.assertDone();
  });
});

describe('listSnapshots', () => {
  it("lists this owner's snapshots with readable tags, sorted by ID, with no activation", async () => {
    const ids = ['b', 'a', 'c', 'd'].map((c) => c.repeat(32));
    const row = (id: string, tags: readonly string[]): Row => ({
      name: `lvstamp_snap_${id}`,
      attr: 'Vri---tz-k',
      tags,
    });
    const { runner, service, warnings } = setup([
      {
        argv: lookupArgv('lv_name=~"^lvstamp_snap_"'),
        stdout: fullReport(
          row(ids[0] ?? '', SNAP_TAGS),
          row(ids[1] ?? '', SNAP_TAGS),
          row(ids[2] ?? '', ['lvstamp', `lvstamp.owner=${OTHER_OWNER}`, ...SNAP_TAGS.slice(2)]),
          row(ids[3] ?? '', OWN_TAGS),
        ),
      },
    ]);
    const snapshots = await service.listSnapshots(SCOPE);
    runner.assertDone();
    expect(snapshots.map((s) => s.snapshotId)).toEqual([ids[1], ids[0]]);
    expect(warnings).toEqual(['snapshot LV without readable lvstamp.source/size/created tags']);
  });
});

describe('createVolumeFrom', () => {
  const NEW_NAME = 'pvc-restored';
  const NID = volumeIdForName(NEW_NAME);
  const NEW_LV = `lvstamp_new_${NID}`;
  const FINAL_LV = `lvstamp_${NID}`;
  const NEW_PATH = `/dev/mapper/${VG}-${NEW_LV}`;
  const FROM_SNAPSHOT = `lvstamp.from=snapshot.${SID}`;
  const copyArgv = (origin: string, from: string): string[] => [
    'lvcreate',
    '--yes',
    '-s',
    '-kn',
    '-ay',
    '-prw',
    '-n',
    NEW_LV,
    '--addtag',
    'lvstamp',
    '--addtag',
    `lvstamp.owner=${OWNER}`,
    '--addtag',
    from,
    `${VG}/${origin}`,
  ];
  const request = (extra: object = {}) => ({
    name: NEW_NAME,
    source: { kind: 'snapshot' as const, id: SID },
    requiredBytes: CAPACITY,
    vgName: VG,
    scope: SCOPE,
    ...extra,
  });

  it('restores: writable thin snapshot with lvstamp.from, source header checked, own header written, renamed (recorded restore-*)', async () => {
    const { runner, headers, service } = setup([
      lvsStep([SNAP_LV, FINAL_LV, NEW_LV], snapInactive),
      {
        argv: copyArgv(SNAP_LV, FROM_SNAPSHOT),
        stdoutFile: 'thin/recorded/restore-create.stdout',
      },
      {
        argv: ['lvrename', ...PINNED, '--yes', VG, NEW_LV, FINAL_LV],
        stdoutFile: 'thin/recorded/restore-rename.stdout',
      },
    ]);
    headers.headers.set(NEW_PATH, header(VID, 'pvc-origin'));
    // no capacity asked: the source's
    const created = await service.createVolumeFrom(request({ requiredBytes: 0 }));
    runner.assertDone();
    expect(created).toEqual({
      volumeId: NID,
      vgName: VG,
      lvName: FINAL_LV,
      sizeBytes: 64 * MiB,
      capacityBytes: CAPACITY,
    });
    // never cleared: the data area holds the data
    expect(headers.calls).toEqual([`read ${NEW_PATH}`, `write ${NEW_PATH}`]);
    expect(headers.writes[0]?.header).toEqual({
      volumeId: NID,
      ownerId: OWNER,
      createdAtMs: NOW,
      dataOffsetBytes: MiB,
      requestedBytes: CAPACITY,
      name: NEW_NAME,
    });
  });

  it('a larger capacity extends the copy before its header is written', async () => {
    const { runner, headers, service } = setup([
      lvsStep([SNAP_LV, FINAL_LV, NEW_LV], snapInactive),
      { argv: copyArgv(SNAP_LV, FROM_SNAPSHOT) },
      { argv: ['lvextend', '--yes', '-L', `${104 * MiB}b`, `${VG}/${NEW_LV}`] },
      { argv: ['lvrename', ...PINNED, '--yes', VG, NEW_LV, FINAL_LV] },
    ]);
    headers.headers.set(NEW_PATH, header(VID, 'pvc-origin'));
    const created = await service.createVolumeFrom(request({ requiredBytes: 100 * MiB }));
    runner.assertDone();
    expect(created.capacityBytes).toBe(100 * MiB);
    expect(headers.writes[0]?.header.requestedBytes).toBe(100 * MiB);
  });

  it('a capacity below the source is OUT_OF_RANGE before any change', async () => {
    const small = setup([lvsStep([SNAP_LV, FINAL_LV, NEW_LV], snapInactive)]);
    expect(
      await caught(small.service.createVolumeFrom(request({ requiredBytes: 10 * MiB }))),
    ).toBeInstanceOf(OutOfRangeError);
    small.runner.assertDone();
  });

  it("a copy whose sector 0 is not the source's header is removed and refused: NotOwnedError naming the source, as every operation", async () => {
    for (const [decoded, check, detail] of [
      [undefined, 'header', 'its header is not-stamped'],
      [
        header('c'.repeat(32), 'x'),
        'header-id',
        `its header belongs to volume ${'c'.repeat(32)}, not ${VID}`,
      ],
      [
        header(VID, 'x', CAPACITY, OTHER_OWNER),
        'header-owner',
        `its header names owner ${OTHER_OWNER}, not ${OWNER}`,
      ],
    ] as const) {
      const { runner, headers, service } = setup([
        lvsStep([SNAP_LV, FINAL_LV, NEW_LV], snapInactive),
        { argv: copyArgv(SNAP_LV, FROM_SNAPSHOT) },
        { argv: ['lvremove', '--yes', `${VG}/${NEW_LV}`] },
      ]);
      if (decoded !== undefined) headers.headers.set(NEW_PATH, decoded);
      const error = await caught(service.createVolumeFrom(request()));
      runner.assertDone();
      expect(error).toBeInstanceOf(NotOwnedError);
      expect(error).toMatchObject({ check, lv: `${VG}/${SNAP_LV}` });
      expect((error as Error).message).toBe(
        `${VG}/${SNAP_LV} is not provably this installation's volume: refusing to copy: ${detail} (read from its copy ${VG}/${NEW_LV}, removed); left untouched`,
      );
    }
  });

  it('on a group whose PV lvm sees twice: VolumeGroupUnusableError naming the devices, after the look-up only (no lvcreate)', async () => {
    const { runner, headers, service } = setup([
      { ...lvsStep([SNAP_LV, FINAL_LV, NEW_LV], snapInactive), stderr: DUPLICATE_PV },
    ]);
    const error = await caught(service.createVolumeFrom(request()));
    runner.assertDone();
    expect(headers.calls).toEqual([]);
    expect(error).toBeInstanceOf(VolumeGroupUnusableError);
    expect((error as Error).message).toBe(DUPLICATE_PV_REFUSAL);
  });

  it('an interrupted restore (lvstamp_new_ with the source header and lvstamp.from) is removed by the retry, then made again', async () => {
    const leftover: Row = {
      name: NEW_LV,
      attr: 'Vwi-a-tz--',
      tags: [...OWN_TAGS, FROM_SNAPSHOT],
    };
    const { runner, headers, service } = setup([
      lvsStep([SNAP_LV, FINAL_LV, NEW_LV], snapInactive, leftover),
      { argv: ['lvremove', '--yes', `${VG}/${NEW_LV}`] },
      { argv: copyArgv(SNAP_LV, FROM_SNAPSHOT) },
      { argv: ['lvrename', ...PINNED, '--yes', VG, NEW_LV, FINAL_LV] },
    ]);
    headers.headers.set(NEW_PATH, header(VID, 'pvc-origin'));
    await service.createVolumeFrom(request());
    runner.assertDone();
  });

  it('a finished copy of this source is returned; of another source it is ALREADY_EXISTS', async () => {
    const finished: Row = {
      name: FINAL_LV,
      attr: 'Vwi-a-tz--',
      tags: [...OWN_TAGS, FROM_SNAPSHOT],
    };
    const same = setup([lvsStep([SNAP_LV, FINAL_LV, NEW_LV], snapInactive, finished)]);
    same.headers.headers.set(`/dev/mapper/${VG}-${FINAL_LV}`, header(NID, NEW_NAME));
    expect(await same.service.createVolumeFrom(request())).toMatchObject({
      volumeId: NID,
      capacityBytes: CAPACITY,
    });
    same.runner.assertDone();
    const other = setup([
      lvsStep([SNAP_LV, FINAL_LV, NEW_LV], snapInactive, {
        ...finished,
        tags: [...OWN_TAGS, `lvstamp.from=volume.${VID}`],
      }),
    ]);
    expect(await caught(other.service.createVolumeFrom(request()))).toBeInstanceOf(
      AlreadyExistsError,
    );
  });

  it('clones a volume: its header checked, its mounted filesystem frozen around the lvcreate', async () => {
    const { runner, headers, service } = setup(
      [
        lvsStep([SOURCE_LV, FINAL_LV, NEW_LV], source),
        { argv: ['fsfreeze', '-f', '/staging/a'] },
        { argv: copyArgv(SOURCE_LV, `lvstamp.from=volume.${VID}`) },
        { argv: ['fsfreeze', '-u', '/staging/a'] },
        { argv: ['lvrename', ...PINNED, '--yes', VG, NEW_LV, FINAL_LV] },
      ],
      { mounted: true },
    );
    headers.headers.set(NEW_PATH, header(VID, 'pvc-origin'));
    await service.createVolumeFrom(request({ source: { kind: 'volume', id: VID } }));
    runner.assertDone();
  });

  describe('into a thin class: the origin must be in its pool, the pool must admit the copy', () => {
    const THIN = {
      type: 'thin' as const,
      thinPool: 'pool0',
      thinPoolSizeBytes: null,
      overprovisionRatio: 2,
    };
    const poolStep = (thinLvs: [string, number][], dataPercent = '10.00'): ReplayStep => {
      const row = (fields: Record<string, string>): Record<string, string> => ({
        vg_name: VG,
        vg_free: '0',
        vg_extent_size: '4194304',
        lv_permissions: 'writeable',
        pool_lv: '',
        data_percent: '',
        metadata_percent: '',
        lv_metadata_size: '',
        lv_health_status: '',
        lv_when_full: '',
        zero: 'zero',
        ...fields,
      });
      return {
        argv: [
          'lvs',
          ...REPORT,
          '-o',
          'vg_name,vg_free,vg_extent_size,lv_name,lv_size,lv_attr,lv_permissions,pool_lv,data_percent,metadata_percent,lv_metadata_size,lv_health_status,lv_when_full,zero',
          '-S',
          `vg_name="${VG}" && (lv_name="pool0" || pool_lv="pool0")`,
        ],
        stdout: JSON.stringify({
          report: [
            {
              lv: [
                row({
                  lv_name: 'pool0',
                  lv_size: String(1024 * MiB),
                  lv_attr: 'twi-aotz--',
                  data_percent: dataPercent,
                  metadata_percent: '10.00',
                  lv_metadata_size: '4194304',
                  lv_when_full: 'error',
                }),
                ...thinLvs.map(([name, bytes]) =>
                  row({
                    lv_name: name,
                    lv_size: String(bytes),
                    lv_attr: 'Vri---tz-k',
                    lv_permissions: 'read-only',
                    pool_lv: 'pool0',
                  }),
                ),
              ],
            },
          ],
        }),
      };
    };

    it('a name over 128 bytes (CSI "Size Limits") is INVALID_ARGUMENT before any lvm command', async () => {
      const { runner, service } = setup([]);
      const error = await caught(service.createVolumeFrom(request({ name: 'v'.repeat(129) })));
      expect(error).toEqual(
        new InvalidArgumentError(
          'volume name must be 1–128 bytes of UTF-8, the CSI limit on a string field, got 129',
        ),
      );
      expect(runner.calls).toEqual([]);
    });

    it('an origin in another pool is INVALID_ARGUMENT before any change', async () => {
      const { runner, service } = setup([
        lvsStep([SNAP_LV, FINAL_LV, NEW_LV], snapInactive),
        poolStep([['lvstamp_other', 64 * MiB]]),
      ]);
      const error = await caught(service.createVolumeFrom(request({ thin: THIN })));
      runner.assertDone();
      expect(error).toBeInstanceOf(InvalidArgumentError);
      expect((error as Error).message).toMatch(/not in the thin pool lvsthin\/pool0/);
    });

    it("a copy above the pool's budget is RESOURCE_EXHAUSTED (OutOfSpaceError) before any change", async () => {
      const { runner, service } = setup([
        lvsStep([SNAP_LV, FINAL_LV, NEW_LV], snapInactive),
        poolStep([[SNAP_LV, 64 * MiB]]),
      ]);
      // the pool admits at most 2 GiB of writable thin LVs (1 GiB × ratio 2)
      const error = await caught(
        service.createVolumeFrom(request({ thin: THIN, requiredBytes: 3 * 1024 * MiB })),
      );
      runner.assertDone();
      expect(error).toBeInstanceOf(OutOfSpaceError);
    });

    it('an origin in the pool with room: the copy is made', async () => {
      const { runner, headers, service } = setup([
        lvsStep([SNAP_LV, FINAL_LV, NEW_LV], snapInactive),
        poolStep([[SNAP_LV, 64 * MiB]]),
        { argv: copyArgv(SNAP_LV, FROM_SNAPSHOT) },
        { argv: ['lvrename', ...PINNED, '--yes', VG, NEW_LV, FINAL_LV] },
      ]);
      headers.headers.set(NEW_PATH, header(VID, 'pvc-origin'));
      await service.createVolumeFrom(request({ thin: THIN }));
      runner.assertDone();
    });
  });

  it('a missing source is NOT_FOUND, a thick one INVALID_ARGUMENT', async () => {
    const missing = setup([lvsStep([SNAP_LV, FINAL_LV, NEW_LV])]);
    expect(await caught(missing.service.createVolumeFrom(request()))).toBeInstanceOf(NotFoundError);
    const thick = setup([
      lvsStep([SOURCE_LV, FINAL_LV, NEW_LV], { ...source, attr: '-wi-a-----' }),
    ]);
    expect(
      await caught(
        thick.service.createVolumeFrom(request({ source: { kind: 'volume', id: VID } })),
      ),
    ).toBeInstanceOf(ThickVolumeError);
  });
});

describe('thawDataDeviceMounts', () => {
  it('thaws every mount of a data device; "not frozen" (EINVAL) is success', async () => {
    const { runner, service } = setup(
      [
        {
          argv: ['fsfreeze', '-u', '/staging/a'],
          exitCode: 1,
          stderr: 'fsfreeze: /staging/a: unfreeze failed: Invalid argument\n',
        },
      ],
      { maps: true },
    );
    expect(await service.thawDataDeviceMounts()).toEqual([]);
    runner.assertDone();
  });
});
