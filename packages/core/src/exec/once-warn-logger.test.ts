import { describe, expect, it } from 'vitest';
import { OncePerRunWarnLogger } from './once-warn-logger.js';

// A missing PV: lvm prints the same warning in every command of a run.
const MISSING = "  WARNING: Couldn't find device with uuid FDfXm4-aaaa-bbbb.";
const PARTIAL = '  WARNING: VG vg0 is missing PV FDfXm4-aaaa-bbbb (last written to /dev/loop3).';
const ARGV = ['lvm', 'fullreport'];

function logger() {
  const said: [string, Readonly<Record<string, unknown>> | undefined][] = [];
  const once = new OncePerRunWarnLogger({
    warn: (message, fields) => said.push([message, fields]),
  });
  return { once, said };
}

describe('OncePerRunWarnLogger', () => {
  it('passes each stderr line on once, counts the repeats and says how many at the end', () => {
    const { once, said } = logger();
    for (let i = 0; i < 3; i++) {
      once.warn('command succeeded with output on stderr', {
        argv: ARGV,
        stderr: `${MISSING}\n${PARTIAL}\n`,
      });
    }
    expect(said).toEqual([
      ['command succeeded with output on stderr', { argv: ARGV, stderr: `${MISSING}\n${PARTIAL}` }],
    ]);
    expect(once.repeatedLines).toBe(4);
    once.summary();
    expect(said.at(-1)).toEqual([
      '4 repeated stderr lines of commands not shown again (each was shown once above)',
      undefined,
    ]);
  });

  it('never hides a new distinct line: it is passed on alone, without the repeats around it', () => {
    const { once, said } = logger();
    once.warn('w', { argv: ARGV, stderr: MISSING });
    const other = "  WARNING: Couldn't find device with uuid Zz9Yy8-cccc-dddd.";
    once.warn('w', { argv: ['lvchange', '-an', 'vg0/x'], stderr: `${MISSING}\n${other}` });
    expect(said).toEqual([
      ['w', { argv: ARGV, stderr: MISSING }],
      ['w', { argv: ['lvchange', '-an', 'vg0/x'], stderr: other }],
    ]);
    expect(once.repeatedLines).toBe(1);
  });

  it('passes a warning without stderr on unchanged, and says nothing at the end when nothing repeated', () => {
    const { once, said } = logger();
    once.warn('not deactivating vg0/x: not a quarantined LV name');
    once.warn('not deactivating vg0/x: not a quarantined LV name');
    once.summary();
    expect(said).toEqual([
      ['not deactivating vg0/x: not a quarantined LV name', undefined],
      ['not deactivating vg0/x: not a quarantined LV name', undefined],
    ]);
  });
});
