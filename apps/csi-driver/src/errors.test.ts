import { status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import {
  AlreadyExistsError,
  CommandFailedError,
  CommandTimeoutError,
  FailedPreconditionError,
  InvalidArgumentError,
  IoTimeoutError,
  KeyedMutex,
  LockTimeoutError,
  NotFoundError,
  NotOwnedError,
  OutOfSpaceError,
  snapshotIdForName,
  UnparseableOutputError,
  VolumeGroupUnusableError,
} from '@lvstamp/core';
import { CsiError, toRpcFailure } from './errors.js';
import { bySnapshotId, bySnapshotName, byVolumeId, withRpcLocks } from './lock.js';
import { readBytes } from './sizes.js';

const outcome = {
  argv: ['lvs', 'vg0'],
  exitCode: 5,
  stdout: '',
  stderr: 'line one\nGlobal lock failed\n',
};

describe('toRpcFailure', () => {
  it.each([
    [new InvalidArgumentError('bad'), status.INVALID_ARGUMENT, 'bad'],
    [new NotFoundError('gone'), status.NOT_FOUND, 'gone'],
    [new AlreadyExistsError('other size'), status.ALREADY_EXISTS, 'other size'],
    [new OutOfSpaceError('full'), status.RESOURCE_EXHAUSTED, 'full'],
    [
      new FailedPreconditionError('mounted\nelsewhere'),
      status.FAILED_PRECONDITION,
      'mounted; elsewhere',
    ],
    [
      new NotOwnedError('vg0/lvstamp_x', 'header', 'refusing to delete: its header is not-stamped'),
      status.FAILED_PRECONDITION,
      "vg0/lvstamp_x is not provably this installation's volume: refusing to delete: its header is not-stamped; left untouched",
    ],
    [new LockTimeoutError('busy'), status.ABORTED, 'busy'],
    [
      new CommandTimeoutError(outcome, 30000),
      status.DEADLINE_EXCEEDED,
      'lvs vg0 timed out after 30000 ms and was killed',
    ],
    [
      new IoTimeoutError('/dev/mapper/vg0-lvstamp_9a1c', 'read', 60000),
      status.DEADLINE_EXCEEDED,
      'read of /dev/mapper/vg0-lvstamp_9a1c did not finish within 60000 ms: the device does not answer',
    ],
    [
      new VolumeGroupUnusableError(
        'vg0',
        'missing-pv',
        "WARNING: Couldn't find device with uuid x.\nCannot change VG vg0 while PVs are missing.",
      ),
      status.RESOURCE_EXHAUSTED,
      "volume group vg0 is unusable (missing-pv): WARNING: Couldn't find device with uuid x.; Cannot change VG vg0 while PVs are missing.",
    ],
    [
      new CommandFailedError(outcome),
      status.INTERNAL,
      'lvs vg0 exited 5: line one | Global lock failed',
    ],
    [
      new UnparseableOutputError(outcome, 'not JSON'),
      status.INTERNAL,
      'cannot parse the output of lvs vg0: not JSON',
    ],
    [new CsiError(status.OUT_OF_RANGE, 'too big'), status.OUT_OF_RANGE, 'too big'],
    [new TypeError('x is undefined'), status.INTERNAL, 'internal error'],
    ['a string', status.INTERNAL, 'internal error'],
  ])('maps %s', (error, code, details) => {
    expect(toRpcFailure(error)).toEqual({ code, details });
  });

  it('carries the whole bounded stderr of a failed command, not only its last line', () => {
    const lines = Array.from({ length: 300 }, (_, i) => `  WARNING: line ${i}`);
    const failure = toRpcFailure(
      new CommandFailedError({
        ...outcome,
        stderr: `${lines.join('\n')}\n  Volume group "vg0" not found\n`,
      }),
    );
    expect(failure.code).toBe(status.INTERNAL);
    expect(
      failure.details.startsWith('lvs vg0 exited 5: WARNING: line 0 | WARNING: line 1 |'),
    ).toBe(true);
    expect(failure.details.endsWith('WARNING: line 299 | Volume group "vg0" not found')).toBe(true);
    expect(failure.details).toMatch(/ \[… \d+ bytes cut …\] /);
    expect(Buffer.byteLength(failure.details)).toBeLessThanOrEqual(
      'lvs vg0 exited 5: '.length + 4096,
    );
  });
});

describe('readBytes', () => {
  it('keeps 64-bit values exact up to 2^53 - 1 and refuses more', () => {
    expect(readBytes('f', '1099511627776')).toBe(2 ** 40);
    expect(readBytes('f', '9007199254740991')).toBe(Number.MAX_SAFE_INTEGER);
    expect(() => readBytes('f', '9007199254740993')).toThrow(
      expect.objectContaining({ code: status.OUT_OF_RANGE }),
    );
    expect(() => readBytes('f', '-1')).toThrow(
      expect.objectContaining({ code: status.INVALID_ARGUMENT }),
    );
  });
});

describe('withRpcLocks', () => {
  it('runs different volumes together and refuses a second call on one volume', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const order: string[] = [];
    const handlers = withRpcLocks(
      {
        Op: async (request: { id: string }) => {
          order.push(`start ${request.id}`);
          if (request.id === 'a') await gate;
          return request.id;
        },
      },
      { Op: (request: { id: string }) => `volume ${request.id}` },
      new KeyedMutex(),
    );
    const first = handlers.Op({ id: 'a' });
    await expect(handlers.Op({ id: 'a' })).rejects.toThrow(
      new LockTimeoutError('an operation on volume a is already in progress'),
    );
    expect(await handlers.Op({ id: 'b' })).toBe('b');
    release();
    expect(await first).toBe('a');
    expect(await handlers.Op({ id: 'a' })).toBe('a');
    expect(order).toEqual(['start a', 'start b', 'start a']);
  });
});

describe('the per-RPC lock keys', () => {
  it('key volumes by volume ID, snapshots by snapshot ID, each in its own name space; a malformed ID or name takes no lock', () => {
    const id = 'ab'.repeat(16);
    expect(byVolumeId({ volume_id: id })).toBe(`volume ${id}`);
    expect(byVolumeId({ volume_id: 'nope' })).toBeNull();
    expect(bySnapshotId({ snapshot_id: id })).toBe(`snapshot ${id}`);
    expect(bySnapshotId({ snapshot_id: '' })).toBeNull();
    expect(bySnapshotName({ name: 'snap-1' })).toBe(`snapshot ${snapshotIdForName('snap-1')}`);
    expect(bySnapshotName({ name: '' })).toBeNull();
  });
});
