import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  AlreadyExistsError,
  CommandFailedError,
  CommandTimeoutError,
  FailedPreconditionError,
  InvalidArgumentError,
  IoTimeoutError,
  NotOwnedError,
  OutOfRangeError,
  NotFoundError,
  OutOfSpaceError,
  ThinPoolUnusableError,
  UnparseableOutputError,
  VolumeGroupUnusableError,
} from '../errors.js';
import type { CommandRunner } from '../exec/runner.js';
import { CORE_FIXTURES_DIR, ReplayRunner, type ReplayStep } from '../testing/replay-runner.js';
import type { DataArea } from '../header/block-io.js';
import type { DecodeResult, HeaderFields } from '../header/types.js';
import { NoopHostLock } from '../lock/host-lock.js';
import { Lvm } from '../lvm/lvm.js';
import type { Volume } from './types.js';
import type { HeaderIo } from './header-io.js';
import { VolumeService, type VolumeServiceOptions } from './service.js';
import { FileHostLock } from '../lock/file-host-lock.js';
import type { HostLock } from '../lock/host-lock.js';
import { caught } from '../testing/caught.js';

// ---- exact argv, spelled out here on purpose (not imported from the lvm module) ----
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
// lvm settings the create protocol's lvcreate and lvrename carry (CREATE_PROTOCOL_CONFIG), spelled out
const PINNED = ['--config', 'global/use_lvmlockd=0 devices/allow_changes_with_duplicate_pvs=0'];
const MiB = 1024 * 1024;
const OWNER = '0123456789abcdef0123456789abcdef';
const OTHER_OWNER = 'ffffffffffffffffffffffffffffffff';
const NOW = 1_732_900_000_000;

// Volume IDs: sha256(name)[0:16] (DESIGN.md §3).
const ID_202 = 'd2847872107920e672ceacc67767131e'; // "pvc-202"
const ID_203 = '746bf03d564ec8613ddeb80287a0caa1'; // "pvc-203"
const ID_INACTIVE = 'd788625e0724821518e3e4af9d567e2f';
const ID_SEG = '35a9313ef36eca050c804f831a1be3ca';
const ID_DEL = '154d5930498a512a92534c6c0543e2d1';
const ID_GROW = 'e7785be03ee2e0952cb302f778998b5f';

const vgStep = (vg: string, file: string, extra: Partial<ReplayStep> = {}): ReplayStep => ({
  argv: [...VGS, '-S', `vg_name="${vg}"`],
  stdoutFile: `lvm/${file}`,
  ...extra,
});
/** The second look when a group is not listed: is it a shared group lvm skips? */
const sharedVgStep = (vg: string): ReplayStep => ({
  argv: ['vgs', '--shared', ...VGS.slice(1), '-S', `vg_name="${vg}"`],
  stdoutFile: 'lvm/vgs-empty.json',
});
// The scope of most tests: both VGs the fixtures use (DESIGN.md §2.3: never every VG).
const SCOPE_VGS = ['vg0', 'vg-data'];
const SCOPE = { vgNames: SCOPE_VGS, ownerId: OWNER };
const inScope = (vgNames: readonly string[]): string =>
  vgNames.map((vg) => `vg_name="${vg}"`).join(' || ');
const scopeStep = (
  file = 'vgs-two.json',
  vgNames: readonly string[] = SCOPE_VGS,
  extra: Partial<ReplayStep> = {},
): ReplayStep => ({
  argv: [...VGS, '-S', inScope(vgNames)],
  stdoutFile: `lvm/${file}`,
  ...extra,
});
const lookupStep = (
  id: string,
  file: string,
  extra: Partial<ReplayStep> = {},
  vgNames: readonly string[] = SCOPE_VGS,
): ReplayStep => ({
  argv: [
    ...LVS,
    '-S',
    `(${inScope(vgNames)}) && (lv_name="lvstamp_${id}" || lv_name="lvstamp_new_${id}")`,
  ],
  stdoutFile: `lvm/${file}`,
  ...extra,
});
const readBackStep = (vg: string, lv: string, file: string): ReplayStep => ({
  argv: [...LVS, '-S', `lv_name="${lv}"`, vg],
  stdoutFile: `lvm/${file}`,
});
const listStep = (
  file: string,
  vgNames: readonly string[] = SCOPE_VGS,
  extra: Partial<ReplayStep> = {},
): ReplayStep => ({
  argv: [...LVS, '-S', `(${inScope(vgNames)}) && (lv_name=~"^lvstamp_")`],
  stdoutFile: `lvm/${file}`,
  ...extra,
});
const activateStep = (vg: string, lv: string): ReplayStep => ({
  argv: ['lvchange', '--activate', 'y', `${vg}/${lv}`],
});
const lvcreateArgv = (id: string, bytes: number, vg = 'vg0'): string[] => [
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
  `lvstamp_new_${id}`,
  '-L',
  `${bytes}b`,
  '--addtag',
  'lvstamp',
  '--addtag',
  `lvstamp.owner=${OWNER}`,
  vg,
];
/** What createVolume returns for volume `id` made or found in vg0. */
const createdIn = (id: string, capacityBytes: number) => ({
  volumeId: id,
  vgName: 'vg0',
  lvName: `lvstamp_${id}`,
  capacityBytes,
});
const renameStep = (id: string, vg = 'vg0'): ReplayStep => ({
  argv: ['lvrename', ...PINNED, '--yes', vg, `lvstamp_new_${id}`, `lvstamp_${id}`],
});
/**
 * A thick create in a scope of one group tries lvcreate and lvrename before any look-up
 * (createWithoutLookup): the LV asked for is the 1 MiB data offset + the capacity, in bytes,
 * not rounded to extents (lvm rounds it up itself).
 */
const fastLvcreateStep = (
  id: string,
  capacityBytes: number,
  extra: Partial<ReplayStep> = {},
): ReplayStep => ({ argv: lvcreateArgv(id, MiB + capacityBytes), ...extra });
/**
 * lvm2 2.03.16 refusing a name the group holds already: lvcreate's recorded message
 * (test-e2e/recorded/lvcreate-exists), which lvrename prints too (lv_rename_update), exit 5.
 */
const existsIn = (lv: string, vg = 'vg0'): Partial<ReplayStep> => ({
  exitCode: 5,
  stderr: `  Logical Volume "${lv}" already exists in volume group "${vg}"\n`,
});
/** The fast path's lvrename, refused because `lvstamp_<id>` exists. */
const renameRefusedStep = (id: string, vg = 'vg0'): ReplayStep => ({
  ...renameStep(id, vg),
  ...existsIn(`lvstamp_${id}`, vg),
});
/** lvm2 2.03.16 on a group it does not find (as recorded for vgs: test-e2e/recorded/vgs-missing). */
const vgNotFound = (vg: string): Partial<ReplayStep> => ({
  exitCode: 5,
  stderr: `  Volume group "${vg}" not found\n  Cannot process volume group ${vg}\n`,
});
const removeNewStep = (id: string, vg = 'vg0'): ReplayStep => ({
  argv: ['lvremove', '--yes', `${vg}/lvstamp_new_${id}`],
});
/** Each call's program (`lvm fullreport` as two words). */
const programs = (runner: ReplayRunner): string[] =>
  runner.calls.map((c) => c.argv.slice(0, c.argv[0] === 'lvm' ? 2 : 1).join(' '));

/**
 * The look-up's one `lvm fullreport` (LogicalVolumes.inGroups), spelled out:
 * the `vg`, `pv` and `lv` sub-reports selected by the scope and the names,
 * no segments, `--shared`.
 */
const fullReportArgv = (vgSelection: string, lvSelection: string): string[] => [
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
  vgSelection,
  '--configreport',
  'pv',
  '-o',
  'pv_uuid,pv_name,pv_major,pv_minor',
  '-S',
  vgSelection,
  '--configreport',
  'lv',
  '-o',
  LVS[LVS.length - 1] ?? '',
  '-S',
  lvSelection,
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

type ReportRow = Record<string, string>;
const fixtureText = (step: ReplayStep): string =>
  step.stdoutFile === undefined
    ? (step.stdout ?? '')
    : readFileSync(`${CORE_FIXTURES_DIR}${step.stdoutFile}`, 'utf8');
const rowsOf = (text: string, kind: string): ReportRow[] =>
  (JSON.parse(text) as { report: Record<string, ReportRow[]>[] }).report.flatMap(
    (section) => section[kind] ?? [],
  );

/**
 * The tests write a look-up as the `vgs` report and the `lvs` report that
 * answer it (the fixtures of lvm/); `lvm fullreport` prints the same rows
 * grouped per volume group (lvmreport(7); recorded in
 * fixtures/lvm/fullreport-*.txt). This turns each `vgs -S <scope>` step
 * followed by its `lvs -S '(<scope>) && (…)'` step into the one fullreport
 * step: one object per vg row with that group's LV rows (an LV report that
 * is not JSON stays as it is), the first non-zero exit code, both stderrs.
 */
function asFullReports(steps: readonly ReplayStep[]): ReplayStep[] {
  const out: ReplayStep[] = [];
  for (let i = 0; i < steps.length; i++) {
    const vg = steps[i];
    const lv = steps[i + 1];
    const vgSelection =
      vg?.argv[0] === 'vgs' && vg.argv[1] !== '--shared' ? vg.argv.at(-1) : undefined;
    const lvSelection =
      lv?.argv[0] === 'lvs' && lv.argv.at(-2) === '-S' ? lv.argv.at(-1) : undefined;
    if (
      vg === undefined ||
      lv === undefined ||
      vgSelection === undefined ||
      lvSelection === undefined ||
      !lvSelection.startsWith(`(${vgSelection}) && (`)
    ) {
      if (vg !== undefined) out.push(vg);
      continue;
    }
    const lvText = fixtureText(lv);
    let stdout = lvText;
    try {
      const lvRows = rowsOf(lvText, 'lv');
      const seen = new Set<string>();
      const sections = rowsOf(fixtureText(vg), 'vg').map((row) => {
        const name = row['vg_name'] ?? '';
        const first = !seen.has(name);
        seen.add(name);
        return {
          vg: [row],
          pv: [
            {
              pv_uuid: `pv-of-${row['vg_uuid'] ?? ''}`,
              pv_name: '/dev/pv',
              pv_major: '',
              pv_minor: '',
            },
          ],
          lv: first ? lvRows.filter((r) => r['vg_name'] === name) : [],
          pvseg: [],
          seg: [],
        };
      });
      stdout = JSON.stringify({ report: sections }, null, 4);
    } catch {
      // not JSON (a notice line on stdout): the parser must refuse it as it is
    }
    const stderr = `${vg.stderr ?? ''}${lv.stderr ?? ''}`;
    const exitCode = vg.exitCode ?? lv.exitCode;
    out.push({
      argv: fullReportArgv(vgSelection, lvSelection),
      stdout,
      ...(stderr === '' ? {} : { stderr }),
      ...(exitCode === undefined ? {} : { exitCode }),
      ...((vg.timeout ?? lv.timeout) ? { timeout: true as const } : {}),
    });
    i += 1;
  }
  return out;
}

/** Header I/O in memory: what was written is what is read. */
/** A HostLock that records every entry, nested or not, and the deepest nesting seen. */
class DepthLock implements HostLock {
  readonly reasons: string[] = [];
  maxDepth = 0;
  #depth = 0;

  async withLock<T>(reason: string, fn: () => Promise<T>): Promise<T> {
    this.reasons.push(reason);
    this.#depth += 1;
    this.maxDepth = Math.max(this.maxDepth, this.#depth);
    try {
      return await fn();
    } finally {
      this.#depth -= 1;
    }
  }

  withVolumeLock<T>(_key: string, reason: string, fn: () => Promise<T>): Promise<T> {
    return this.withLock(reason, fn);
  }
}

class FakeHeaderIo implements HeaderIo {
  readonly writes: { devicePath: string; header: HeaderFields }[] = [];
  readonly reads: string[] = [];
  /** Every call in order: `clear <path> <offset> <size>` and `write <path>`. */
  readonly calls: string[] = [];
  readonly headers = new Map<string, DecodeResult>();
  /** When set, writeHeader is called (recorded in `calls`) and rejects with it. */
  writeError: Error | null = null;

  clearDataArea(devicePath: string, area: DataArea): Promise<void> {
    this.calls.push(`clear ${devicePath} ${area.dataOffsetBytes} ${area.sizeBytes}`);
    return Promise.resolve();
  }

  writeHeader(devicePath: string, header: HeaderFields): Promise<void> {
    this.calls.push(`write ${devicePath}`);
    if (this.writeError !== null) return Promise.reject(this.writeError);
    this.writes.push({ devicePath, header });
    this.headers.set(devicePath, { status: 'ok', header, version: 2 });
    return Promise.resolve();
  }

  /**
   * What a successful `lvrename VG FROM TO` does to the headers: the one on
   * FROM's device is now TO's (the same extents under lvm's new dm name). A
   * refused rename moves nothing, so a header written on a `lvstamp_new_`
   * never replaces the finished LV's (renamingRunner calls this).
   */
  renamed(vgName: string, from: string, to: string): void {
    const dm = (name: string): string => name.replaceAll('-', '--');
    const path = (lv: string): string => `/dev/mapper/${dm(vgName)}-${dm(lv)}`;
    const header = this.headers.get(path(from));
    this.headers.delete(path(from));
    if (header !== undefined) this.headers.set(path(to), header);
  }

  readHeader(devicePath: string): Promise<DecodeResult> {
    this.reads.push(devicePath);
    return Promise.resolve(
      this.headers.get(devicePath) ?? { status: 'not-stamped', reason: 'no magic' },
    );
  }
}

const DEL_PATH = `/dev/mapper/vg--data-lvstamp_${ID_DEL}`;
/**
 * The wipe ranges of the delete fixtures' LV (lv_size 109051904 bytes, 104 MiB): past the
 * header's 4 KiB first, the header last (DESIGN.md §5 "Wipe").
 */
const BODY = ['--offset', '4096', '--length', '109047808'];
const HEAD = ['--offset', '0', '--length', '4096'];
const PUNCH_BODY = ['fallocate', '--punch-hole', ...BODY, DEL_PATH];
const PUNCH_HEAD = ['fallocate', '--punch-hole', ...HEAD, DEL_PATH];
const ZERO_BODY = ['blkdiscard', '--zeroout', ...BODY, DEL_PATH];
const ZERO_HEAD = ['blkdiscard', '--zeroout', ...HEAD, DEL_PATH];
const GROW_PATH = `/dev/mapper/vg0-lvstamp_${ID_GROW}`;

/**
 * The replayed lvm under a VolumeService; `nestedPvs` maps a PV path to the
 * reason its device stack rests on a data device (restsOnDataDevice has its
 * own tests over a fake sysfs); every other PV rests on the node's disks.
 */
function setup(
  steps: ReplayStep[],
  hostRoot = '/nonexistent-host-root',
  nestedPvs: Readonly<Record<string, string>> = {},
) {
  const runner = new ReplayRunner(asFullReports(steps));
  const headerIo = new FakeHeaderIo();
  // The delete and expand fixtures' LVs carry valid headers unless a test says otherwise.
  headerIo.headers.set(DEL_PATH, okHeader('pvc-del', ID_DEL));
  headerIo.headers.set(GROW_PATH, okHeader('pvc-grow', ID_GROW));
  const hostLock = new NoopHostLock();
  const warnings: [string, unknown][] = [];
  const manager = volumeService({
    runner,
    hostLock,
    headerIo,
    clock: () => NOW,
    logger: {
      warn: (message: string, fields?: unknown) => {
        warnings.push([message, fields]);
      },
    },
    hostRoot,
    pvStack: (pvPath: string) => {
      const reason = nestedPvs[pvPath];
      return Promise.resolve(
        reason === undefined ? { nested: false as const } : { nested: true as const, reason },
      );
    },
  });
  const lvm = new Lvm({ runner, hostLock });
  return { runner, headerIo, hostLock, warnings, manager, lvm };
}

/**
 * A VolumeService over the replayed lvm, with no data device and nothing
 * mounted (those have their own tests): every command it runs is lvm's or
 * the wipe's.
 */
function volumeService(options: {
  runner: CommandRunner;
  hostLock: HostLock;
  headerIo: HeaderIo;
  clock?: () => number;
  logger?: { warn(message: string, fields?: Readonly<Record<string, unknown>>): void };
  hostRoot?: string;
  pvStack?: NonNullable<VolumeServiceOptions['pvStack']>;
}): VolumeService {
  const { runner: replay, hostLock, headerIo, ...rest } = options;
  const runner = headerIo instanceof FakeHeaderIo ? renamingRunner(replay, headerIo) : replay;
  return new VolumeService({
    lvm: new Lvm({ runner, hostLock, ...(rest.logger ? { logger: rest.logger } : {}) }),
    runner,
    hostLock,
    headers: headerIo,
    dataDevices: {
      list: () => Promise.resolve([]),
      find: () => Promise.resolve(null),
      create: () => Promise.reject(new Error('no data device in these tests')),
      reload: () => Promise.reject(new Error('no data device in these tests')),
      remove: () => Promise.reject(new Error('no data device in these tests')),
      pathFor: (volumeId: string) => `/dev/mapper/lvstamp-${volumeId}`,
      targetOf: () => Promise.reject(new Error('no data device in these tests')),
    },
    filesystems: {
      mounts: () => Promise.resolve([]),
      grow: () => Promise.reject(new Error('nothing is mounted in these tests')),
    },
    ...rest,
  });
}

/**
 * `runner` as the service sees it: each command replayed, and after an
 * `lvrename … VG FROM TO` that lvm did not refuse, the header on FROM's
 * device moves to TO's (FakeHeaderIo.renamed), as the LV's extents do.
 */
function renamingRunner(runner: CommandRunner, headerIo: FakeHeaderIo): CommandRunner {
  return {
    run: async (argv, options) => {
      const result = await runner.run(argv, options);
      const [program] = argv;
      const [vgName, from, to] = argv.slice(-3);
      if (
        program === 'lvrename' &&
        vgName !== undefined &&
        from !== undefined &&
        to !== undefined
      ) {
        headerIo.renamed(vgName, from, to);
      }
      return result;
    },
  };
}

/** What expand made of the volume (its status's volume). */
async function expandedVolume(
  service: VolumeService,
  ...args: Parameters<VolumeService['expand']>
): Promise<Volume> {
  return (await service.expand(...args)).status.volume;
}

function okHeader(name: string, volumeId: string, ownerId = OWNER): DecodeResult {
  return {
    status: 'ok',
    version: 1,
    header: {
      volumeId,
      ownerId,
      createdAtMs: NOW,
      dataOffsetBytes: MiB,
      requestedBytes: 203 * MiB,
      name,
    },
  };
}

/** A header v2 recording `capacityBytes` (DESIGN.md §4 "Capacity"). */
function okHeaderV2(name: string, volumeId: string, capacityBytes: number): DecodeResult {
  const v1 = okHeader(name, volumeId);
  if (v1.status !== 'ok') throw new Error('unreachable');
  return { status: 'ok', version: 2, header: { ...v1.header, requestedBytes: capacityBytes } };
}

describe('inputs that broke other LVM tools', () => {
  it('1. an inactive LV with lv_kernel_major/minor "-1" is listed as inactive, never as device -1', async () => {
    const { runner, manager } = setup([scopeStep(), listStep('lvs-inactive.json')]);
    const volumes = await manager.listVolumes(SCOPE);
    runner.assertDone();
    expect(volumes.map((v) => [v.lvName, v.active, v.open, v.kernelMajor, v.kernelMinor])).toEqual([
      [`lvstamp_${ID_INACTIVE}`, false, false, null, null],
      [`lvstamp_${ID_203}`, true, true, 253, 4],
    ]);
    // an inactive LV's header cannot be read: its capacity is unknown, not guessed
    expect(volumes[0]).toMatchObject({
      volumeId: ID_INACTIVE,
      creating: false,
      capacityBytes: null,
    });
  });

  it('listLogicalVolumes: the volumes from the one look-up, capacity unknown, no header read (the GC reads each header once itself)', async () => {
    const { runner, manager, headerIo } = setup([scopeStep(), listStep('lvs-inactive.json')]);
    const { volumes, snapshots } = await manager.listLogicalVolumes(SCOPE);
    runner.assertDone();
    expect(volumes.map((v) => [v.lvName, v.capacityBytes])).toEqual([
      [`lvstamp_${ID_INACTIVE}`, null],
      [`lvstamp_${ID_203}`, null],
    ]);
    expect(snapshots).toEqual([]);
    expect(headerIo.reads).toEqual([]);
  });

  it('listLogicalVolumes with LV names: a look-up of those names only; a name lvm cannot hold is refused before any command', async () => {
    const { runner, manager } = setup([]);
    await expect(manager.listLogicalVolumes(SCOPE, ['lvstamp_"x'])).rejects.toThrow(
      /not a valid logical volume name/,
    );
    expect(await manager.listLogicalVolumes(SCOPE, [])).toEqual({
      volumes: [],
      snapshots: [],
      quarantined: [],
      unusableGroups: [],
    });
    runner.assertDone();
  });

  it('2a. a warning on stderr with exit 0 and valid JSON: success, and the warning is logged', async () => {
    const stderr =
      '  WARNING: Device /dev/sdb has size of 62914560 sectors which is smaller than corresponding PV size.\n';
    const { manager, warnings } = setup([
      scopeStep(),
      listStep('lvs-203-final.json', undefined, { stderr }),
    ]);
    const volumes = await manager.listVolumes(SCOPE);
    expect(volumes.map((v) => v.volumeId)).toEqual([ID_203]);
    expect(warnings).toEqual([
      [
        'command succeeded with output on stderr',
        {
          argv: fullReportArgv(
            inScope(SCOPE_VGS),
            `(${inScope(SCOPE_VGS)}) && (lv_name=~"^lvstamp_")`,
          ),
          stderr,
        },
      ],
    ]);
  });

  it('2b. a notice line on stdout inside the report is UnparseableOutputError, never an empty list', async () => {
    const { manager } = setup([scopeStep(), listStep('lvs-archive-notice.json')]);
    const error = await caught(manager.listVolumes(SCOPE));
    expect(error).toBeInstanceOf(UnparseableOutputError);
    expect((error as Error).message).toMatch(/stdout is not one JSON document/);
  });

  it('3. lvs exit 5 with a valid empty report and "Global lock failed" is an error, not "no volumes"', async () => {
    const stderr = '  Global lock failed: check that global lockspace is started\n';
    const { manager } = setup([
      scopeStep(),
      listStep('lvs-empty.json', undefined, { exitCode: 5, stderr }),
    ]);
    const error = await caught(manager.listVolumes(SCOPE));
    expect(error).toBeInstanceOf(CommandFailedError);
    expect(error).not.toBeInstanceOf(UnparseableOutputError);
    expect(error).toMatchObject({ exitCode: 5, stderr });
    expect((error as Error).message).toMatch(
      /exited 5: Global lock failed: check that global lockspace is started$/,
    );
  });

  it('3b. vgs exit 5 with a valid empty report is not "volume group not found"', async () => {
    const stderr = '  Volume group "vg0" not found\n  Cannot process volume group vg0\n';
    const { lvm } = setup([vgStep('vg0', 'vgs-empty.json', { exitCode: 5, stderr })]);
    const error = await caught(lvm.volumeGroups.get('vg0'));
    expect(error).toBeInstanceOf(CommandFailedError);
    expect(error).not.toBeInstanceOf(NotFoundError);
  });

  it('4. a listing with per-segment rows returns the LV once, its size not doubled', async () => {
    const { manager, headerIo } = setup([
      scopeStep('vgs-one.json', ['vg0']),
      listStep('lvs-per-segment.json', ['vg0']),
    ]);
    headerIo.headers.set(`/dev/mapper/vg0-lvstamp_${ID_SEG}`, okHeader('pvc-seg', ID_SEG));
    const volumes = await manager.listVolumes({ vgNames: ['vg0'] });
    expect(volumes).toHaveLength(1);
    // a v1 volume: capacity = LV size − data offset (DESIGN.md §4 "Capacity")
    expect(volumes[0]).toMatchObject({
      volumeId: ID_SEG,
      sizeBytes: 208 * MiB,
      capacityBytes: 207 * MiB,
    });
    expect(headerIo.reads).toHaveLength(1);
  });

  it.each([
    ['lvs-size-with-suffix.json', '1073741824B'],
    ['lvs-size-human.json', '<21.50g'],
    ['lvs-size-comma.json', '1,5'],
    ['lvs-size-empty.json', ''],
    ['lvs-size-float.json', '1.5e9'],
  ])('5. size %s ("%s") is a typed parse error naming field and value', async (file, value) => {
    const { manager } = setup([scopeStep(), listStep(file)]);
    const error = await caught(manager.listVolumes(SCOPE));
    expect(error).toBeInstanceOf(UnparseableOutputError);
    expect((error as Error).message).toContain(
      `field lv_size = "${value}" is not a plain byte count`,
    );
  });

  it('5b. a size beyond 2^53 is a typed parse error, not a rounded number', async () => {
    const { manager } = setup([scopeStep(), listStep('lvs-size-huge.json')]);
    const error = await caught(manager.listVolumes(SCOPE));
    expect(error).toBeInstanceOf(UnparseableOutputError);
    expect((error as Error).message).toContain(
      'field lv_size = "18446744073709551616" is not a safe integer',
    );
  });

  it('5c. empty optional fields become null, not 0', async () => {
    const { manager } = setup([scopeStep(), listStep('lvs-optional-empty.json')]);
    const [volume] = await manager.listVolumes(SCOPE);
    expect(volume).toMatchObject({
      kernelMajor: null,
      kernelMinor: null,
      dmPath: null,
      createdAtMs: null,
      tags: [],
    });
  });

  it('6. 202 MiB in a VG with 4 MiB extents: lvcreate asks 1 MiB + 202 MiB, lvm makes a 204 MiB LV, the capacity is exactly 202 MiB; asking again returns it', async () => {
    const NEW_PATH = `/dev/mapper/vg0-lvstamp_new_${ID_202}`;
    const { runner, manager, headerIo, hostLock } = setup([
      // lvm rounds 203 MiB up to whole extents itself (recorded: test-e2e/recorded/lvcreate-second)
      fastLvcreateStep(ID_202, 202 * MiB, {
        stdout: `  Rounding up size to full physical extent 204.00 MiB\n  Logical volume "lvstamp_new_${ID_202}" created.\n`,
      }),
      renameStep(ID_202),
      // the same request again: lvcreate, clearing and header on a second lvstamp_new_, the
      // rename refused; the look-up finds the 204 MiB volume and that lvstamp_new_, removes it,
      // reads the volume's header
      fastLvcreateStep(ID_202, 202 * MiB),
      renameRefusedStep(ID_202),
      vgStep('vg0', 'vgs-one.json'),
      lookupStep(ID_202, 'lvs-202-final-new.json', {}, ['vg0']),
      removeNewStep(ID_202),
    ]);
    const request = { name: 'pvc-202', requiredBytes: 202 * MiB, vgName: 'vg0', ownerId: OWNER };
    const first = await manager.createVolume(request);
    expect(first).toEqual(createdIn(ID_202, 202 * MiB));
    expect(runner.calls.map((c) => c.argv)).toEqual([
      lvcreateArgv(ID_202, 203 * MiB),
      ['lvrename', ...PINNED, '--yes', 'vg0', `lvstamp_new_${ID_202}`, `lvstamp_${ID_202}`],
    ]);
    const header = {
      volumeId: ID_202,
      ownerId: OWNER,
      createdAtMs: NOW,
      dataOffsetBytes: MiB,
      requestedBytes: 202 * MiB,
      name: 'pvc-202',
    };
    expect(headerIo.writes).toEqual([{ devicePath: NEW_PATH, header }]);
    // the data area's first and last MiB are zeroed before the header makes the volume real
    expect(headerIo.calls).toEqual([`clear ${NEW_PATH} ${MiB} ${203 * MiB}`, `write ${NEW_PATH}`]);
    const again = await manager.createVolume(request);
    runner.assertDone();
    expect(again).toEqual(first);
    expect(headerIo.calls).toEqual([
      `clear ${NEW_PATH} ${MiB} ${203 * MiB}`,
      `write ${NEW_PATH}`,
      `clear ${NEW_PATH} ${MiB} ${203 * MiB}`,
      `write ${NEW_PATH}`,
    ]);
    expect(headerIo.reads).toEqual([`/dev/mapper/vg0-lvstamp_${ID_202}`]);
    expect(headerIo.headers.get(`/dev/mapper/vg0-lvstamp_${ID_202}`)).toEqual({
      status: 'ok',
      version: 2,
      header,
    });
    // each create holds the host lock once, from its lvcreate to its rename (or to its look-up
    // and removal): the lock is re-entrant, so lvm's commands record no reason of their own; it
    // is never free between them for another process's create or delete. A thick create is one
    // volume's work: its holding is keyed by the volume, so creates of other volumes may overlap
    expect(hostLock.reasons).toEqual([`create ${ID_202}`, `create ${ID_202}`]);
    expect(hostLock.kinds).toEqual([`volume ${ID_202}`, `volume ${ID_202}`]);
  });

  it('6a. a create of a volume that sysfs shows active takes the look-up at once: one lvm process, nothing made', async () => {
    // sysfs as the kernel shows the active LV vg0/lvstamp_<id> (dm name per lvm's naming rule)
    const root = mkdtempSync(join(tmpdir(), 'lvstamp-create-active-'));
    try {
      mkdirSync(join(root, 'sys/block/dm-3/dm'), { recursive: true });
      writeFileSync(join(root, 'sys/block/dm-3/dm/name'), `vg0-lvstamp_${ID_202}\n`);
      writeFileSync(join(root, 'sys/block/dm-3/dm/uuid'), `LVM-${'a'.repeat(64)}\n`);
      writeFileSync(join(root, 'sys/block/dm-3/dev'), '253:3\n');
      const { runner, manager, headerIo } = setup(
        [vgStep('vg0', 'vgs-one.json'), lookupStep(ID_202, 'lvs-202-final.json', {}, ['vg0'])],
        root,
      );
      const path = `/dev/mapper/vg0-lvstamp_${ID_202}`;
      headerIo.headers.set(path, {
        status: 'ok',
        version: 2,
        header: {
          volumeId: ID_202,
          ownerId: OWNER,
          createdAtMs: NOW,
          dataOffsetBytes: MiB,
          requestedBytes: 202 * MiB,
          name: 'pvc-202',
        },
      });
      const request = { name: 'pvc-202', requiredBytes: 202 * MiB, vgName: 'vg0', ownerId: OWNER };
      expect(await manager.createVolume(request)).toEqual(createdIn(ID_202, 202 * MiB));
      runner.assertDone();
      expect(runner.calls.map((c) => c.argv.slice(0, 2).join(' '))).toEqual(['lvm fullreport']);
      expect(headerIo.calls).toEqual([]);
      expect(headerIo.reads).toEqual([path]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('6b. 203 MiB (203 + 1 MiB already whole extents): lvcreate asks exactly 204 MiB, the capacity is 203 MiB', async () => {
    const { runner, manager, headerIo } = setup([
      fastLvcreateStep(ID_203, 203 * MiB),
      renameStep(ID_203),
    ]);
    const volume = await manager.createVolume({
      name: 'pvc-203',
      requiredBytes: 203 * MiB,
      vgName: 'vg0',
      ownerId: OWNER,
    });
    runner.assertDone();
    expect(runner.calls[0]?.argv).toEqual(lvcreateArgv(ID_203, 204 * MiB));
    expect(volume).toEqual(createdIn(ID_203, 203 * MiB));
    expect(headerIo.writes[0]?.header.requestedBytes).toBe(203 * MiB);
  });

  it('7. a timed-out lvcreate throws CommandTimeoutError, no look-up; the retry removes the leftover and converges', async () => {
    const { runner, manager, headerIo } = setup([
      fastLvcreateStep(ID_202, 202 * MiB, { timeout: true }),
      // retry: lvm refuses the name the timed-out lvcreate made; then one look-up, under the
      // same holding of the host lock as the removal, and the LV of whole extents
      fastLvcreateStep(ID_202, 202 * MiB, existsIn(`lvstamp_new_${ID_202}`)),
      vgStep('vg0', 'vgs-one.json'),
      lookupStep(ID_202, 'lvs-202-new.json', {}, ['vg0']),
      removeNewStep(ID_202),
      { argv: lvcreateArgv(ID_202, 204 * MiB) },
      renameStep(ID_202),
    ]);
    const request = { name: 'pvc-202', requiredBytes: 202 * MiB, vgName: 'vg0', ownerId: OWNER };
    const error = await caught(manager.createVolume(request));
    expect(error).toBeInstanceOf(CommandTimeoutError);
    expect(error).toMatchObject({ argv: lvcreateArgv(ID_202, 203 * MiB), exitCode: null });
    // what a timed-out lvcreate did is unknown: no look-up on that answer
    expect(programs(runner)).toEqual(['lvcreate']);
    expect(headerIo.calls).toEqual([]);
    const volume = await manager.createVolume(request);
    runner.assertDone();
    expect(volume).toEqual(createdIn(ID_202, 202 * MiB));
    const path = `/dev/mapper/vg0-lvstamp_new_${ID_202}`;
    expect(headerIo.calls).toEqual([`clear ${path} ${MiB} ${203 * MiB}`, `write ${path}`]);
  });

  it('7b. lvcreate runs with --yes and explicit wipe flags, so a "Wipe it? [y/n]" prompt cannot hang', async () => {
    const prompt =
      '  WARNING: ext4 signature detected on /dev/vg0/lvstamp_new_746bf03d564ec8613ddeb80287a0caa1 at offset 1080. Wipe it? [y/n]: [n]\n';
    const { runner, manager } = setup([
      // the fast lvcreate refused: the look-up finds nothing in the way, the lvcreate of the
      // look-up path is refused the same way
      fastLvcreateStep(ID_203, 203 * MiB, { stderr: prompt, exitCode: 5 }),
      vgStep('vg0', 'vgs-one.json'),
      lookupStep(ID_203, 'lvs-empty.json', {}, ['vg0']),
      { argv: lvcreateArgv(ID_203, 204 * MiB), stderr: prompt, exitCode: 5 },
    ]);
    const error = await caught(
      manager.createVolume({
        name: 'pvc-203',
        requiredBytes: 203 * MiB,
        vgName: 'vg0',
        ownerId: OWNER,
      }),
    );
    runner.assertDone();
    expect(error).toBeInstanceOf(CommandFailedError);
    expect(error).toMatchObject({ argv: lvcreateArgv(ID_203, 204 * MiB), exitCode: 5 });
    const creates = runner.calls.filter((c) => c.argv[0] === 'lvcreate');
    expect(creates).toHaveLength(2);
    // `--yes --wipesignatures y --zero y --activate y`, the first 8 words of the spelled-out argv
    for (const { argv } of creates)
      expect(argv.slice(0, 8)).toEqual(lvcreateArgv(ID_203, 0).slice(0, 8));
  });

  it('8. wipes through the device path lvm reports (dm doubles the hyphen of vg-data), never a built path', async () => {
    const { runner, manager } = setup([
      scopeStep(),
      lookupStep(ID_DEL, 'lvs-del-final.json'),
      { argv: ['fallocate', '--punch-hole', ...BODY, `/dev/mapper/vg--data-lvstamp_${ID_DEL}`] },
      { argv: ['fallocate', '--punch-hole', ...HEAD, `/dev/mapper/vg--data-lvstamp_${ID_DEL}`] },
      { argv: ['lvremove', '--yes', `vg-data/lvstamp_${ID_DEL}`] },
    ]);
    const result = await manager.delete(ID_DEL, SCOPE, { wipe: 'discard' });
    runner.assertDone();
    expect(result).toEqual({ existed: true, removed: [`vg-data/lvstamp_${ID_DEL}`] });
  });
});

describe('VolumeService: volume groups', () => {
  it('lists volume groups with one vgs report', async () => {
    const { runner, manager } = setup([{ argv: VGS, stdoutFile: 'lvm/vgs-two.json' }]);
    const vgs = await manager.listVolumeGroups();
    runner.assertDone();
    expect(vgs.map((vg) => [vg.name, vg.extentSizeBytes, vg.freeBytes])).toEqual([
      ['vg0', 4 * MiB, 8 * 1024 * MiB],
      ['vg-data', 4 * MiB, 200 * MiB],
    ]);
  });

  it('getVolumeGroup: NotFoundError only for an empty selection that exited 0', async () => {
    const { runner, lvm } = setup([vgStep('nope', 'vgs-empty.json'), sharedVgStep('nope')]);
    await expect(lvm.volumeGroups.get('nope')).rejects.toThrow(
      new NotFoundError('volume group nope does not exist'),
    );
    runner.assertDone();
  });

  it('refuses a VG name lvm cannot hold, without running anything', async () => {
    const { runner, lvm } = setup([]);
    for (const bad of ['', '-vg', 'vg 0', 'vg"0', '..', 'a'.repeat(128)]) {
      await expect(lvm.volumeGroups.get(bad)).rejects.toBeInstanceOf(InvalidArgumentError);
    }
    expect(runner.calls).toEqual([]);
  });

  it('capacity: free bytes, and the largest volume is free space minus the 1 MiB data offset', async () => {
    const { manager } = setup([vgStep('vg0', 'vgs-one.json')]);
    expect(await manager.capacity('vg0')).toEqual({
      vgName: 'vg0',
      totalBytes: 10733223936,
      freeBytes: 8589934592,
      maximumVolumeBytes: 8589934592 - MiB,
    });
  });
});

describe('VolumeService.requireVolumeGroups: a named group must exist', () => {
  const sharedScope = (vgNames: readonly string[], file: string): ReplayStep => ({
    argv: ['vgs', '--shared', ...VGS.slice(1), '-S', inScope(vgNames)],
    stdoutFile: `lvm/${file}`,
  });

  it('asks one `vgs --shared` and names the group lvm does not list', async () => {
    const { runner, manager } = setup([sharedScope(['vg0', 'nope'], 'vgs-one.json')]);
    await expect(manager.requireVolumeGroups(['vg0', 'nope', 'vg0'])).rejects.toThrow(
      new NotFoundError('volume group nope does not exist'),
    );
    runner.assertDone();
  });

  it('names every missing group at once', async () => {
    const { runner, manager } = setup([sharedScope(['a', 'b'], 'vgs-empty.json')]);
    await expect(manager.requireVolumeGroups(['a', 'b'])).rejects.toThrow(
      new NotFoundError('volume groups a, b do not exist'),
    );
    runner.assertDone();
  });

  it('passes when lvm lists each', async () => {
    const { runner, manager } = setup([sharedScope(SCOPE_VGS, 'vgs-two.json')]);
    await manager.requireVolumeGroups(SCOPE_VGS);
    runner.assertDone();
  });

  it('refuses a name lvm cannot hold, and runs nothing for no name', async () => {
    const { runner, manager } = setup([]);
    await expect(manager.requireVolumeGroups(['vg 0'])).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
    await manager.requireVolumeGroups([]);
    expect(runner.calls).toEqual([]);
  });
});

describe('VolumeService: listing and look-up', () => {
  it('lists volumes of one VG, finished and in-progress, each with the capacity its header records', async () => {
    const { runner, manager, headerIo } = setup([scopeStep(), listStep('lvs-del-both.json')]);
    headerIo.headers.set(
      `/dev/mapper/vg--data-lvstamp_${ID_DEL}`,
      okHeaderV2('pvc-del', ID_DEL, 100 * MiB + 4096),
    );
    const volumes = await manager.listVolumes(SCOPE);
    runner.assertDone();
    // an interrupted create has no header yet: its capacity is unknown, and it is not read
    expect(volumes.map((v) => [v.lvName, v.volumeId, v.creating, v.capacityBytes])).toEqual([
      [`lvstamp_${ID_DEL}`, ID_DEL, false, 100 * MiB + 4096],
      [`lvstamp_new_${ID_DEL}`, ID_DEL, true, null],
    ]);
    expect(headerIo.reads).toEqual([`/dev/mapper/vg--data-lvstamp_${ID_DEL}`]);
  });

  it('lists a volume whose header does not match or is not ok with an unknown capacity', async () => {
    const { manager, headerIo } = setup([
      scopeStep(),
      listStep('lvs-del-both.json'),
      scopeStep(),
      listStep('lvs-del-both.json'),
      scopeStep(),
      listStep('lvs-del-both.json'),
    ]);
    const path = `/dev/mapper/vg--data-lvstamp_${ID_DEL}`;
    headerIo.headers.set(path, okHeaderV2('pvc-203', ID_203, 100 * MiB));
    expect((await manager.listVolumes(SCOPE))[0]?.capacityBytes).toBeNull();
    // a v2 capacity beyond the LV (104 MiB, data offset 1 MiB) does not fit
    headerIo.headers.set(path, okHeaderV2('pvc-del', ID_DEL, 103 * MiB + 4096));
    expect((await manager.listVolumes(SCOPE))[0]?.capacityBytes).toBeNull();
    headerIo.headers.set(path, { status: 'corrupt', reason: 'checksum mismatch' });
    expect((await manager.listVolumes(SCOPE))[0]?.capacityBytes).toBeNull();
  });

  it('findVolume searches every VG with one selection and returns null for an empty one', async () => {
    const { runner, manager } = setup([scopeStep(), lookupStep(ID_203, 'lvs-empty.json')]);
    expect(await manager.findVolume(ID_203, SCOPE)).toBeNull();
    runner.assertDone();
  });

  it('findVolume does not count an interrupted create as the volume', async () => {
    const { manager } = setup([scopeStep(), lookupStep(ID_203, 'lvs-203-leftover.json')]);
    expect(await manager.findVolume(ID_203, SCOPE)).toBeNull();
  });

  it('getVolume returns the volume with the capacity of its header, or NotFoundError', async () => {
    const GiB8K = 200 * MiB + 8192;
    const { manager, headerIo } = setup([
      scopeStep(),
      lookupStep(ID_203, 'lvs-203-final.json'),
      scopeStep(),
      lookupStep(ID_203, 'lvs-empty.json'),
    ]);
    headerIo.headers.set(`/dev/mapper/vg0-lvstamp_${ID_203}`, okHeaderV2('pvc-203', ID_203, GiB8K));
    expect(await manager.getVolume(ID_203, SCOPE)).toMatchObject({
      volumeId: ID_203,
      capacityBytes: GiB8K,
    });
    await expect(manager.getVolume(ID_203, SCOPE)).rejects.toThrow(
      new NotFoundError(`volume ${ID_203} does not exist`),
    );
  });

  it('refuses a malformed volume ID', async () => {
    const { runner, manager } = setup([]);
    await expect(manager.findVolume('ABC', SCOPE)).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(manager.findVolume(ID_203.toUpperCase(), SCOPE)).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
    expect(runner.calls).toEqual([]);
  });
});

describe('VolumeService: createVolume', () => {
  const request = { name: 'pvc-203', requiredBytes: 203 * MiB, vgName: 'vg0', ownerId: OWNER };

  it.each([
    ['an empty name', { name: '' }],
    ['a zero size', { requiredBytes: 0 }],
    ['a fractional size', { requiredBytes: 1.5 }],
    ['a limit below the size', { limitBytes: 100 * MiB }],
    ['a bad owner ID', { ownerId: 'cluster-1' }],
    ['a bad VG name', { vgName: 'vg 0' }],
  ])('refuses %s with InvalidArgumentError before running anything', async (_what, change) => {
    const { runner, manager } = setup([]);
    await expect(manager.createVolume({ ...request, ...change })).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
    expect(runner.calls).toEqual([]);
  });

  it('NotFoundError when the VG does not exist: lvm refuses the lvcreate, the look-up names the cause', async () => {
    const { runner, manager, headerIo } = setup([
      fastLvcreateStep(ID_203, 203 * MiB, vgNotFound('vg0')),
      scopeStep('vgs-empty.json', ['vg0']),
      lookupStep(ID_203, 'lvs-empty.json', {}, ['vg0']),
    ]);
    // the look-up ran with --shared: a group it does not list does not exist, no second vgs
    await expect(manager.createVolume(request)).rejects.toThrow(
      new NotFoundError('volume group vg0 does not exist'),
    );
    runner.assertDone();
    expect(headerIo.calls).toEqual([]);
  });

  it('AlreadyExistsError when the volume exists with a smaller capacity', async () => {
    const { runner, manager, headerIo } = setup([
      // this call's lvstamp_new_ (1 MiB + 300 MiB asked, 304 MiB made), the rename refused
      fastLvcreateStep(ID_203, 300 * MiB),
      renameRefusedStep(ID_203),
      vgStep('vg0', 'vgs-one.json'),
      lookupStep(ID_203, 'lvs-203-final-new-304.json', {}, ['vg0']),
      removeNewStep(ID_203),
    ]);
    headerIo.headers.set(`/dev/mapper/vg0-lvstamp_${ID_203}`, okHeader('pvc-203', ID_203));
    const error = await caught(manager.createVolume({ ...request, requiredBytes: 300 * MiB }));
    runner.assertDone();
    expect(error).toBeInstanceOf(AlreadyExistsError);
    expect((error as Error).message).toBe(
      `volume "pvc-203" exists with a different size: capacity ${203 * MiB} bytes, requested ${300 * MiB}..unlimited`,
    );
    const newPath = `/dev/mapper/vg0-lvstamp_new_${ID_203}`;
    expect(headerIo.calls).toEqual([`clear ${newPath} ${MiB} ${301 * MiB}`, `write ${newPath}`]);
    expect(headerIo.reads).toEqual([`/dev/mapper/vg0-lvstamp_${ID_203}`]);
  });

  it('AlreadyExistsError when the existing capacity is above limitBytes', async () => {
    const { runner, manager, headerIo } = setup([
      fastLvcreateStep(ID_203, 100 * MiB),
      renameRefusedStep(ID_203),
      vgStep('vg0', 'vgs-one.json'),
      lookupStep(ID_203, 'lvs-203-final-new-104.json', {}, ['vg0']),
      removeNewStep(ID_203),
    ]);
    headerIo.headers.set(`/dev/mapper/vg0-lvstamp_${ID_203}`, okHeader('pvc-203', ID_203));
    await expect(
      manager.createVolume({ ...request, requiredBytes: 100 * MiB, limitBytes: 150 * MiB }),
    ).rejects.toThrow(
      new AlreadyExistsError(
        `volume "pvc-203" exists with a different size: capacity ${203 * MiB} bytes, requested ${100 * MiB}..${150 * MiB}`,
      ),
    );
    runner.assertDone();
  });

  it('AlreadyExistsError when the volume exists in another VG', async () => {
    const { manager, headerIo } = setup([
      scopeStep('vgs-two.json', ['vg-data', 'vg0']),
      lookupStep(ID_203, 'lvs-203-final.json', {}, ['vg-data', 'vg0']),
    ]);
    const inVgData = { ...request, vgName: 'vg-data', otherVgNames: ['vg0'] };
    await expect(manager.createVolume(inVgData)).rejects.toThrow(
      new AlreadyExistsError(
        `volume "pvc-203" (${ID_203}) exists in volume group vg0, not vg-data`,
      ),
    );
    expect(headerIo.reads).toEqual([]);
  });

  it('the create protocol removes a leftover lvstamp_new_ in another group of the scope too (tags checked), before lvcreate', async () => {
    const { runner, manager, warnings } = setup([
      scopeStep('vgs-two.json', ['vg-data', 'vg0']),
      lookupStep(ID_203, 'lvs-203-leftover.json', {}, ['vg-data', 'vg0']),
      { argv: ['lvremove', '--yes', `vg0/lvstamp_new_${ID_203}`] },
      { argv: lvcreateArgv(ID_203, 104 * MiB, 'vg-data') },
      renameStep(ID_203, 'vg-data'),
    ]);
    const inVgData = {
      ...request,
      requiredBytes: 100 * MiB,
      vgName: 'vg-data',
      otherVgNames: ['vg0'],
    };
    expect(await manager.createVolume(inVgData)).toMatchObject({
      vgName: 'vg-data',
      lvName: `lvstamp_${ID_203}`,
    });
    runner.assertDone();
    expect(warnings).toEqual([]);
  });

  it('AlreadyExistsError when the existing header names another owner', async () => {
    const { runner, manager, headerIo } = setup([
      fastLvcreateStep(ID_203, 203 * MiB),
      renameRefusedStep(ID_203),
      vgStep('vg0', 'vgs-one.json'),
      lookupStep(ID_203, 'lvs-203-final-new.json', {}, ['vg0']),
      removeNewStep(ID_203),
    ]);
    headerIo.headers.set(
      `/dev/mapper/vg0-lvstamp_${ID_203}`,
      okHeader('pvc-203', ID_203, OTHER_OWNER),
    );
    await expect(manager.createVolume(request)).rejects.toThrow(
      new AlreadyExistsError(`vg0/lvstamp_${ID_203} belongs to owner ${OTHER_OWNER}, not ${OWNER}`),
    );
    runner.assertDone();
  });

  it('FailedPreconditionError when the existing LV has no valid header', async () => {
    const { runner, manager, headerIo } = setup([
      fastLvcreateStep(ID_203, 203 * MiB),
      renameRefusedStep(ID_203),
      vgStep('vg0', 'vgs-one.json'),
      lookupStep(ID_203, 'lvs-203-final-new.json', {}, ['vg0']),
      removeNewStep(ID_203),
    ]);
    // the header this call wrote stays on its lvstamp_new_ (removed): the volume's is read
    await expect(manager.createVolume(request)).rejects.toThrow(
      new FailedPreconditionError(
        `vg0/lvstamp_${ID_203} exists but its header is not-stamped: no magic`,
      ),
    );
    runner.assertDone();
    expect(headerIo.writes.map((w) => w.devicePath)).toEqual([
      `/dev/mapper/vg0-lvstamp_new_${ID_203}`,
    ]);
  });

  it('OutOfSpaceError with bytes needed and free: lvm refused the lvcreate for space, the look-up counts them, no second lvcreate', async () => {
    // lvm2's refusal (test-e2e/recorded/lvcreate-no-space), here 1 free extent of 4 MiB, 51 asked
    const stderr = '  Volume group "vg0" has insufficient free space (1 extents): 51 required.\n';
    const { runner, manager, headerIo } = setup([
      fastLvcreateStep(ID_203, 203 * MiB, { exitCode: 5, stderr }),
      vgStep('vg0', 'vgs-vg0-nearly-full.json'),
      lookupStep(ID_203, 'lvs-empty.json', {}, ['vg0']),
    ]);
    await expect(manager.createVolume(request)).rejects.toThrow(
      new OutOfSpaceError(
        `volume group vg0 has ${4 * MiB} bytes free, volume ${ID_203} needs ${204 * MiB}`,
      ),
    );
    runner.assertDone();
    expect(programs(runner)).toEqual(['lvcreate', 'lvm fullreport']);
    expect(headerIo.calls).toEqual([]);
  });

  it('in a scope of two groups the look-up comes first: OutOfSpaceError with bytes needed and free, before any lvcreate', async () => {
    const { runner, manager } = setup([
      scopeStep('vgs-two.json', ['vg-data', 'vg0']),
      lookupStep(ID_203, 'lvs-empty.json', {}, ['vg-data', 'vg0']),
    ]);
    await expect(
      manager.createVolume({ ...request, vgName: 'vg-data', otherVgNames: ['vg0'] }),
    ).rejects.toThrow(
      new OutOfSpaceError(
        `volume group vg-data has ${200 * MiB} bytes free, volume ${ID_203} needs ${204 * MiB}`,
      ),
    );
    runner.assertDone();
  });

  it('maps lvcreate\'s "insufficient free space" to OutOfSpaceError', async () => {
    const stderr = '  Volume group "vg0" has insufficient free space (50 extents): 51 required.\n';
    const { runner, manager } = setup([
      // refused, and refused again after a look-up that saw room (another process took it)
      fastLvcreateStep(ID_203, 203 * MiB, { exitCode: 5, stderr }),
      vgStep('vg0', 'vgs-one.json'),
      lookupStep(ID_203, 'lvs-empty.json', {}, ['vg0']),
      { argv: lvcreateArgv(ID_203, 204 * MiB), exitCode: 5, stderr },
    ]);
    const error = await caught(manager.createVolume(request));
    runner.assertDone();
    expect(error).toBeInstanceOf(OutOfSpaceError);
    expect((error as Error).cause).toBeInstanceOf(CommandFailedError);
    expect((error as Error).message).toContain(
      'insufficient free space (50 extents): 51 required.',
    );
  });

  it("required == limit: the capacity is exactly that, the extent slack (lvm's rounding) stays inside the LV", async () => {
    const { runner, manager, headerIo } = setup([
      fastLvcreateStep(ID_202, 202 * MiB),
      renameStep(ID_202),
    ]);
    const volume = await manager.createVolume({
      name: 'pvc-202',
      requiredBytes: 202 * MiB,
      limitBytes: 202 * MiB,
      vgName: 'vg0',
      ownerId: OWNER,
    });
    runner.assertDone();
    expect(runner.calls[0]?.argv).toEqual(lvcreateArgv(ID_202, 203 * MiB));
    expect(volume).toEqual(createdIn(ID_202, 202 * MiB));
    expect(headerIo.writes[0]?.header.requestedBytes).toBe(202 * MiB);
    expect(headerIo.calls[0]).toBe(
      `clear /dev/mapper/vg0-lvstamp_new_${ID_202} ${MiB} ${203 * MiB}`,
    );
  });

  it('raises the capacity to the filesystem minimum (minimumBytes) when no limit forbids it', async () => {
    const { runner, manager, headerIo } = setup([
      fastLvcreateStep(ID_202, 200 * MiB + 4096),
      renameStep(ID_202),
    ]);
    const volume = await manager.createVolume({
      name: 'pvc-202',
      requiredBytes: 16 * MiB,
      minimumBytes: 200 * MiB + 1,
      vgName: 'vg0',
      ownerId: OWNER,
    });
    runner.assertDone();
    expect(volume.capacityBytes).toBe(200 * MiB + 4096);
    expect(headerIo.calls[0]).toBe(
      `clear /dev/mapper/vg0-lvstamp_new_${ID_202} ${MiB} ${201 * MiB + 4096}`,
    );
  });

  it.each([
    [
      'required rounded up to whole 4 KiB blocks is above the limit',
      { requiredBytes: 202 * MiB + 1, limitBytes: 202 * MiB + 100 },
      'whole 4096-byte blocks make 211816448 bytes, above limitBytes 211812452',
    ],
    [
      'the filesystem minimum is above the limit',
      { requiredBytes: 16 * MiB, limitBytes: 16 * MiB, minimumBytes: 300 * MiB },
      'the filesystem needs at least 314572800 bytes, above limitBytes 16777216',
    ],
    [
      'the limit is below the required bytes',
      { requiredBytes: 16 * MiB, limitBytes: 8 * MiB },
      'limitBytes 8388608 is below requiredBytes 16777216',
    ],
  ])(
    'OutOfRangeError (an InvalidArgumentError) before any lvm command when %s',
    async (_label, range, message) => {
      const { runner, manager } = setup([]);
      const error = await caught(
        manager.createVolume({ name: 'pvc-202', vgName: 'vg0', ownerId: OWNER, ...range }),
      );
      expect(error).toBeInstanceOf(OutOfRangeError);
      expect(error).toBeInstanceOf(InvalidArgumentError);
      expect((error as Error).message).toBe(message);
      expect(runner.calls).toEqual([]);
    },
  );

  it('a name over 128 bytes (CSI "Size Limits") is InvalidArgumentError before any lvm command', async () => {
    const { runner, manager } = setup([]);
    const error = await caught(
      manager.createVolume({
        name: 'p'.repeat(129),
        requiredBytes: 16 * MiB,
        vgName: 'vg0',
        ownerId: OWNER,
      }),
    );
    expect(error).toEqual(
      new InvalidArgumentError(
        'volume name must be 1–128 bytes of UTF-8, the CSI limit on a string field, got 129',
      ),
    );
    expect(runner.calls).toEqual([]);
  });

  it('OutOfRangeError when the LV size would pass 2^53 − 1 bytes', async () => {
    const { manager } = setup([
      vgStep('vg0', 'vgs-one.json'),
      lookupStep(ID_202, 'lvs-empty.json', {}, ['vg0']),
    ]);
    await expect(
      manager.createVolume({
        name: 'pvc-202',
        requiredBytes: Number.MAX_SAFE_INTEGER - 1,
        vgName: 'vg0',
        ownerId: OWNER,
      }),
    ).rejects.toBeInstanceOf(OutOfRangeError);
  });

  it('a new volume in a scope of one group is two lvm processes: lvcreate of 1 MiB + the capacity, lvrename', async () => {
    const { runner, manager } = setup([fastLvcreateStep(ID_202, 202 * MiB), renameStep(ID_202)]);
    const request = { name: 'pvc-202', requiredBytes: 202 * MiB, vgName: 'vg0', ownerId: OWNER };
    expect((await manager.createVolume(request)).capacityBytes).toBe(202 * MiB);
    runner.assertDone();
    expect(runner.calls.map((c) => c.argv)).toEqual([
      lvcreateArgv(ID_202, 203 * MiB),
      ['lvrename', ...PINNED, '--yes', 'vg0', `lvstamp_new_${ID_202}`, `lvstamp_${ID_202}`],
    ]);
  });

  it('a scope that names its group again (otherVgNames [vgName]) is one group: the same two processes', async () => {
    const { runner, manager } = setup([fastLvcreateStep(ID_202, 202 * MiB), renameStep(ID_202)]);
    const request = {
      name: 'pvc-202',
      requiredBytes: 202 * MiB,
      vgName: 'vg0',
      otherVgNames: ['vg0'],
      ownerId: OWNER,
    };
    expect((await manager.createVolume(request)).capacityBytes).toBe(202 * MiB);
    runner.assertDone();
    expect(programs(runner)).toEqual(['lvcreate', 'lvrename']);
  });

  it('a new volume in a scope of two groups is three lvm processes: one fullreport (groups and look-up), lvcreate of whole extents, lvrename', async () => {
    const { runner, manager } = setup([
      scopeStep('vgs-two.json', ['vg0', 'vg-data']),
      lookupStep(ID_202, 'lvs-empty.json', {}, ['vg0', 'vg-data']),
      { argv: lvcreateArgv(ID_202, 204 * MiB) },
      renameStep(ID_202),
    ]);
    const request = {
      name: 'pvc-202',
      requiredBytes: 202 * MiB,
      vgName: 'vg0',
      otherVgNames: ['vg-data'],
      ownerId: OWNER,
    };
    expect((await manager.createVolume(request)).capacityBytes).toBe(202 * MiB);
    runner.assertDone();
    expect(programs(runner)).toEqual(['lvm fullreport', 'lvcreate', 'lvrename']);
  });

  it('the host lock serialises two concurrent creates of one volume (lvcreate to rename): the second finds the first', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lvstamp-create-lock-'));
    try {
      const runner = new ReplayRunner(
        asFullReports([
          fastLvcreateStep(ID_203, 203 * MiB, { delayMs: 20 }),
          renameStep(ID_203),
          // the second, after the first renamed: lvstamp_new_ is free again, lvstamp_ is taken;
          // the look-up finds both, the second's lvstamp_new_ goes, the first's volume is adopted
          fastLvcreateStep(ID_203, 203 * MiB),
          renameRefusedStep(ID_203),
          vgStep('vg0', 'vgs-one.json'),
          lookupStep(ID_203, 'lvs-203-final-new.json', {}, ['vg0']),
          removeNewStep(ID_203),
        ]),
      );
      const headerIo = new FakeHeaderIo();
      const hostLock = new FileHostLock({ path: join(dir, 'host.lock') });
      const manager = volumeService({ runner, hostLock, headerIo, clock: () => NOW });
      const [a, b] = await Promise.all([
        manager.createVolume(request),
        manager.createVolume(request),
      ]);
      runner.assertDone();
      expect(b).toEqual(a);
      expect(headerIo.reads).toEqual([`/dev/mapper/vg0-lvstamp_${ID_203}`]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a refused lvrename leaves nothing of this call behind (its lvstamp_new_ removed, tags checked) and returns the existing volume', async () => {
    const { runner, manager, headerIo, hostLock, warnings } = setup([
      fastLvcreateStep(ID_203, 203 * MiB),
      renameRefusedStep(ID_203),
      vgStep('vg0', 'vgs-one.json'),
      lookupStep(ID_203, 'lvs-203-final-new.json', {}, ['vg0']),
      removeNewStep(ID_203),
    ]);
    const existing = okHeader('pvc-203', ID_203);
    headerIo.headers.set(`/dev/mapper/vg0-lvstamp_${ID_203}`, existing);
    const volume = await manager.createVolume(request);
    runner.assertDone();
    expect(volume).toEqual(createdIn(ID_203, 203 * MiB));
    expect(runner.calls.map((c) => c.argv).at(-1)).toEqual([
      'lvremove',
      '--yes',
      `vg0/lvstamp_new_${ID_203}`,
    ]);
    const newPath = `/dev/mapper/vg0-lvstamp_new_${ID_203}`;
    expect(headerIo.calls).toEqual([`clear ${newPath} ${MiB} ${204 * MiB}`, `write ${newPath}`]);
    // the existing volume's header (v1) is the one read, untouched by this call's write
    expect(headerIo.reads).toEqual([`/dev/mapper/vg0-lvstamp_${ID_203}`]);
    expect(headerIo.headers.get(`/dev/mapper/vg0-lvstamp_${ID_203}`)).toBe(existing);
    expect(hostLock.reasons).toEqual([`create ${ID_203}`]);
    expect(warnings).toEqual([]);
  });

  it('a header write that fails after the fast lvcreate is thrown, not fallen back: no lvrename, no look-up; the retry removes that lvstamp_new_ and converges', async () => {
    const request202 = { name: 'pvc-202', requiredBytes: 202 * MiB, vgName: 'vg0', ownerId: OWNER };
    const { runner, manager, headerIo } = setup([
      fastLvcreateStep(ID_202, 202 * MiB),
      // the retry: lvm refuses the name, the look-up finds the leftover
      fastLvcreateStep(ID_202, 202 * MiB, existsIn(`lvstamp_new_${ID_202}`)),
      vgStep('vg0', 'vgs-one.json'),
      lookupStep(ID_202, 'lvs-202-new.json', {}, ['vg0']),
      removeNewStep(ID_202),
      { argv: lvcreateArgv(ID_202, 204 * MiB) },
      renameStep(ID_202),
    ]);
    const newPath = `/dev/mapper/vg0-lvstamp_new_${ID_202}`;
    const hung = new IoTimeoutError(newPath, 'write', 60_000);
    headerIo.writeError = hung;
    const error = await caught(manager.createVolume(request202));
    expect(error).toBe(hung);
    expect(programs(runner)).toEqual(['lvcreate']);
    expect(headerIo.calls).toEqual([`clear ${newPath} ${MiB} ${203 * MiB}`, `write ${newPath}`]);
    headerIo.writeError = null;
    expect(await manager.createVolume(request202)).toEqual(createdIn(ID_202, 202 * MiB));
    runner.assertDone();
    expect(headerIo.calls.slice(2)).toEqual([
      `clear ${newPath} ${MiB} ${203 * MiB}`,
      `write ${newPath}`,
    ]);
  });

  it('a timed-out lvrename in the fast path is thrown, not fallen back: no look-up, nothing removed', async () => {
    const { runner, manager } = setup([
      fastLvcreateStep(ID_203, 203 * MiB),
      { ...renameStep(ID_203), timeout: true },
    ]);
    const error = await caught(manager.createVolume(request));
    runner.assertDone();
    expect(error).toBeInstanceOf(CommandTimeoutError);
    expect(error).toMatchObject({ argv: renameStep(ID_203).argv });
    expect(programs(runner)).toEqual(['lvcreate', 'lvrename']);
  });
});

describe('VolumeService: deleteVolume', () => {
  it('an unknown volume is success with existed: false', async () => {
    const { runner, manager, hostLock } = setup([
      scopeStep(),
      lookupStep(ID_DEL, 'lvs-empty.json'),
    ]);
    expect(await manager.delete(ID_DEL, SCOPE)).toEqual({ existed: false, removed: [] });
    runner.assertDone();
    expect(hostLock.reasons).toEqual([`delete ${ID_DEL}`]);
    expect(hostLock.kinds).toEqual([`volume ${ID_DEL}`]);
  });

  it('removes the volume and a leftover lvstamp_new_ with lvremove --yes', async () => {
    const { runner, manager } = setup([
      scopeStep(),
      lookupStep(ID_DEL, 'lvs-del-both.json'),
      { argv: ['lvremove', '--yes', `vg-data/lvstamp_${ID_DEL}`] },
      { argv: ['lvremove', '--yes', `vg-data/lvstamp_new_${ID_DEL}`] },
    ]);
    expect(await manager.delete(ID_DEL, SCOPE)).toEqual({
      existed: true,
      removed: [`vg-data/lvstamp_${ID_DEL}`, `vg-data/lvstamp_new_${ID_DEL}`],
    });
    runner.assertDone();
  });

  it('zero wipe runs blkdiscard --zeroout on the reported path, only on the finished LV', async () => {
    const { runner, manager } = setup([
      scopeStep(),
      lookupStep(ID_DEL, 'lvs-del-both.json'),
      { argv: ['blkdiscard', '--zeroout', ...BODY, `/dev/mapper/vg--data-lvstamp_${ID_DEL}`] },
      { argv: ['blkdiscard', '--zeroout', ...HEAD, `/dev/mapper/vg--data-lvstamp_${ID_DEL}`] },
      { argv: ['lvremove', '--yes', `vg-data/lvstamp_${ID_DEL}`] },
      { argv: ['lvremove', '--yes', `vg-data/lvstamp_new_${ID_DEL}`] },
    ]);
    await manager.delete(ID_DEL, SCOPE, { wipe: 'zero' });
    runner.assertDone();
    expect(runner.calls[1]?.options).toEqual({ timeoutMs: 3_600_000 });
  });

  describe('a PV the kernel holds read-only (sysfs ro; lvm reports nothing of it)', () => {
    /** The delete's look-up of an inactive volume, each group's PV listed as /dev/loop3 (7:3). */
    const lookupWithPv = (): ReplayStep => {
      const [step] = asFullReports([scopeStep(), lookupStep(ID_DEL, 'lvs-del-inactive.json')]);
      if (step === undefined) throw new Error('no look-up step');
      const report = JSON.parse(step.stdout ?? '') as { report: Record<string, unknown>[] };
      for (const section of report.report) {
        section['pv'] = [{ pv_uuid: 'pv-ro', pv_name: '/dev/loop3', pv_major: '7', pv_minor: '3' }];
      }
      return { ...step, stdout: JSON.stringify(report) };
    };
    const withRo = (flag: string): string => {
      const root = mkdtempSync(join(tmpdir(), 'lvstamp-ro-'));
      mkdirSync(join(root, 'sys/dev/block/7:3'), { recursive: true });
      writeFileSync(join(root, 'sys/dev/block/7:3/ro'), flag);
      return root;
    };

    it('delete refuses the group before the LV is activated, wiped or removed', async () => {
      const root = withRo('1\n');
      try {
        const { runner, manager, headerIo } = setup([lookupWithPv()], root);
        const error = await caught(manager.delete(ID_DEL, SCOPE, { wipe: 'zero' }));
        expect(error).toBeInstanceOf(VolumeGroupUnusableError);
        expect(error).toMatchObject({ vgName: 'vg-data', problem: 'read-only' });
        expect((error as Error).message).toBe(
          "volume group vg-data is unusable (read-only): the kernel holds PV /dev/loop3 (7:3) read-only (sysfs ro), so lvm cannot write the group's metadata",
        );
        runner.assertDone(); // the look-up only: no lvchange, blkdiscard or lvremove
        expect(headerIo.reads).toEqual([]);
      } finally {
        rmSync(root, { recursive: true, force: true });
      }
    });

    it('delete goes on when the same PV is writable (ro 0)', async () => {
      const root = withRo('0\n');
      try {
        const { runner, manager } = setup(
          [
            lookupWithPv(),
            activateStep('vg-data', `lvstamp_${ID_DEL}`),
            readBackStep('vg-data', `lvstamp_${ID_DEL}`, 'lvs-del-final.json'),
            { argv: ['lvremove', '--yes', `vg-data/lvstamp_${ID_DEL}`] },
          ],
          root,
        );
        expect(await manager.delete(ID_DEL, SCOPE)).toMatchObject({ existed: true });
        runner.assertDone();
      } finally {
        rmSync(root, { recursive: true, force: true });
      }
    });

    it('a listing names the group unusable (the GC keeps its volumes), and an unreadable flag is an error', async () => {
      const root = withRo('1\n');
      try {
        const { manager } = setup([lookupWithPv()], root);
        const listed = await manager.listLogicalVolumes(SCOPE, [
          `lvstamp_${ID_DEL}`,
          `lvstamp_new_${ID_DEL}`,
        ]);
        const detail =
          "the kernel holds PV /dev/loop3 (7:3) read-only (sysfs ro), so lvm cannot write the group's metadata";
        expect(listed.unusableGroups).toEqual([
          { vgName: 'vg0', problem: 'read-only', detail },
          { vgName: 'vg-data', problem: 'read-only', detail },
        ]);
      } finally {
        rmSync(root, { recursive: true, force: true });
      }
      const { manager } = setup([lookupWithPv()], '/nonexistent-host-root');
      await expect(manager.delete(ID_DEL, SCOPE)).rejects.toThrow(
        'cannot read /nonexistent-host-root/sys/dev/block/7:3/ro',
      );
    });
  });

  it('refuses an open LV with FailedPreconditionError naming its holder, and removes nothing', async () => {
    // sysfs as the kernel shows an LV (253:9) held by a device-mapper map on top of it
    const root = mkdtempSync(join(tmpdir(), 'lvstamp-lvm-'));
    try {
      mkdirSync(join(root, 'sys/dev/block'), { recursive: true });
      symlinkSync('../../block/dm-9', join(root, 'sys/dev/block/253:9'));
      mkdirSync(join(root, 'sys/block/dm-9/holders'), { recursive: true });
      mkdirSync(join(root, 'sys/block/dm-12/dm'), { recursive: true });
      writeFileSync(join(root, 'sys/block/dm-12/dm/name'), 'tenant-map\n');
      symlinkSync('../../dm-12', join(root, 'sys/block/dm-9/holders/dm-12'));
      const { runner, manager } = setup(
        [scopeStep(), lookupStep(ID_DEL, 'lvs-del-open.json')],
        root,
      );
      await expect(manager.delete(ID_DEL, SCOPE, { wipe: 'zero' })).rejects.toThrow(
        new FailedPreconditionError(
          `vg-data/lvstamp_${ID_DEL} is open (held by dm-12 (tenant-map)); unmount and detach it first`,
        ),
      );
      runner.assertDone();
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('a failed look-up is an error, not "already gone"', async () => {
    const { manager } = setup([
      scopeStep(),
      lookupStep(ID_DEL, 'lvs-empty.json', { exitCode: 5, stderr: '  Global lock failed\n' }),
    ]);
    await expect(manager.delete(ID_DEL, SCOPE)).rejects.toBeInstanceOf(CommandFailedError);
  });
});

describe('VolumeService: the wipe on delete (DESIGN.md §5 "Wipe")', () => {
  const lv = `vg-data/lvstamp_${ID_DEL}`;
  const before = (): ReplayStep[] => [scopeStep(), lookupStep(ID_DEL, 'lvs-del-final.json')];
  // What util-linux 2.38.1 fallocate prints when the kernel has no zeroing that may unmap (EOPNOTSUPP),
  // measured on a virtio disk without write-zeroes and on an LV over a loop device with discard off.
  const UNSUPPORTED = 'fallocate: fallocate failed: keep size mode is unsupported\n';
  const optionsOf = (runner: ReplayRunner, program: string): unknown =>
    runner.calls.find((call) => call.argv[0] === program)?.options;

  /** Deletes with `wipe` through exactly `wipeSteps` and lvremove; the LV is removed. */
  const deleted = async (wipe: 'discard' | 'zero', wipeSteps: ReplayStep[]) => {
    const { runner, manager, warnings } = setup([
      ...before(),
      ...wipeSteps,
      { argv: ['lvremove', '--yes', lv] },
    ]);
    expect(await manager.delete(ID_DEL, SCOPE, { wipe })).toEqual({ existed: true, removed: [lv] });
    runner.assertDone();
    return { runner, warnings };
  };

  it('discard, on a device that zeroes while unmapping: fallocate --punch-hole past the header, then over the header, then lvremove', async () => {
    const { runner, warnings } = await deleted('discard', [
      { argv: PUNCH_BODY },
      { argv: PUNCH_HEAD },
    ]);
    expect(runner.calls.filter((c) => c.argv[0] === 'fallocate').map((c) => c.options)).toEqual([
      { timeoutMs: 3_600_000 },
      { timeoutMs: 3_600_000 },
    ]);
    expect(warnings).toEqual([]);
  });

  it('discard, on a device without that zeroing (no discard, no write-zeroes): each range falls back to blkdiscard --zeroout of the same range, with a warning', async () => {
    const { runner, warnings } = await deleted('discard', [
      { argv: PUNCH_BODY, exitCode: 1, stderr: UNSUPPORTED },
      { argv: ZERO_BODY },
      { argv: PUNCH_HEAD, exitCode: 1, stderr: UNSUPPORTED },
      { argv: ZERO_HEAD },
    ]);
    expect(optionsOf(runner, 'fallocate')).toEqual({ timeoutMs: 3_600_000 });
    expect(optionsOf(runner, 'blkdiscard')).toEqual({ timeoutMs: 3_600_000 });
    const warning = 'the device cannot zero while discarding; writing zeros instead';
    expect(warnings).toEqual([
      [warning, { device: DEL_PATH, argv: PUNCH_BODY, stderr: UNSUPPORTED }],
      [warning, { device: DEL_PATH, argv: PUNCH_HEAD, stderr: UNSUPPORTED }],
    ]);
  });

  it("discard: when zeroing past the header fails too (an I/O error), the error is blkdiscard --zeroout's, the header's 4 KiB are never touched and the LV stays", async () => {
    const { runner, manager } = setup([
      ...before(),
      {
        argv: PUNCH_BODY,
        exitCode: 1,
        stderr: 'fallocate: fallocate failed: Input/output error\n',
      },
      {
        argv: ZERO_BODY,
        exitCode: 1,
        stderr: `blkdiscard: ${DEL_PATH}: BLKZEROOUT ioctl failed: Input/output error\n`,
      },
    ]);
    const error = await caught(manager.delete(ID_DEL, SCOPE, { wipe: 'discard' }));
    runner.assertDone(); // no command on the header range, no lvremove
    expect(error).toBeInstanceOf(CommandFailedError);
    expect(error).toMatchObject({ argv: ZERO_BODY, exitCode: 1 });
    expect((error as Error).message).toBe(
      `blkdiscard --zeroout --offset 4096 --length 109047808 ${DEL_PATH} exited 1: blkdiscard: ${DEL_PATH}: BLKZEROOUT ioctl failed: Input/output error`,
    );
  });

  it('discard: a timed-out fallocate past the header is not followed by a write of every block, nor by the header range; the LV stays', async () => {
    const { runner, manager, warnings } = setup([...before(), { argv: PUNCH_BODY, timeout: true }]);
    const error = await caught(manager.delete(ID_DEL, SCOPE, { wipe: 'discard' }));
    runner.assertDone(); // no blkdiscard --zeroout, no header range, no lvremove
    expect(error).toBeInstanceOf(CommandTimeoutError);
    expect(error).toMatchObject({ argv: PUNCH_BODY });
    expect(warnings).toEqual([]);
  });

  it('discard: a retry after a wipe that failed past the header proves ownership again and wipes both ranges', async () => {
    // the first attempt failed in the first range: sector 0 still holds the header
    const first = setup([...before(), { argv: PUNCH_BODY, timeout: true }]);
    await caught(first.manager.delete(ID_DEL, SCOPE, { wipe: 'discard' }));
    first.runner.assertDone();
    await deleted('discard', [{ argv: PUNCH_BODY }, { argv: PUNCH_HEAD }]);
  });

  it('zero: blkdiscard --zeroout past the header, then over it, on every device, then lvremove', async () => {
    const { warnings } = await deleted('zero', [{ argv: ZERO_BODY }, { argv: ZERO_HEAD }]);
    expect(warnings).toEqual([]);
  });

  it('zero: a failed blkdiscard --zeroout past the header is the error; the header range is never touched and the LV stays', async () => {
    const stderr = `blkdiscard: ${DEL_PATH}: BLKZEROOUT ioctl failed: Input/output error\n`;
    const { runner, manager } = setup([...before(), { argv: ZERO_BODY, exitCode: 1, stderr }]);
    const error = await caught(manager.delete(ID_DEL, SCOPE, { wipe: 'zero' }));
    runner.assertDone(); // no fallocate, no header range, no lvremove
    expect(error).toMatchObject({ argv: ZERO_BODY, exitCode: 1, stderr });
  });

  it('zero: a failed wipe of the header range (after the rest read zeros) is the error and the LV stays', async () => {
    const stderr = `blkdiscard: ${DEL_PATH}: BLKZEROOUT ioctl failed: Input/output error\n`;
    const { runner, manager } = setup([
      ...before(),
      { argv: ZERO_BODY },
      { argv: ZERO_HEAD, exitCode: 1, stderr },
    ]);
    const error = await caught(manager.delete(ID_DEL, SCOPE, { wipe: 'zero' }));
    runner.assertDone(); // no lvremove
    expect(error).toMatchObject({ argv: ZERO_HEAD, exitCode: 1, stderr });
  });

  it('none: lvremove alone, no wipe command', async () => {
    const { runner, manager } = setup([...before(), { argv: ['lvremove', '--yes', lv] }]);
    await manager.delete(ID_DEL, SCOPE, { wipe: 'none' });
    runner.assertDone();
  });
});

describe('VolumeService: expand', () => {
  const GROW_PATH = `/dev/mapper/vg0-lvstamp_${ID_GROW}`;
  const lvextend = (bytes: number): ReplayStep => ({
    argv: ['lvextend', '--yes', '-L', `${bytes}b`, `vg0/lvstamp_${ID_GROW}`],
  });

  it('lvextend --yes to 1 MiB + the capacity rounded up to extents, then the header records exactly the capacity', async () => {
    const { runner, manager, hostLock, headerIo } = setup([
      scopeStep(),
      lookupStep(ID_GROW, 'lvs-grow-before.json'),
      lvextend(1028 * MiB),
    ]);
    headerIo.headers.set(GROW_PATH, okHeaderV2('pvc-grow', ID_GROW, 100 * MiB));
    const volume = await expandedVolume(manager, ID_GROW, 1024 * MiB, SCOPE);
    runner.assertDone();
    // -L of whole extents is exact, the look-up's vgs gives the extents: 3 lvm processes
    expect(volume).toMatchObject({ sizeBytes: 1028 * MiB, capacityBytes: 1024 * MiB });
    expect(headerIo.writes.map((w) => [w.devicePath, w.header.requestedBytes])).toEqual([
      [GROW_PATH, 1024 * MiB],
    ]);
    expect(hostLock.reasons).toEqual([`expand ${ID_GROW}`]);
  });

  it('a v1 volume is first pinned to its capacity as v2, then grown and rewritten (a crash in between keeps it exact)', async () => {
    const { runner, manager, headerIo } = setup([
      scopeStep(),
      lookupStep(ID_GROW, 'lvs-grow-before.json'),
      lvextend(1028 * MiB),
    ]);
    headerIo.headers.set(GROW_PATH, okHeader('pvc-grow', ID_GROW));
    const volume = await expandedVolume(manager, ID_GROW, 1024 * MiB + 1, SCOPE);
    runner.assertDone();
    expect(volume.capacityBytes).toBe(1024 * MiB + 4096);
    expect(headerIo.calls).toEqual([`write ${GROW_PATH}`, `write ${GROW_PATH}`]);
    expect(headerIo.writes.map((w) => w.header.requestedBytes)).toEqual([
      103 * MiB,
      1024 * MiB + 4096,
    ]);
  });

  it('converges after a crash between lvextend and the header rewrite: no second lvextend', async () => {
    const { runner, manager, headerIo } = setup([
      scopeStep(),
      lookupStep(ID_GROW, 'lvs-grow-after.json'),
    ]);
    headerIo.headers.set(GROW_PATH, okHeaderV2('pvc-grow', ID_GROW, 100 * MiB));
    const volume = await expandedVolume(manager, ID_GROW, 1024 * MiB, SCOPE);
    runner.assertDone();
    expect(volume).toMatchObject({ sizeBytes: 1028 * MiB, capacityBytes: 1024 * MiB });
    expect(headerIo.writes.map((w) => w.header.requestedBytes)).toEqual([1024 * MiB]);
  });

  it('does nothing when the capacity is already large enough', async () => {
    const { runner, manager, headerIo } = setup([
      scopeStep(),
      lookupStep(ID_GROW, 'lvs-grow-before.json'),
    ]);
    headerIo.headers.set(GROW_PATH, okHeaderV2('pvc-grow', ID_GROW, 100 * MiB));
    expect(await expandedVolume(manager, ID_GROW, 100 * MiB, SCOPE)).toMatchObject({
      capacityBytes: 100 * MiB,
    });
    runner.assertDone();
    expect(headerIo.writes).toEqual([]);
  });

  it('refuses to shrink below the current capacity (limitBytes) with OutOfRangeError', async () => {
    const { runner, manager, headerIo } = setup([
      scopeStep(),
      lookupStep(ID_GROW, 'lvs-grow-before.json'),
    ]);
    headerIo.headers.set(GROW_PATH, okHeaderV2('pvc-grow', ID_GROW, 100 * MiB));
    const error = await caught(
      expandedVolume(manager, ID_GROW, 50 * MiB, SCOPE, { limitBytes: 60 * MiB }),
    );
    expect(error).toBeInstanceOf(OutOfRangeError);
    expect((error as Error).message).toBe(
      `volume ${ID_GROW} has ${100 * MiB} bytes, above limitBytes ${60 * MiB}; volumes never shrink`,
    );
    runner.assertDone();
  });

  it('OutOfRangeError before any lvm command when the range cannot be met', async () => {
    const { runner, manager } = setup([]);
    await expect(
      expandedVolume(manager, ID_GROW, 2 * MiB + 1, SCOPE, { limitBytes: 2 * MiB + 2 }),
    ).rejects.toBeInstanceOf(OutOfRangeError);
    expect(runner.calls).toEqual([]);
  });

  it("FailedPreconditionError, nothing grown, when the header is not this volume's", async () => {
    const { runner, manager, headerIo } = setup([
      scopeStep(),
      lookupStep(ID_GROW, 'lvs-grow-before.json'),
    ]);
    headerIo.headers.set(GROW_PATH, okHeaderV2('pvc-203', ID_203, 100 * MiB));
    await expect(expandedVolume(manager, ID_GROW, 1024 * MiB, SCOPE)).rejects.toBeInstanceOf(
      FailedPreconditionError,
    );
    runner.assertDone();
    expect(headerIo.writes).toEqual([]);
  });

  it('OutOfSpaceError when the VG lacks the extents', async () => {
    const { runner, manager, headerIo } = setup([
      scopeStep('vgs-vg0-nearly-full.json'),
      lookupStep(ID_GROW, 'lvs-grow-before.json'),
    ]);
    headerIo.headers.set(GROW_PATH, okHeaderV2('pvc-grow', ID_GROW, 100 * MiB));
    await expect(expandedVolume(manager, ID_GROW, 1024 * MiB, SCOPE)).rejects.toBeInstanceOf(
      OutOfSpaceError,
    );
    runner.assertDone();
    expect(headerIo.writes).toEqual([]);
  });

  it('NotFoundError for an unknown volume', async () => {
    const { manager } = setup([scopeStep(), lookupStep(ID_GROW, 'lvs-empty.json')]);
    await expect(expandedVolume(manager, ID_GROW, MiB, SCOPE)).rejects.toBeInstanceOf(
      NotFoundError,
    );
  });
});

describe('VolumeService: removeLogicalVolume (the GC remover)', () => {
  const ref = {
    vgName: 'vg-data',
    lvName: `lvstamp_${ID_DEL}`,
    lvUuid: 'Mn8b7V-6c5X-4z3L-2k1J-0h9G-8f7D-6s5AqP',
    ownerId: OWNER,
  };
  const byUuid = (file: string): ReplayStep => ({
    argv: [...LVS, '-S', 'lv_uuid="Mn8b7V-6c5X-4z3L-2k1J-0h9G-8f7D-6s5AqP"'],
    stdoutFile: `lvm/${file}`,
  });

  it("re-checks the LV by uuid, then removes exactly it, under the caller's host lock: entered once more, by lvremove only", async () => {
    const runner = new ReplayRunner(
      asFullReports([
        byUuid('lvs-del-final.json'),
        { argv: ['lvremove', '--yes', `vg-data/lvstamp_${ID_DEL}`] },
      ]),
    );
    const hostLock = new DepthLock();
    const manager = volumeService({ runner, hostLock, headerIo: new FakeHeaderIo() });
    await hostLock.withLock('gc: remove volume', () => manager.removeLogicalVolume(ref));
    runner.assertDone();
    expect(hostLock.reasons[0]).toBe('gc: remove volume');
    expect(hostLock.reasons).toHaveLength(2);
    expect(hostLock.maxDepth).toBe(2);
  });

  it('an LV already gone is success without lvremove', async () => {
    const { runner, manager } = setup([byUuid('lvs-empty.json')]);
    await manager.removeLogicalVolume(ref);
    runner.assertDone();
  });

  it('leaves an open LV alone with FailedPreconditionError', async () => {
    const { runner, manager } = setup([byUuid('lvs-del-open.json')]);
    await expect(manager.removeLogicalVolume(ref)).rejects.toThrow(
      new FailedPreconditionError(
        `vg-data/lvstamp_${ID_DEL} is open (no holder or mount of 253:9 found in sysfs or mountinfo: a process may hold it open (fuser -v on its device)); left alone`,
      ),
    );
    runner.assertDone();
  });

  it('leaves an LV without the owner tag alone (NotOwnedError), no lvremove', async () => {
    const { runner, manager } = setup([byUuid('lvs-del-other-owner.json')]);
    await expect(manager.removeLogicalVolume(ref)).rejects.toMatchObject({
      check: 'owner-tag',
      lv: `vg-data/lvstamp_${ID_DEL}`,
    });
    runner.assertDone();
  });

  it('leaves an LV whose uuid now carries another name alone', async () => {
    const { manager } = setup([byUuid('lvs-del-final.json')]);
    await expect(
      manager.removeLogicalVolume({ ...ref, lvName: 'lvstamp_other' }),
    ).rejects.toBeInstanceOf(FailedPreconditionError);
  });
});

describe('VolumeService: input checks of deleteVolume', () => {
  it('refuses an unknown wipe policy before running anything', async () => {
    const { runner, manager } = setup([]);
    await expect(
      manager.delete(ID_DEL, SCOPE, { wipe: 'shred' as unknown as 'zero' }),
    ).rejects.toThrow(new InvalidArgumentError('unknown wipe policy "shred"'));
    expect(runner.calls).toEqual([]);
  });
});

describe('VolumeService: scope (DESIGN.md §2.3)', () => {
  it('looks only in the scope: vgs and lvs selected by the scope, never every VG', async () => {
    const { runner, manager } = setup([
      scopeStep('vgs-one.json', ['vg0']),
      lookupStep(ID_203, 'lvs-203-final.json', {}, ['vg0']),
    ]);
    expect(await manager.findVolume(ID_203, { vgNames: ['vg0'] })).toMatchObject({
      vgName: 'vg0',
    });
    runner.assertDone();
  });

  it('an empty scope holds nothing and runs nothing', async () => {
    const { runner, manager } = setup([]);
    expect(await manager.listVolumes({ vgNames: [] })).toEqual([]);
    expect(await manager.findVolume(ID_203, { vgNames: [] })).toBeNull();
    expect(runner.calls).toEqual([]);
  });

  it('two VGs with one name (lvm2 lists both): FailedPrecondition naming both uuids, nothing removed', async () => {
    const { runner, manager } = setup([
      scopeStep('vgs-dup.json'),
      lookupStep(ID_DEL, 'lvs-del-final.json'),
    ]);
    const error = await caught(manager.delete(ID_DEL, SCOPE));
    expect(error).toBeInstanceOf(FailedPreconditionError);
    expect((error as Error).message).toBe(
      'lvm sees 2 volume groups named vg0 (vg_uuid yKUTHd-tI0y-OEnM-fff5-ApJs-M2dx-ZXYmQR and ' +
        'h7z2M6-fwYA-N10L-EvAY-IRiU-oFpK-5KBgwS): a copy, or a volume group inside a volume; ' +
        'lvstamp acts on neither until lvm sees one (an lvm device filter, docs/DESIGN.md §2.3)',
    );
    runner.assertDone();
  });

  it('discoverVolumeGroups: VGs tagged lvstamp and VGs holding lvstamp-tagged LVs', async () => {
    const { runner, manager } = setup([
      { argv: VGS, stdoutFile: 'lvm/vgs-two.json' },
      { argv: [...LVS, '-S', 'lv_name=~"^lvstamp_"'], stdoutFile: 'lvm/lvs-inactive.json' },
      { argv: ['pvs', ...REPORT, '-o', 'pv_name,vg_name'], stdoutFile: 'lvm/pvs-two.json' },
    ]);
    expect(await manager.discoverVolumeGroups()).toEqual(['vg-data', 'vg0']);
    runner.assertDone();
  });

  it('discoverVolumeGroups leaves out a VG with a PV resting on a data device (a loop device over a volume), with a warning', async () => {
    const reason = '/dev/loop0 rests on lvstamp data device lvstamp-746b (dm-3)';
    const { runner, manager, warnings } = setup(
      [
        { argv: VGS, stdoutFile: 'lvm/vgs-two.json' },
        { argv: [...LVS, '-S', 'lv_name=~"^lvstamp_"'], stdoutFile: 'lvm/lvs-inactive.json' },
        { argv: ['pvs', ...REPORT, '-o', 'pv_name,vg_name'], stdoutFile: 'lvm/pvs-two.json' },
      ],
      undefined,
      { '/dev/loop0': reason },
    );
    expect(await manager.discoverVolumeGroups()).toEqual(['vg-data']);
    expect(warnings).toEqual([
      ['volume group left out: nested in a volume', { vgName: 'vg0', reason }],
    ]);
    runner.assertDone();
  });

  /**
   * discoverVolumeGroups over vgs-two and lvs-inactive and `pvs` answered by `pvsAnswer`, each
   * PV path lvm reports asked about: nested unless `onDisks` says it rests on the node's disks.
   */
  async function discoverWith(
    pvsAnswer: Pick<ReplayStep, 'stdout' | 'stdoutFile'>,
    onDisks: (pvPath: string) => boolean,
  ): Promise<{ groups: string[]; asked: string[] }> {
    const asked: string[] = [];
    const runner = new ReplayRunner(
      asFullReports([
        { argv: VGS, stdoutFile: 'lvm/vgs-two.json' },
        { argv: [...LVS, '-S', 'lv_name=~"^lvstamp_"'], stdoutFile: 'lvm/lvs-inactive.json' },
        { argv: ['pvs', ...REPORT, '-o', 'pv_name,vg_name'], ...pvsAnswer },
      ]),
    );
    const manager = volumeService({
      runner,
      hostLock: new NoopHostLock(),
      headerIo: new FakeHeaderIo(),
      pvStack: (pvPath) => {
        asked.push(pvPath);
        return Promise.resolve(
          onDisks(pvPath)
            ? { nested: false }
            : { nested: true, reason: `the device stack of ${pvPath} cannot be followed` },
        );
      },
    });
    const groups = await manager.discoverVolumeGroups();
    runner.assertDone();
    return { groups, asked: asked.sort() };
  }

  it('discoverVolumeGroups asks about each PV path lvm reports, the orphan PV not', async () => {
    const { groups, asked } = await discoverWith(
      { stdoutFile: 'lvm/pvs-nested.json' },
      (pvPath) => pvPath === '/dev/sdb',
    );
    expect(groups).toEqual(['vg-data']);
    expect(asked).toEqual(['/dev/mapper/lvstamp-746bf03d564ec8613ddeb80287a0caa1', '/dev/sdb']);
  });

  it('discoverVolumeGroups keeps a group with a missing PV ([unknown]): nothing to follow, lvm names the problem later', async () => {
    const missing = JSON.stringify({
      report: [
        {
          pv: [
            { pv_name: '/dev/sdc', vg_name: 'vg0' },
            { pv_name: '[unknown]', vg_name: 'vg0' },
            { pv_name: '/dev/sdb', vg_name: 'vg-data' },
          ],
        },
      ],
    });
    const { groups, asked } = await discoverWith({ stdout: missing }, (pvPath) =>
      pvPath.startsWith('/dev/sd'),
    );
    expect(groups).toEqual(['vg-data', 'vg0']);
    expect(asked).toEqual(['/dev/sdb', '/dev/sdc']);
  });

  it('defaultVolumeGroup: the one tagged group that is not nested', async () => {
    const { runner, manager } = setup([
      { argv: VGS, stdoutFile: 'lvm/vgs-two.json' },
      { argv: ['pvs', ...REPORT, '-o', 'pv_name,vg_name'], stdoutFile: 'lvm/pvs-two.json' },
    ]);
    expect(await manager.defaultVolumeGroup()).toBe('vg-data');
    runner.assertDone();
  });

  it('defaultVolumeGroup refuses when the only tagged group is nested in a volume, naming it and why', async () => {
    const reason = '/dev/sdb rests on lvstamp data device lvstamp-746b (dm-3)';
    const { runner, manager } = setup(
      [
        { argv: VGS, stdoutFile: 'lvm/vgs-two.json' },
        { argv: ['pvs', ...REPORT, '-o', 'pv_name,vg_name'], stdoutFile: 'lvm/pvs-two.json' },
      ],
      undefined,
      { '/dev/sdb': reason },
    );
    const error = await caught(manager.defaultVolumeGroup());
    expect(error).toBeInstanceOf(FailedPreconditionError);
    expect((error as Error).message).toBe(
      `no volume group tagged "lvstamp" is the node's: vg-data: ${reason} (nested in a volume, docs/DESIGN.md §2.3); create one with "lvstamp vg create" or name one with --vg`,
    );
    runner.assertDone();
  });
});

describe('VolumeService: ownership before a delete (DESIGN.md §2.3)', () => {
  const refused = async (file: string, check: string, message: string) => {
    const { runner, manager } = setup([scopeStep(), lookupStep(ID_DEL, file)]);
    const error = await caught(manager.delete(ID_DEL, SCOPE, { wipe: 'zero' }));
    runner.assertDone(); // no blkdiscard, no lvremove, no lvchange
    expect(error).toBeInstanceOf(NotOwnedError);
    expect(error).toBeInstanceOf(FailedPreconditionError);
    expect(error).toMatchObject({ check, lv: `vg-data/lvstamp_${ID_DEL}` });
    expect((error as Error).message).toBe(message);
  };
  const lv = `vg-data/lvstamp_${ID_DEL}`;

  it('a volume whose LV exists in several volume groups is refused, and nothing is removed', async () => {
    const { runner, manager } = setup([scopeStep(), lookupStep(ID_DEL, 'lvs-del-two-vgs.json')]);
    const error = await caught(manager.delete(ID_DEL, SCOPE, { wipe: 'zero' }));
    runner.assertDone(); // no lvchange, no blkdiscard, no lvremove
    expect(error).toBeInstanceOf(FailedPreconditionError);
    expect((error as Error).message).toBe(
      `volume ${ID_DEL} exists in several volume groups: vg0, vg-data`,
    );
  });

  it('an LV with the name but no tags is refused and left untouched', async () => {
    await refused(
      'lvs-del-untagged.json',
      'tag',
      `${lv} is not provably this installation's volume: refusing to delete: it lacks the tag lvstamp (tags: none); left untouched`,
    );
  });

  it('an LV tagged for another owner is refused', async () => {
    await refused(
      'lvs-del-other-owner.json',
      'owner-tag',
      `${lv} is not provably this installation's volume: refusing to delete: it lacks the owner tag lvstamp.owner=${OWNER} (tags: lvstamp,lvstamp.owner=${OTHER_OWNER}); left untouched`,
    );
  });

  it('an LV with the tags but no header is refused', async () => {
    const { runner, manager, headerIo } = setup([
      scopeStep(),
      lookupStep(ID_DEL, 'lvs-del-final.json'),
    ]);
    headerIo.headers.delete(DEL_PATH);
    const error = await caught(manager.delete(ID_DEL, SCOPE));
    runner.assertDone();
    expect(error).toMatchObject({ check: 'header' });
    expect((error as Error).message).toBe(
      `${lv} is not provably this installation's volume: refusing to delete: its header is not-stamped; left untouched`,
    );
  });

  it('a header of another volume, or of another owner, is refused', async () => {
    for (const [header, check] of [
      [okHeader('pvc-203', ID_203), 'header-id'],
      [okHeader('pvc-del', ID_DEL, OTHER_OWNER), 'header-owner'],
    ] as const) {
      const { runner, manager, headerIo } = setup([
        scopeStep(),
        lookupStep(ID_DEL, 'lvs-del-final.json'),
      ]);
      headerIo.headers.set(DEL_PATH, header);
      await expect(manager.delete(ID_DEL, SCOPE)).rejects.toMatchObject({ check });
      runner.assertDone();
    }
  });

  it('a leftover lvstamp_new_ needs the tags (no header yet), and nothing is removed when it lacks them', async () => {
    const { runner, manager } = setup([
      scopeStep(),
      lookupStep(ID_DEL, 'lvs-del-new-untagged.json'),
    ]);
    await expect(manager.delete(ID_DEL, SCOPE)).rejects.toMatchObject({
      lv: `vg-data/lvstamp_new_${ID_DEL}`,
      check: 'tag',
    });
    runner.assertDone();
  });

  it('forceUnowned skips tags and header, still removes only in the scope', async () => {
    const { runner, manager, headerIo } = setup([
      scopeStep(),
      lookupStep(ID_DEL, 'lvs-del-untagged.json'),
      { argv: ['lvremove', '--yes', lv] },
    ]);
    headerIo.headers.delete(DEL_PATH);
    expect(await manager.delete(ID_DEL, SCOPE, { forceUnowned: true })).toEqual({
      existed: true,
      removed: [lv],
    });
    runner.assertDone();
    expect(headerIo.reads).toEqual([]);
  });

  it('forceUnowned still refuses an open LV', async () => {
    const { runner, manager } = setup([scopeStep(), lookupStep(ID_DEL, 'lvs-del-open.json')]);
    await expect(manager.delete(ID_DEL, SCOPE, { forceUnowned: true })).rejects.toBeInstanceOf(
      FailedPreconditionError,
    );
    runner.assertDone();
  });
});

describe('VolumeService: ownership before an attach (DESIGN.md §2.3), as before expand and delete', () => {
  const lv = `vg-data/lvstamp_${ID_DEL}`;
  const attach = async (file: string, header?: DecodeResult) => {
    const { runner, manager, headerIo } = setup([scopeStep(), lookupStep(ID_DEL, file)]);
    if (header !== undefined) headerIo.headers.set(DEL_PATH, header);
    const error = await caught(manager.attach(ID_DEL, SCOPE));
    runner.assertDone(); // the look-up only: no lvchange
    return error;
  };

  it("refuses another owner's active volume by its owner tag (NotOwnedError 'owner-tag'), no data device made", async () => {
    const error = await attach('lvs-del-other-owner.json');
    expect(error).toBeInstanceOf(NotOwnedError);
    expect(error).toMatchObject({ check: 'owner-tag', lv });
    expect((error as Error).message).toBe(
      `${lv} is not provably this installation's volume: refusing to attach: it lacks the owner tag lvstamp.owner=${OWNER} (tags: lvstamp,lvstamp.owner=${OTHER_OWNER}); left untouched`,
    );
  });

  it("refuses a header of another owner ('header-owner') or another volume ('header-id'), as expand and delete do", async () => {
    for (const [header, check, detail] of [
      [
        okHeader('pvc-del', ID_DEL, OTHER_OWNER),
        'header-owner',
        `its header names owner ${OTHER_OWNER}, not ${OWNER}`,
      ],
      [
        okHeader('pvc-203', ID_203),
        'header-id',
        `its header belongs to volume ${ID_203}, not ${ID_DEL}`,
      ],
      [
        { status: 'corrupt', reason: 'checksum mismatch' } as const,
        'header',
        'its header is corrupt',
      ],
    ] as const) {
      const error = await attach('lvs-del-final.json', header);
      expect(error).toBeInstanceOf(NotOwnedError);
      expect(error).toMatchObject({ check, lv });
      expect((error as Error).message).toBe(
        `${lv} is not provably this installation's volume: refusing to attach: ${detail}; left untouched`,
      );
    }
  });

  it('makes the data device of its own volume once every check passed', async () => {
    const error = await attach('lvs-del-final.json');
    expect((error as Error).message).toBe('no data device in these tests');
  });
});

describe('VolumeService: inactive LVs are activated, one LV at a time, only when owned', () => {
  const lv = `vg-data/lvstamp_${ID_DEL}`;

  it('delete with a wipe: lvchange --activate y VG/LV, read back, header, wipe, lvremove', async () => {
    const { runner, manager, hostLock } = setup([
      scopeStep(),
      lookupStep(ID_DEL, 'lvs-del-inactive.json'),
      activateStep('vg-data', `lvstamp_${ID_DEL}`),
      readBackStep('vg-data', `lvstamp_${ID_DEL}`, 'lvs-del-final.json'),
      { argv: ZERO_BODY },
      { argv: ZERO_HEAD },
      { argv: ['lvremove', '--yes', lv] },
    ]);
    expect(await manager.delete(ID_DEL, SCOPE, { wipe: 'zero' })).toEqual({
      existed: true,
      removed: [lv],
    });
    runner.assertDone();
    expect(hostLock.reasons).toEqual([`delete ${ID_DEL}`]);
  });

  it('an inactive LV without the tags is never activated', async () => {
    const { runner, manager } = setup([
      scopeStep(),
      lookupStep(ID_DEL, 'lvs-del-inactive-untagged.json'),
    ]);
    await expect(manager.delete(ID_DEL, SCOPE)).rejects.toMatchObject({ check: 'tag' });
    runner.assertDone();
  });

  it('expand activates an inactive volume before its header check and lvextend', async () => {
    const { runner, manager } = setup([
      scopeStep(),
      lookupStep(ID_GROW, 'lvs-grow-inactive.json'),
      activateStep('vg0', `lvstamp_${ID_GROW}`),
      readBackStep('vg0', `lvstamp_${ID_GROW}`, 'lvs-grow-before.json'),
      { argv: ['lvextend', '--yes', '-L', `${1028 * MiB}b`, `vg0/lvstamp_${ID_GROW}`] },
    ]);
    await expandedVolume(manager, ID_GROW, 1024 * MiB, SCOPE);
    runner.assertDone();
  });

  it("expand refuses an active LV without the tags, or with another owner's tag: NotOwnedError, no lvextend, no header write", async () => {
    const tags = `"lv_tags":"lvstamp,lvstamp.owner=${OWNER}"`;
    const grow = readFileSync(`${CORE_FIXTURES_DIR}lvm/lvs-grow-before.json`, 'utf8');
    expect(grow).toContain(tags);
    for (const [lvTags, check, detail] of [
      ['', 'tag', 'it lacks the tag lvstamp (tags: none)'],
      [
        `lvstamp,lvstamp.owner=${OTHER_OWNER}`,
        'owner-tag',
        `it lacks the owner tag lvstamp.owner=${OWNER} (tags: lvstamp,lvstamp.owner=${OTHER_OWNER})`,
      ],
    ] as const) {
      const { runner, manager, headerIo } = setup([
        scopeStep(),
        {
          argv: lookupStep(ID_GROW, 'lvs-grow-before.json').argv,
          stdout: grow.replace(tags, `"lv_tags":"${lvTags}"`),
        },
      ]);
      headerIo.headers.set(GROW_PATH, okHeaderV2('pvc-grow', ID_GROW, 100 * MiB));
      const error = await caught(expandedVolume(manager, ID_GROW, 1024 * MiB, SCOPE));
      runner.assertDone(); // the look-up only: no lvchange, no lvextend
      expect(error).toBeInstanceOf(NotOwnedError);
      expect(error).toMatchObject({ check, lv: `vg0/lvstamp_${ID_GROW}` });
      expect((error as Error).message).toBe(
        `vg0/lvstamp_${ID_GROW} is not provably this installation's volume: refusing to resize: ${detail}; left untouched`,
      );
      expect(headerIo.writes).toEqual([]);
      expect(headerIo.reads).toEqual([]);
    }
  });

  it('expand refuses a volume without a header before lvextend', async () => {
    const { runner, manager, headerIo } = setup([
      scopeStep(),
      lookupStep(ID_GROW, 'lvs-grow-before.json'),
    ]);
    headerIo.headers.delete(GROW_PATH);
    await expect(expandedVolume(manager, ID_GROW, 1024 * MiB, SCOPE)).rejects.toMatchObject({
      check: 'header',
      lv: `vg0/lvstamp_${ID_GROW}`,
    });
    runner.assertDone();
  });

  it('a create retry adopts an inactive volume: activates it, then checks its header', async () => {
    const { runner, manager, headerIo } = setup([
      // lvcreate makes this call's lvstamp_new_, lvrename refuses the taken name
      fastLvcreateStep(ID_203, 203 * MiB),
      renameRefusedStep(ID_203),
      vgStep('vg0', 'vgs-one.json'),
      // the look-up, the removal of that lvstamp_new_ and the activation under one holding of
      // the host lock
      lookupStep(ID_203, 'lvs-203-inactive-new.json', {}, ['vg0']),
      removeNewStep(ID_203),
      activateStep('vg0', `lvstamp_${ID_203}`),
      readBackStep('vg0', `lvstamp_${ID_203}`, 'lvs-203-final.json'),
    ]);
    headerIo.headers.set(`/dev/mapper/vg0-lvstamp_${ID_203}`, okHeader('pvc-203', ID_203));
    const created = await manager.createVolume({
      name: 'pvc-203',
      requiredBytes: 203 * MiB,
      vgName: 'vg0',
      ownerId: OWNER,
    });
    runner.assertDone();
    expect(created).toEqual(createdIn(ID_203, 203 * MiB));
    expect(headerIo.reads).toEqual([`/dev/mapper/vg0-lvstamp_${ID_203}`]);
  });

  it('activateVolume (stage): activates under the host lock after a re-check', async () => {
    const { runner, manager, hostLock } = setup([
      scopeStep(),
      lookupStep(ID_DEL, 'lvs-del-inactive.json'),
      scopeStep(),
      lookupStep(ID_DEL, 'lvs-del-inactive.json'),
      activateStep('vg-data', `lvstamp_${ID_DEL}`),
      readBackStep('vg-data', `lvstamp_${ID_DEL}`, 'lvs-del-final.json'),
    ]);
    expect(await manager.activateVolume(ID_DEL, SCOPE)).toMatchObject({ active: true });
    runner.assertDone();
    expect(hostLock.reasons).toEqual([`activate ${ID_DEL}`]);
  });

  it('activateVolume of an active volume runs one look-up and no lvchange', async () => {
    const { runner, manager } = setup([scopeStep(), lookupStep(ID_DEL, 'lvs-del-final.json')]);
    await manager.activateVolume(ID_DEL, SCOPE);
    runner.assertDone();
  });

  it("activateOwnedVolumes (GC): only the inactive LVs with this owner's tags, one lvchange each", async () => {
    const { runner, manager } = setup([
      scopeStep(),
      listStep('lvs-inactive.json'),
      scopeStep(),
      listStep('lvs-inactive.json'),
      activateStep('vg0', `lvstamp_${ID_INACTIVE}`),
    ]);
    expect(await manager.activateOwnedVolumes(SCOPE)).toEqual([`vg0/lvstamp_${ID_INACTIVE}`]);
    runner.assertDone();
  });

  it("activateOwnedSnapshots (GC): only inactive snapshots with this owner's tags, one `lvchange -ay -K` each", async () => {
    const snap = 'lvstamp_snap_5a0f3c2e1d4b6a798c0e2f4a6b8d0c1e';
    const { runner, manager } = setup([
      scopeStep(),
      listStep('lvs-snap-inactive.json'),
      scopeStep(),
      listStep('lvs-snap-inactive.json'),
      { argv: ['lvchange', '-ay', '-K', `vg0/${snap}`] },
    ]);
    expect(await manager.activateOwnedSnapshots(SCOPE)).toEqual([`vg0/${snap}`]);
    runner.assertDone();
  });

  it('deactivateSnapshots (GC): one `lvchange --activate n <vg>/<lv>` each, under the host lock; a failure is logged, the rest still run', async () => {
    const a = `lvstamp_snap_${'a'.repeat(32)}`;
    const b = `lvstamp_snap_${'b'.repeat(32)}`;
    const { runner, manager, hostLock, warnings } = setup([
      {
        argv: ['lvchange', '--activate', 'n', `vg0/${a}`],
        exitCode: 5,
        stderr: '  Logical volume vg0/x in use.\n',
      },
      { argv: ['lvchange', '--activate', 'n', `vg1/${b}`] },
    ]);
    await manager.deactivateSnapshots([`vg0/${a}`, `vg1/${b}`]);
    runner.assertDone();
    expect(hostLock.reasons).toEqual(['deactivate lvstamp snapshots']);
    expect(warnings.map(([message]) => message)).toEqual([
      'snapshot left active: deactivation failed',
    ]);
  });

  it('deactivateSnapshots refuses anything but <vg>/<snapshot LV> before any command', async () => {
    for (const entry of [
      `vg0/lvstamp_${'a'.repeat(32)}`,
      'vg0/pool0',
      `lvstamp_snap_${'a'.repeat(32)}`,
    ]) {
      const { runner, manager } = setup([]);
      expect(await caught(manager.deactivateSnapshots([entry]))).toEqual(
        new InvalidArgumentError(`"${entry}" is not <vg>/<snapshot LV>`),
      );
      expect(runner.calls).toEqual([]);
    }
  });

  it('listLogicalVolumes: the snapshot LVs of the scope only, any owner, one look-up, no header read', async () => {
    const { runner, manager, headerIo } = setup([scopeStep(), listStep('lvs-snap-inactive.json')]);
    const { snapshots: lvs } = await manager.listLogicalVolumes({ vgNames: SCOPE_VGS });
    expect(headerIo.reads).toEqual([]);
    expect(lvs.map((lv) => [lv.lvName, lv.active])).toEqual([
      ['lvstamp_snap_5a0f3c2e1d4b6a798c0e2f4a6b8d0c1e', false],
      ['lvstamp_snap_6b1f3c2e1d4b6a798c0e2f4a6b8d0c1e', false],
      ['lvstamp_snap_7c2f3c2e1d4b6a798c0e2f4a6b8d0c1e', true],
    ]);
    runner.assertDone();
  });

  it('activateOwnedVolumes of another owner activates nothing', async () => {
    const { runner, manager } = setup([scopeStep(), listStep('lvs-inactive.json')]);
    expect(
      await manager.activateOwnedVolumes({ vgNames: SCOPE_VGS, ownerId: OTHER_OWNER }),
    ).toEqual([]);
    runner.assertDone();
  });
});

describe('VolumeService: thin volumes (DESIGN.md §4 "Thin device classes", §5)', () => {
  const THIN = {
    type: 'thin',
    thinPool: 'pool0',
    thinPoolSizeBytes: null,
    overprovisionRatio: 2,
  } as const;
  const request = {
    name: 'pvc-202',
    requiredBytes: 202 * MiB,
    vgName: 'vg0',
    ownerId: OWNER,
    provisioning: THIN,
  };
  const poolReport: ReplayStep['argv'] = [
    'lvs',
    ...REPORT,
    '-o',
    'vg_name,vg_free,vg_extent_size,lv_name,lv_size,lv_attr,lv_permissions,pool_lv,data_percent,metadata_percent,lv_metadata_size,lv_health_status,lv_when_full,zero',
    '-S',
    'vg_name="vg0" && (lv_name="pool0" || pool_lv="pool0")',
  ];
  const row = (fields: Record<string, string>): Record<string, string> => ({
    vg_name: 'vg0',
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
  const poolRow = (data: string, metadata = '10.00', attr = 'twi-aotz--') =>
    row({
      lv_name: 'pool0',
      lv_size: String(1024 * MiB),
      lv_attr: attr,
      data_percent: data,
      metadata_percent: metadata,
      lv_metadata_size: '4194304',
      lv_when_full: 'error',
    });
  const thinRow = (name: string, bytes: number) =>
    row({ lv_name: name, lv_size: String(bytes), lv_attr: 'Vwi-a-tz--', pool_lv: 'pool0' });
  const poolStep = (rows: Record<string, string>[]): ReplayStep => ({
    argv: poolReport,
    stdout: JSON.stringify({ report: [{ lv: rows }] }),
  });
  const thinCreate = (id: string, bytes: number): string[] => [
    'lvcreate',
    '--yes',
    '--type',
    'thin',
    '-V',
    `${bytes}b`,
    '--thinpool',
    'vg0/pool0',
    '-n',
    `lvstamp_new_${id}`,
    '--addtag',
    'lvstamp',
    '--addtag',
    `lvstamp.owner=${OWNER}`,
  ];

  it('creates a thin LV in the pool, stamps it without clearing the data area, renames it, holding the host lock exclusively (the pool spans volumes)', async () => {
    const { runner, manager, headerIo, hostLock } = setup([
      vgStep('vg0', 'vgs-one.json'),
      lookupStep(ID_202, 'lvs-empty.json', {}, ['vg0']),
      poolStep([poolRow('5.00')]),
      { argv: thinCreate(ID_202, 204 * MiB) },
      renameStep(ID_202),
    ]);
    const volume = await manager.createVolume(request);
    runner.assertDone();
    expect(volume).toEqual(createdIn(ID_202, 202 * MiB));
    expect(headerIo.calls).toEqual([`write /dev/mapper/vg0-lvstamp_new_${ID_202}`]);
    expect(hostLock.kinds).toEqual(['exclusive']);
  });

  it('a thin class in a scope of one group never takes the fast path: a retry is one look-up and a header read, no lvcreate, no write', async () => {
    const { runner, manager, headerIo } = setup([
      vgStep('vg0', 'vgs-one.json'),
      lookupStep(ID_202, 'lvs-202-thin-final.json', {}, ['vg0']),
    ]);
    headerIo.headers.set(
      `/dev/mapper/vg0-lvstamp_${ID_202}`,
      okHeaderV2('pvc-202', ID_202, 202 * MiB),
    );
    const volume = await manager.createVolume(request);
    runner.assertDone();
    expect(volume).toEqual(createdIn(ID_202, 202 * MiB));
    expect(programs(runner)).toEqual(['lvm fullreport']);
    expect(headerIo.calls).toEqual([]);
    expect(headerIo.reads).toEqual([`/dev/mapper/vg0-lvstamp_${ID_202}`]);
  });

  it('creates an absent pool of thinPoolSize (tagged), sets --errorwhenfull y, before the first volume', async () => {
    const { runner, manager } = setup([
      vgStep('vg0', 'vgs-one.json'),
      lookupStep(ID_202, 'lvs-empty.json', {}, ['vg0']),
      poolStep([]),
      vgStep('vg0', 'vgs-one.json'),
      {
        argv: [
          'lvcreate',
          '--yes',
          '--type',
          'thin-pool',
          '-L',
          `${1024 * MiB}b`,
          '--addtag',
          'lvstamp',
          '--addtag',
          `lvstamp.owner=${OWNER}`,
          '-n',
          'pool0',
          'vg0',
        ],
      },
      { argv: ['lvchange', '--errorwhenfull', 'y', 'vg0/pool0'] },
      poolStep([poolRow('0.00')]),
      { argv: thinCreate(ID_202, 204 * MiB) },
      renameStep(ID_202),
    ]);
    await manager.createVolume({
      ...request,
      provisioning: { ...THIN, thinPoolSizeBytes: 1024 * MiB },
    });
    runner.assertDone();
  });

  it('activates an inactive pool alone (lvchange -ay VG/POOL) before measuring it', async () => {
    const { runner, manager } = setup([
      vgStep('vg0', 'vgs-one.json'),
      lookupStep(ID_202, 'lvs-empty.json', {}, ['vg0']),
      poolStep([poolRow('', '', 'twi---tz--')]),
      { argv: ['lvchange', '-ay', 'vg0/pool0'] },
      poolStep([poolRow('1.00')]),
      { argv: thinCreate(ID_202, 204 * MiB) },
      renameStep(ID_202),
    ]);
    await manager.createVolume(request);
    runner.assertDone();
  });

  it.each<[string, Record<string, string>[], string]>([
    [
      'the budget is spent',
      [poolRow('1.00'), thinRow('other', 1900 * MiB)],
      'admits 155189248 bytes more',
    ],
    ['the pool is full', [poolRow('100.00', '10.00', 'twi-aotzD-')], 'out of data space'],
    ['metadata is at 80 %', [poolRow('1.00', '80.00')], 'metadata is 80 % used'],
  ])('OutOfSpaceError before any lvcreate when %s', async (_what, rows, message) => {
    const { runner, manager } = setup([
      vgStep('vg0', 'vgs-one.json'),
      lookupStep(ID_202, 'lvs-empty.json', {}, ['vg0']),
      poolStep(rows),
    ]);
    const error = await caught(manager.createVolume(request));
    runner.assertDone();
    expect(error).toBeInstanceOf(OutOfSpaceError);
    expect((error as Error).message).toContain(message);
  });

  it('ThinPoolUnusableError when the LV of the pool name is no thin pool, or zeroing is off', async () => {
    for (const rows of [
      [row({ lv_name: 'pool0', lv_size: String(1024 * MiB), lv_attr: '-wi-a-----', zero: '' })],
      [{ ...poolRow('1.00'), zero: '' }],
    ]) {
      const { runner, manager } = setup([
        vgStep('vg0', 'vgs-one.json'),
        lookupStep(ID_202, 'lvs-empty.json', {}, ['vg0']),
        poolStep(rows),
      ]);
      const error = await caught(manager.createVolume(request));
      runner.assertDone();
      expect(error).toBeInstanceOf(ThinPoolUnusableError);
    }
  });

  describe('expand of a thin volume', () => {
    const GROW_PATH = `/dev/mapper/vg0-lvstamp_${ID_GROW}`;
    const growLv = `lvstamp_${ID_GROW}`;
    const thinGrow = readFileSync(`${CORE_FIXTURES_DIR}lvm/lvs-grow-before.json`, 'utf8').replace(
      '"lv_attr":"-wi-ao----"',
      '"lv_attr":"Vwi-aotz--"',
    );
    const lookup = { argv: lookupStep(ID_GROW, 'lvs-grow-before.json').argv, stdout: thinGrow };
    const pools = [{ vgName: 'vg0', thin: THIN }];

    it('checks the pool budget, then lvextend -L of the thin LV', async () => {
      expect(thinGrow).toContain('Vwi-aotz--');
      const { runner, manager, headerIo } = setup([
        scopeStep(),
        lookup,
        poolStep([poolRow('5.00'), thinRow(growLv, 104 * MiB)]),
        { argv: ['lvextend', '--yes', '-L', `${204 * MiB}b`, `vg0/${growLv}`] },
      ]);
      headerIo.headers.set(GROW_PATH, okHeaderV2('pvc-grow', ID_GROW, 103 * MiB));
      const volume = await expandedVolume(manager, ID_GROW, 200 * MiB, SCOPE, {
        thinPools: pools,
      });
      runner.assertDone();
      expect(volume).toMatchObject({ sizeBytes: 204 * MiB, capacityBytes: 200 * MiB });
    });

    it('OutOfSpaceError and no lvextend when the pool cannot take the growth', async () => {
      const { runner, manager, headerIo } = setup([
        scopeStep(),
        lookup,
        poolStep([poolRow('97.00'), thinRow(growLv, 104 * MiB)]),
      ]);
      headerIo.headers.set(GROW_PATH, okHeaderV2('pvc-grow', ID_GROW, 103 * MiB));
      const error = await caught(manager.expand(ID_GROW, 200 * MiB, SCOPE, { thinPools: pools }));
      runner.assertDone();
      expect(error).toBeInstanceOf(OutOfSpaceError);
      expect((error as Error).message).toContain('cannot grow volume');
      expect(headerIo.writes).toEqual([]);
    });

    it('FailedPreconditionError when no thin class names its pool', async () => {
      const { runner, manager, headerIo } = setup([scopeStep(), lookup]);
      headerIo.headers.set(GROW_PATH, okHeaderV2('pvc-grow', ID_GROW, 103 * MiB));
      const error = await caught(manager.expand(ID_GROW, 200 * MiB, SCOPE));
      runner.assertDone();
      expect(error).toBeInstanceOf(FailedPreconditionError);
      expect((error as Error).message).toContain('in a pool that no thin device class names');
    });
  });

  it('deletes a thin volume with lvremove and no wipe, whatever the wipe policy', async () => {
    const thinDel = readFileSync(`${CORE_FIXTURES_DIR}lvm/lvs-del-final.json`, 'utf8').replace(
      /"lv_attr":"-wi-a-----"/,
      '"lv_attr":"Vwi-a-tz--"',
    );
    expect(thinDel).toContain('Vwi-a-tz--');
    const { runner, manager } = setup([
      scopeStep(),
      { argv: lookupStep(ID_DEL, 'lvs-del-final.json').argv, stdout: thinDel },
      { argv: ['lvremove', '--yes', `vg-data/lvstamp_${ID_DEL}`] },
    ]);
    const result = await manager.delete(ID_DEL, SCOPE, { wipe: 'zero' });
    runner.assertDone();
    expect(result.removed).toEqual([`vg-data/lvstamp_${ID_DEL}`]);
  });
});

describe('createVolume: the lvstamp_new_ that an attempt without the look-up made beside an existing volume', () => {
  const request = { name: 'pvc-203', requiredBytes: 203 * MiB, vgName: 'vg0', ownerId: OWNER };
  const finalPath = `/dev/mapper/vg0-lvstamp_${ID_203}`;
  const newPath = `/dev/mapper/vg0-lvstamp_new_${ID_203}`;

  // An inactive volume (after a reboot) is not in sysfs, so a create retry first makes an
  // lvstamp_new_<id> beside it; a failure or a crash before that LV is removed again leaves it:
  // the header write, a timed-out lvrename, the look-up, or a killed driver. The GC keeps it
  // while the volume is live (planner.test.ts "an interrupted create … is kept when live"), so
  // the next create's adoption must remove it (removeOwnLeftovers), or the volume's size leaks.
  it.each<[string, ReplayStep[], Error | null]>([
    [
      'the look-up after the refused lvrename timed out',
      [
        fastLvcreateStep(ID_203, 203 * MiB),
        renameRefusedStep(ID_203),
        vgStep('vg0', 'vgs-one.json', { timeout: true }),
        lookupStep(ID_203, 'lvs-203-inactive-new.json', {}, ['vg0']),
      ],
      null,
    ],
    [
      'the lvrename timed out (lvm refused it, unseen)',
      [fastLvcreateStep(ID_203, 203 * MiB), { ...renameStep(ID_203), timeout: true }],
      null,
    ],
    [
      'the header write on the new LV hung',
      [fastLvcreateStep(ID_203, 203 * MiB)],
      new IoTimeoutError(newPath, 'write', 60_000),
    ],
  ])(
    'converges after a failure once the fast lvcreate made lvstamp_new_ (%s): the retry removes that LV',
    async (_what, firstCall, writeError) => {
      const { runner, manager, headerIo } = setup([
        // the first call (sysfs shows no active lvstamp_<id>: the LV is inactive after a reboot)
        ...firstCall,
        // the retry: lvcreate refused (the first call's lvstamp_new_ is there), the look-up finds
        // both LVs, the volume is adopted (activated, header checked), then that leftover removed
        fastLvcreateStep(ID_203, 203 * MiB, existsIn(`lvstamp_new_${ID_203}`)),
        vgStep('vg0', 'vgs-one.json'),
        lookupStep(ID_203, 'lvs-203-inactive-new.json', {}, ['vg0']),
        activateStep('vg0', `lvstamp_${ID_203}`),
        readBackStep('vg0', `lvstamp_${ID_203}`, 'lvs-203-final.json'),
        removeNewStep(ID_203),
      ]);
      headerIo.headers.set(finalPath, okHeader('pvc-203', ID_203));
      headerIo.writeError = writeError;
      await expect(manager.createVolume(request)).rejects.toBeInstanceOf(
        writeError === null ? CommandTimeoutError : IoTimeoutError,
      );
      headerIo.writeError = null;
      const retried = await manager.createVolume(request);
      expect(
        runner.calls.filter((c) => c.argv[0] === 'lvremove').map((c) => c.argv),
        'the retry must remove the lvstamp_new_ the failed call made (the GC never will: its ID is live)',
      ).toEqual([['lvremove', '--yes', `vg0/lvstamp_new_${ID_203}`]]);
      expect(retried).toEqual(createdIn(ID_203, 203 * MiB));
      runner.assertDone();
    },
  );

  it("an earlier call's leftover stays when the existing volume is refused (no valid header): kept to look at", async () => {
    const { runner, manager, headerIo } = setup([
      fastLvcreateStep(ID_203, 203 * MiB, existsIn(`lvstamp_new_${ID_203}`)),
      vgStep('vg0', 'vgs-one.json'),
      lookupStep(ID_203, 'lvs-203-inactive-new.json', {}, ['vg0']),
      activateStep('vg0', `lvstamp_${ID_203}`),
      readBackStep('vg0', `lvstamp_${ID_203}`, 'lvs-203-final.json'),
    ]);
    headerIo.headers.set(finalPath, { status: 'corrupt', reason: 'bad checksum' });
    expect(await caught(manager.createVolume(request))).toBeInstanceOf(FailedPreconditionError);
    runner.assertDone();
    expect(programs(runner)).not.toContain('lvremove');
  });

  it('a leftover with another owner tag is left in place, logged, and the volume adopted', async () => {
    // the inactive volume and an lvstamp_new_ beside it that carries another owner's tag
    const report = readFileSync(
      `${CORE_FIXTURES_DIR}lvm/lvs-203-inactive-new.json`,
      'utf8',
    ).replace(
      `"lv_tags":"lvstamp,lvstamp.owner=${OWNER}"}\n              ]`,
      `"lv_tags":"lvstamp,lvstamp.owner=${OTHER_OWNER}"}\n              ]`,
    );
    expect(report).toContain(OTHER_OWNER);
    const { argv } = lookupStep(ID_203, 'lvs-empty.json', {}, ['vg0']);
    const { runner, manager, headerIo, warnings } = setup([
      fastLvcreateStep(ID_203, 203 * MiB, existsIn(`lvstamp_new_${ID_203}`)),
      vgStep('vg0', 'vgs-one.json'),
      { argv, stdout: report },
      activateStep('vg0', `lvstamp_${ID_203}`),
      readBackStep('vg0', `lvstamp_${ID_203}`, 'lvs-203-final.json'),
    ]);
    headerIo.headers.set(finalPath, okHeader('pvc-203', ID_203));
    expect(await manager.createVolume(request)).toEqual(createdIn(ID_203, 203 * MiB));
    runner.assertDone();
    expect(programs(runner)).not.toContain('lvremove');
    expect(warnings).toEqual([
      [
        'interrupted create left in place',
        {
          lv: `vg0/lvstamp_new_${ID_203}`,
          reason: `it lacks the owner tag lvstamp.owner=${OWNER} (tags: lvstamp,lvstamp.owner=${OTHER_OWNER})`,
        },
      ],
    ]);
  });
});

describe('createVolume without the look-up answers as the look-up path did', () => {
  const request = { name: 'pvc-203', requiredBytes: 203 * MiB, vgName: 'vg0', ownerId: OWNER };
  const pendingOf = (tags: string): ReplayStep => ({
    argv: [],
    stdout: JSON.stringify({
      report: [
        {
          lv: [
            {
              vg_name: 'vg0',
              lv_name: `lvstamp_new_${ID_203}`,
              lv_uuid: 'Pq5w8E-3r6T-y9U2-i5O8-p1A4-s7D0-f3G6hJ',
              lv_size: '213909504',
              lv_attr: '-wi-a-----',
              lv_kernel_major: '253',
              lv_kernel_minor: '6',
              lv_dm_path: `/dev/mapper/vg0-lvstamp_new_${ID_203}`,
              lv_time: '1732900000',
              lv_tags: tags,
            },
          ],
        },
      ],
    }),
  });

  it.each([
    ['another owner', `lvstamp,lvstamp.owner=${OTHER_OWNER}`],
    ['no lvstamp tag', `lvstamp.owner=${OWNER}`],
  ])(
    'an lvstamp_new_<id> with foreign tags (%s): lvcreate refused, NotOwnedError from the look-up, nothing removed or written',
    async (_what, tags) => {
      const { argv } = lookupStep(ID_203, 'lvs-empty.json', {}, ['vg0']);
      const { stdout = '' } = pendingOf(tags);
      const { runner, manager, headerIo } = setup([
        fastLvcreateStep(ID_203, 203 * MiB, existsIn(`lvstamp_new_${ID_203}`)),
        vgStep('vg0', 'vgs-one.json'),
        { argv, stdout },
      ]);
      const error = await caught(manager.createVolume(request));
      runner.assertDone();
      expect(error).toBeInstanceOf(NotOwnedError);
      expect(programs(runner)).toEqual(['lvcreate', 'lvm fullreport']);
      expect(headerIo.calls).toEqual([]);
    },
  );
});
