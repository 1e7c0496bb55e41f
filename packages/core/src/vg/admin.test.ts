import { describe, expect, it } from 'vitest';
import { FailedPreconditionError, InvalidArgumentError } from '../errors.js';
import { ReplayRunner } from '../testing/replay-runner.js';
import { NoopHostLock } from '../lock/host-lock.js';
import { Lvm } from '../lvm/lvm.js';
import { VolumeGroupAdmin } from './admin.js';

describe('VolumeGroupAdmin: names lvm cannot hold lvstamp LVs in', () => {
  // 81 bytes: lvcreate of "lvstamp_new_<32 hex>" fails with "LV name ... length 128 is not
  // supported"; 74 + "-b-c-d": the dm name "…--b--c--d-lvstamp_new_…" is 128 bytes (lvm2 2.03.16)
  it.each([['v'.repeat(81)], [`${'v'.repeat(74)}-b-c-d`]])(
    'refuses %s before running any command',
    async (name) => {
      const runner = new ReplayRunner([]);
      const hostLock = new NoopHostLock();
      const admin = new VolumeGroupAdmin({ lvm: new Lvm({ runner, hostLock }), runner, hostLock });
      await expect(admin.create({ name, devices: ['/dev/sdb'] })).rejects.toThrow(
        InvalidArgumentError,
      );
      await expect(
        admin.createOnLoop({ name, file: '/nonexistent/f', sizeBytes: 64 * 1024 * 1024 }),
      ).rejects.toThrow(/too long for lvstamp's LV names/);
      runner.assertDone();
    },
  );
});

describe('VolumeGroupAdmin: a kernel without device-mapper', () => {
  // what dmsetup 1.02.185 says on a kernel without the driver (seen on a container host)
  const noDriver = {
    argv: ['dmsetup', 'version'],
    exitCode: 1,
    stdout: 'Library version:   1.02.185 (2022-05-18)\n',
    stderr:
      '/dev/mapper/control: open failed: No such device\n' +
      'Failure to communicate with kernel device-mapper driver.\n',
  };

  it('refuses vg create on a loop file before making the file, a loop device or a group', async () => {
    const runner = new ReplayRunner([noDriver]);
    const hostLock = new NoopHostLock();
    const admin = new VolumeGroupAdmin({ lvm: new Lvm({ runner, hostLock }), runner, hostLock });
    const error = await admin
      .createOnLoop({ name: 'demo', file: '/nonexistent/dir/f', sizeBytes: 64 * 1024 * 1024 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FailedPreconditionError);
    expect((error as Error).message).toBe(
      "this host's kernel has no device-mapper driver (dmsetup version: /dev/mapper/control: open failed: No such device); " +
        'lvstamp volumes could not be activated here, so no volume group is created',
    );
    runner.assertDone();
  });

  it('refuses vg create on devices before pvcreate', async () => {
    const runner = new ReplayRunner([noDriver]);
    const hostLock = new NoopHostLock();
    const admin = new VolumeGroupAdmin({ lvm: new Lvm({ runner, hostLock }), runner, hostLock });
    await expect(admin.create({ name: 'data', devices: ['/dev/sdb'] })).rejects.toThrow(
      FailedPreconditionError,
    );
    runner.assertDone();
  });
});
