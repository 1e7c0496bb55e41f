import { describe, expect, it } from 'vitest';
import { lvmOverlap } from './exec.js';

const span = (program: string, startMs: number, endMs: number) => ({
  argv: [program],
  startMs,
  endMs,
});

describe('lvmOverlap', () => {
  it('is one at a time, busy the whole phase, for lvm processes back to back', () => {
    expect(
      lvmOverlap([span('vgs', 0, 100), span('lvcreate', 100, 300), span('lvs', 300, 350)]),
    ).toEqual({ maxConcurrent: 1, busyMs: 350, sumMs: 350 });
  });

  it('counts overlapping lvm processes and the union of their spans, ignoring other programs', () => {
    expect(
      lvmOverlap([
        span('vgs', 0, 100),
        span('lvs', 50, 150),
        span('/sbin/lvremove', 60, 70),
        span('dmsetup', 0, 1000),
        span('lvrename', 400, 500),
      ]),
    ).toEqual({ maxConcurrent: 3, busyMs: 250, sumMs: 310 });
  });

  it('is zero for no lvm process', () => {
    expect(lvmOverlap([span('mount', 0, 10)])).toEqual({ maxConcurrent: 0, busyMs: 0, sumMs: 0 });
  });
});
