import { describe, expect, it } from 'vitest';
import { CommandFailedError, CommandTimeoutError, InvalidArgumentError } from '../errors.js';
import { ReplayMismatchError, ReplayRunner } from './replay-runner.js';
import { caught } from './caught.js';

describe('ReplayRunner', () => {
  it('replays steps in order and records the calls', async () => {
    const runner = new ReplayRunner([
      { argv: ['lvm', 'version'], stdout: 'v\n', stderr: 'w\n' },
      { argv: ['blkid', '-p', '/dev/x'], exitCode: 2 },
    ]);
    expect(await runner.run(['lvm', 'version'])).toEqual({
      argv: ['lvm', 'version'],
      exitCode: 0,
      stdout: 'v\n',
      stderr: 'w\n',
    });
    expect(await runner.run(['blkid', '-p', '/dev/x'], { allowExitCodes: [2] })).toEqual({
      argv: ['blkid', '-p', '/dev/x'],
      exitCode: 2,
      stdout: '',
      stderr: '',
    });
    runner.assertDone();
    expect(runner.calls).toEqual([
      { argv: ['lvm', 'version'], options: undefined },
      { argv: ['blkid', '-p', '/dev/x'], options: { allowExitCodes: [2] } },
    ]);
  });

  it('throws CommandFailedError for a non-allowed exit code, like ProcessRunner', async () => {
    const runner = new ReplayRunner([
      { argv: ['lvs'], exitCode: 5, stdout: '{}', stderr: 'Global lock failed\n' },
    ]);
    const error = await caught(runner.run(['lvs']));
    expect(error).toBeInstanceOf(CommandFailedError);
    expect(error).toMatchObject({
      argv: ['lvs'],
      exitCode: 5,
      stdout: '{}',
      stderr: 'Global lock failed\n',
    });
    expect((error as Error).message).toBe('lvs exited 5: Global lock failed');
  });

  it('throws CommandTimeoutError for a timed-out step with the deadline of the call', async () => {
    const runner = new ReplayRunner([{ argv: ['lvcreate'], timeout: true, delayMs: 5 }]);
    const error = await caught(runner.run(['lvcreate'], { timeoutMs: 250 }));
    expect(error).toBeInstanceOf(CommandTimeoutError);
    expect(error).toMatchObject({ argv: ['lvcreate'], exitCode: null, timeoutMs: 250 });
  });

  it('reads stdoutFile relative to packages/core/fixtures', async () => {
    const runner = new ReplayRunner([{ argv: ['vgs'], stdoutFile: 'lvm/vgs-one.json' }]);
    const result = await runner.run(['vgs']);
    expect(result.stdout).toContain('"vg_name":"vg0"');
  });

  it('shows expected and actual argv on a mismatch', async () => {
    const runner = new ReplayRunner([{ argv: ['lvs', '-o', 'lv_name'] }]);
    const error = await caught(runner.run(['lvs', '-o', 'lv_size']));
    expect(error).toBeInstanceOf(ReplayMismatchError);
    expect((error as Error).message).toBe(
      'ReplayRunner: call #1 does not match the recorded step\n  expected: ["lvs","-o","lv_name"]\n  actual:   ["lvs","-o","lv_size"]',
    );
    expect(error).toMatchObject({
      expected: ['lvs', '-o', 'lv_name'],
      actual: ['lvs', '-o', 'lv_size'],
    });
  });

  it('fails on an unexpected extra call', async () => {
    const runner = new ReplayRunner([{ argv: ['true'] }]);
    await runner.run(['true']);
    const error = await caught(runner.run(['true']));
    expect(error).toBeInstanceOf(ReplayMismatchError);
    expect((error as Error).message).toBe(
      'ReplayRunner: unexpected extra call #2\n  actual:   ["true"]\n  (all 1 steps were replayed)',
    );
  });

  it('assertDone fails while steps remain', async () => {
    const runner = new ReplayRunner([{ argv: ['a'] }, { argv: ['b', 'c'] }]);
    await runner.run(['a']);
    expect(() => {
      runner.assertDone();
    }).toThrow('ReplayRunner: 1 recorded step(s) were never run:\n  ["b","c"]');
  });

  it('refuses a step with both stdout and stdoutFile', () => {
    expect(() => new ReplayRunner([{ argv: ['x'], stdout: '', stdoutFile: 'a' }])).toThrow(
      InvalidArgumentError,
    );
  });
});
