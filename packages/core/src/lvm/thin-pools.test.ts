import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CommandFailedError, OutOfSpaceError, ThinPoolUnusableError } from '../errors.js';
import { NoopHostLock } from '../lock/host-lock.js';
import { CORE_FIXTURES_DIR, ReplayRunner, type ReplayStep } from '../testing/replay-runner.js';
import { Lvm } from './lvm.js';
import { thinLvCreateArgv, thinPoolCreateArgv } from './thin-pools.js';

// Real lvm2 2.03.16 outputs (fixtures/thin/recorded, record-thin.sh): group lvsthin, pool pool0.
const VG = 'lvsthin';
const REPORT = ['--reportformat', 'json', '--units', 'b', '--nosuffix'];
const POOL_REPORT = (pool: string): string[] => [
  'lvs',
  ...REPORT,
  '-o',
  'vg_name,vg_free,vg_extent_size,lv_name,lv_size,lv_attr,lv_permissions,pool_lv,data_percent,metadata_percent,lv_metadata_size,lv_health_status,lv_when_full,zero',
  '-S',
  `vg_name="${VG}" && (lv_name="${pool}" || pool_lv="${pool}")`,
];

function recorded(name: string): Omit<ReplayStep, 'argv'> {
  const read = (ext: string): string =>
    readFileSync(`${CORE_FIXTURES_DIR}thin/recorded/${name}.${ext}`, 'utf8');
  return { stdout: read('stdout'), stderr: read('stderr'), exitCode: Number(read('exit').trim()) };
}

function recordedArgv(name: string): string {
  return readFileSync(`${CORE_FIXTURES_DIR}thin/recorded/${name}.argv`, 'utf8').trim();
}

function lvmWith(steps: ReplayStep[]): { lvm: Lvm; runner: ReplayRunner } {
  const runner = new ReplayRunner(steps);
  return { lvm: new Lvm({ runner, hostLock: new NoopHostLock() }), runner };
}

describe('thin pool argv', () => {
  it('creates a pool with lvm defaults, tags, exact bytes (no --errorwhenfull: lvcreate refuses it)', () => {
    expect(
      thinPoolCreateArgv({
        vgName: VG,
        poolName: 'pool0',
        sizeBytes: 1073741824,
        tags: ['lvstamp', 'lvstamp.owner=' + '0'.repeat(32)],
      }),
    ).toEqual([
      'lvcreate',
      '--yes',
      '--type',
      'thin-pool',
      '-L',
      '1073741824b',
      '--addtag',
      'lvstamp',
      '--addtag',
      'lvstamp.owner=00000000000000000000000000000000',
      '-n',
      'pool0',
      VG,
    ]);
  });

  it('creates a thin LV without --zero and without --wipesignatures (thin-create)', () => {
    const argv = thinLvCreateArgv({
      vgName: VG,
      poolName: 'pool0',
      lvName: 'lvstamp_new_9a1c0d3b5e7f4a2c8b6d1e0f3a5c7e0b',
      virtualSizeBytes: 67108864,
      tags: ['lvstamp', 'lvstamp.owner=00000000000000000000000000000000'],
    });
    expect(argv).toEqual([
      'lvcreate',
      '--yes',
      '--type',
      'thin',
      '-V',
      '67108864b',
      '--thinpool',
      'lvsthin/pool0',
      '-n',
      'lvstamp_new_9a1c0d3b5e7f4a2c8b6d1e0f3a5c7e0b',
      '--addtag',
      'lvstamp',
      '--addtag',
      'lvstamp.owner=00000000000000000000000000000000',
    ]);
    expect(argv).not.toContain('--zero');
  });
});

describe('ThinPools.report', () => {
  it('reads the pool, its thin LVs and the group free space from one lvs (capacity-one-lvs)', async () => {
    const { lvm, runner } = lvmWith([
      { argv: POOL_REPORT('pool0'), ...recorded('capacity-one-lvs') },
    ]);
    const report = await lvm.thinPools.report(VG, 'pool0');
    runner.assertDone();
    expect(report.vgFreeBytes).toBe(7503609856);
    expect(report.extentSizeBytes).toBe(4194304);
    expect(report.pool).toEqual({
      vgName: VG,
      poolName: 'pool0',
      sizeBytes: 1073741824,
      attr: 'twi-aotz--',
      isThinPool: true,
      dataHundredths: 0,
      metadataHundredths: 1152,
      healthStatus: '',
      whenFull: 'queue',
      zero: true,
    });
    expect(report.thinLvs.map((lv) => [lv.lvName, lv.sizeBytes, lv.writeable])).toEqual([
      ['lvstamp_new_9a1c0d3b5e7f4a2c8b6d1e0f3a5c7e0b', 67108864, true],
      ['oddsize', 1077936128, true],
      ['oddsize2', 71303168, true],
      ['over', 2147483648, true],
      ['tagged', 8388608, true],
      ['wiped2', 8388608, true],
    ]);
  });

  it('reads an inactive pool as unknown usage, never NaN', async () => {
    const stdout = JSON.stringify({
      report: [
        {
          lv: [
            {
              vg_name: VG,
              vg_free: '0',
              vg_extent_size: '4194304',
              lv_name: 'pool0',
              lv_size: '1073741824',
              lv_attr: 'twi---tz--',
              lv_permissions: 'writeable',
              pool_lv: '',
              data_percent: '',
              metadata_percent: '',
              lv_metadata_size: '4194304',
              lv_health_status: '',
              lv_when_full: 'error',
              zero: 'zero',
            },
          ],
        },
      ],
    });
    const { lvm } = lvmWith([{ argv: POOL_REPORT('pool0'), stdout }]);
    const report = await lvm.thinPools.report(VG, 'pool0');
    expect(report.pool?.dataHundredths).toBeNull();
    expect(report.pool?.metadataHundredths).toBeNull();
  });

  it('sees a plain LV of the pool name as no thin pool', async () => {
    const stdout = JSON.stringify({
      report: [
        {
          lv: [
            {
              vg_name: VG,
              vg_free: '0',
              vg_extent_size: '4194304',
              lv_name: 'plain',
              lv_size: '8388608',
              lv_attr: '-wi-a-----',
              lv_permissions: 'writeable',
              pool_lv: '',
              data_percent: '',
              metadata_percent: '',
              lv_metadata_size: '',
              lv_health_status: '',
              lv_when_full: '',
              zero: '',
            },
          ],
        },
      ],
    });
    const { lvm } = lvmWith([{ argv: POOL_REPORT('plain'), stdout }]);
    const report = await lvm.thinPools.report(VG, 'plain');
    expect(report.pool?.isThinPool).toBe(false);
    expect(report.pool?.zero).toBe(false);
  });

  it('returns no rows and no free space for an absent pool', async () => {
    const { lvm } = lvmWith([{ argv: POOL_REPORT('pool0'), stdout: '{"report":[{"lv":[]}]}' }]);
    expect(await lvm.thinPools.report(VG, 'pool0')).toEqual({
      vgFreeBytes: null,
      extentSizeBytes: null,
      pool: null,
      thinLvs: [],
    });
  });
});

describe('thin failures (recorded lvm2 messages)', () => {
  const create = {
    vgName: VG,
    poolName: 'small',
    lvName: 'more',
    virtualSizeBytes: 8388608,
    tags: [],
  };
  const argv = thinLvCreateArgv(create);

  it.each([['full-thin-create-when-full'], ['threshold-create-70']])(
    '%s: "reached threshold" is OutOfSpaceError',
    async (name) => {
      const { lvm } = lvmWith([{ argv, ...recorded(name) }]);
      const error = await lvm.thinPools.createThinLv(create).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OutOfSpaceError);
      expect((error as Error).message).toContain('thin pool lvsthin/small is full: lvcreate');
      expect((error as Error).message).toContain('reached threshold');
    },
  );

  it.each([
    ['thin-on-plain-lv', 'Logical volume lvsthin/plain is not a thin pool.'],
    ['thin-on-missing-pool', 'Pool nosuchpool not found in Volume group lvsthin.'],
  ])('%s: the class is unusable (ThinPoolUnusableError)', async (name, message) => {
    const { lvm } = lvmWith([{ argv, ...recorded(name) }]);
    const error = await lvm.thinPools.createThinLv(create).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ThinPoolUnusableError);
    expect((error as Error).message).toBe(`thin pool lvsthin/small is unusable: ${message}`);
  });

  it('leaves any other failure a CommandFailedError', async () => {
    const { lvm } = lvmWith([{ argv, exitCode: 5, stderr: 'something else' }]);
    const error = await lvm.thinPools.createThinLv(create).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CommandFailedError);
  });

  it('extends a thin LV with lvextend -L <bytes>b and classifies a full pool', async () => {
    const { lvm, runner } = lvmWith([
      {
        argv: ['lvextend', '--yes', '-L', '75497472b', 'lvsthin/more'],
        ...recorded('full-thin-create-when-full'),
      },
    ]);
    const error = await lvm.thinPools
      .extendThinLv(VG, 'small', 'more', 75497472)
      .catch((e: unknown) => e);
    runner.assertDone();
    expect(error).toBeInstanceOf(OutOfSpaceError);
  });

  it('activates a pool alone with lvchange -ay VG/POOL (act-pool-only)', async () => {
    const { lvm, runner } = lvmWith([
      { argv: ['lvchange', '-ay', 'lvsthin/pool0'], ...recorded('act-pool-only') },
    ]);
    await lvm.thinPools.activate(VG, 'pool0');
    runner.assertDone();
  });

  it('a kernel without the thin-pool target (lvm could not modprobe dm-thin-pool) is ThinPoolUnusableError naming the fix (pool-create-no-modprobe)', async () => {
    const request = {
      vgName: 'lvstamp',
      poolName: 'pool0',
      sizeBytes: 1073741824,
      tags: ['lvstamp', 'lvstamp.owner=ec2d4103709c50187faf62d3658a45b0'],
    };
    const argv = thinPoolCreateArgv(request);
    expect(argv.join(' ')).toBe(recordedArgv('pool-create-no-modprobe'));
    const { lvm, runner } = lvmWith([{ argv, ...recorded('pool-create-no-modprobe') }]);
    const error = await lvm.thinPools.create(request).catch((e: unknown) => e);
    runner.assertDone(); // no lvchange --errorwhenfull after the failed lvcreate
    expect(error).toBeInstanceOf(ThinPoolUnusableError);
    expect((error as Error).message).toBe(
      'thin pool lvstamp/pool0 is unusable: the kernel has no thin-pool target and lvm could not ' +
        'load it: load the dm_thin_pool module on the node (modprobe dm_thin_pool; at boot: ' +
        '/etc/modules-load.d), or give the driver the host’s /lib/modules and kmod ' +
        `(deploy/kubernetes/daemonset.yaml does) (${argv.join(' ')}: /sbin/modprobe: execvp failed: No such ` +
        'file or directory | /sbin/modprobe failed: 2 | thin-pool: Required device-mapper ' +
        "target(s) not detected in your kernel. | Run `lvcreate --help' for more information.)",
    );
  });

  it('an inactive pool that cannot be activated for want of the target is ThinPoolUnusableError (pool-activate-no-modprobe)', async () => {
    const { lvm, runner } = lvmWith([
      { argv: ['lvchange', '-ay', 'brkvg/pool0'], ...recorded('pool-activate-no-modprobe') },
    ]);
    expect(recordedArgv('pool-activate-no-modprobe')).toBe('lvchange -ay brkvg/pool0');
    const error = await lvm.thinPools.activate('brkvg', 'pool0').catch((e: unknown) => e);
    runner.assertDone();
    expect(error).toBeInstanceOf(ThinPoolUnusableError);
    expect((error as Error).message).toMatch(
      /^thin pool brkvg\/pool0 is unusable: the kernel has no thin-pool target and lvm could not load it: .*\(lvchange -ay brkvg\/pool0: .*thin-pool target support missing from kernel\?\)$/,
    );
  });

  it('creates a pool, then sets --errorwhenfull y with lvchange (pool-create, full-set-errorwhenfull)', async () => {
    const request = { vgName: VG, poolName: 'pool0', sizeBytes: 1073741824, tags: ['lvstamp'] };
    const { lvm, runner } = lvmWith([
      { argv: thinPoolCreateArgv(request), ...recorded('pool-create') },
      {
        argv: ['lvchange', '--errorwhenfull', 'y', 'lvsthin/pool0'],
        ...recorded('full-set-errorwhenfull'),
      },
    ]);
    await lvm.thinPools.create(request);
    runner.assertDone();
  });
});
