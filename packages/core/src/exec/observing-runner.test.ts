import { describe, expect, it } from 'vitest';
import { CommandFailedError } from '../errors.js';
import { ObservingRunner, type CommandEvent } from './observing-runner.js';
import { ReplayRunner } from '../testing/replay-runner.js';

function ticking(): () => number {
  let now = 0;
  return () => (now += 5);
}

describe('ObservingRunner', () => {
  it('passes calls through unchanged and reports each finished command', async () => {
    const inner = new ReplayRunner([
      { argv: ['lvs', 'vg0'], stdout: '{}\n' },
      { argv: ['blkid', '-p', '/dev/x'], exitCode: 2 },
    ]);
    const events: CommandEvent[] = [];
    const runner = new ObservingRunner(inner, (e) => events.push(e), ticking());
    expect(await runner.run(['lvs', 'vg0'], { timeoutMs: 7 })).toEqual({
      argv: ['lvs', 'vg0'],
      exitCode: 0,
      stdout: '{}\n',
      stderr: '',
    });
    await runner.run(['blkid', '-p', '/dev/x'], { allowExitCodes: [2] });
    expect(inner.calls).toEqual([
      { argv: ['lvs', 'vg0'], options: { timeoutMs: 7 } },
      { argv: ['blkid', '-p', '/dev/x'], options: { allowExitCodes: [2] } },
    ]);
    expect(events).toEqual([
      { argv: ['lvs', 'vg0'], exitCode: 0, durationMs: 5, failed: false },
      { argv: ['blkid', '-p', '/dev/x'], exitCode: 2, durationMs: 5, failed: false },
    ]);
  });

  it('reports a failure with its exit code and rethrows the same error', async () => {
    const inner = new ReplayRunner([{ argv: ['lvremove', 'vg0/x'], exitCode: 5, stderr: 'no\n' }]);
    const events: CommandEvent[] = [];
    const runner = new ObservingRunner(inner, (e) => events.push(e), ticking());
    const error = await runner.run(['lvremove', 'vg0/x']).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CommandFailedError);
    expect((error as CommandFailedError).exitCode).toBe(5);
    expect(events).toEqual([
      { argv: ['lvremove', 'vg0/x'], exitCode: 5, durationMs: 5, failed: true },
    ]);
  });

  it('a throwing listener changes nothing', async () => {
    const inner = new ReplayRunner([{ argv: ['vgs'], stdout: 'ok' }]);
    const runner = new ObservingRunner(inner, () => {
      throw new Error('listener broke');
    });
    expect((await runner.run(['vgs'])).stdout).toBe('ok');
  });
});
