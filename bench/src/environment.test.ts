import { ReplayRunner } from '@lvstamp/core/testing';
import { describe, expect, it } from 'vitest';
import { collectEnvironment } from './environment.js';

describe('collectEnvironment', () => {
  it("records lvm's version line and a missing fio as null, not as a failed run", async () => {
    const runner = new ReplayRunner([
      {
        argv: ['lvm', 'version'],
        stdout: '  LVM version:     2.03.16(2) (2022-05-18)\n  Library version: 1.02.185\n',
      },
      { argv: ['fio', '--version'], exitCode: 127, stderr: 'fio: not found\n' },
    ]);
    const env = await collectEnvironment(runner);
    runner.assertDone();
    expect(env.lvm2).toBe('LVM version: 2.03.16(2) (2022-05-18)');
    expect(env.fio).toBeNull();
  });
});
