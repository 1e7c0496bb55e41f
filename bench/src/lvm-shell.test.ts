import { describe, expect, it } from 'vitest';
import { shellLine, splitObjects } from './lvm-shell.js';

describe('shellLine', () => {
  it('leaves plain arguments bare and wraps the others whole in one quote kind', () => {
    expect(
      shellLine(['lvs', '-S', 'lv_name="a" || lv_name="b"', '--config', "x='y'", '', '#c', 'vg']),
    ).toBe(`lvs -S 'lv_name="a" || lv_name="b"' --config "x='y'" '' '#c' vg`);
  });

  it.each([['a\nb'], ['a\0b'], [`a'b"c`]])('refuses %j (the shell cannot carry it)', (arg) => {
    expect(() => shellLine(['lvs', arg])).toThrow(/cannot pass/);
  });
});

describe('splitObjects', () => {
  it('splits back-to-back objects and keeps the unfinished rest', () => {
    const text = '  {"report": [{"vg": []}]}\n  {"log": [{"m": "a } b \\" {"}]}\n  {"log": [';
    expect(splitObjects(text)).toEqual({
      objects: ['{"report": [{"vg": []}]}', '{"log": [{"m": "a } b \\" {"}]}'],
      rest: '\n  {"log": [',
    });
  });

  it('returns nothing for an unfinished object', () => {
    expect(splitObjects('{"report": [')).toEqual({ objects: [], rest: '{"report": [' });
  });
});
