import { warningLine } from './output.js';
import { describe, expect, it } from 'vitest';
import { IoTimeoutError, VolumeGroupUnusableError } from '@lvstamp/core';
import { EXIT_FAILED } from '@lvstamp/app-kit';
import { describeFailure } from './errors.js';

describe('describeFailure', () => {
  it('a device that does not answer: exit 1, naming the device', () => {
    expect(
      describeFailure(new IoTimeoutError('/dev/mapper/vg0-lvstamp_9a1c', 'read', 60000)),
    ).toEqual({
      exitCode: EXIT_FAILED,
      message:
        'read of /dev/mapper/vg0-lvstamp_9a1c did not finish within 60000 ms: the device does not answer',
    });
  });

  it("a broken volume group: exit 1 with lvm's whole message on one line", () => {
    const error = new VolumeGroupUnusableError(
      'vg0',
      'duplicate-pv',
      'WARNING: Not using device /dev/loop3 for PV DMgc9Z.\nCannot update volume group vg0 with duplicate PV devices.',
    );
    expect(describeFailure(error)).toEqual({
      exitCode: EXIT_FAILED,
      message:
        'volume group vg0 is unusable (duplicate-pv): WARNING: Not using device /dev/loop3 for PV DMgc9Z.; Cannot update volume group vg0 with duplicate PV devices.',
    });
  });
});

describe('warningLine', () => {
  it('puts the message, the argv and the stderr of a warning on one line', () => {
    expect(
      warningLine('command succeeded with output on stderr', {
        argv: ['lvcreate', '-s', 'vg0/lvstamp_1'],
        stderr: '  WARNING: Sum of all thin volume sizes exceeds the pool.\n  Second line.\n',
      }),
    ).toBe(
      'lvstamp: warning: command succeeded with output on stderr; argv: lvcreate -s vg0/lvstamp_1; stderr: WARNING: Sum of all thin volume sizes exceeds the pool.; Second line.\n',
    );
    expect(warningLine('created thin pool', { sizeBytes: 1024 })).toBe(
      'lvstamp: warning: created thin pool; sizeBytes: 1024\n',
    );
  });
});
