import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../errors.js';
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
