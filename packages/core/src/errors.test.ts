import { describe, expect, it } from 'vitest';
import { boundText, CommandFailedError, STDERR_MESSAGE_BYTES } from './errors.js';

const bytesOf = (s: string) => Buffer.byteLength(s, 'utf8');

describe('CommandFailedError message', () => {
  it('keeps every stderr line, trimmed and joined with " | ", not only the last', () => {
    const error = new CommandFailedError({
      argv: ['lvremove', '--yes', 'vg/lv'],
      exitCode: 5,
      stdout: '',
      stderr:
        '  WARNING: Device /dev/loop7 has size of 0 sectors.\n\n  Logical volume vg/lv in use.\n',
    });
    expect(error.message).toBe(
      'lvremove --yes vg/lv exited 5: WARNING: Device /dev/loop7 has size of 0 sectors. | Logical volume vg/lv in use.',
    );
    expect(error.stderr).toContain('\n'); // the raw text stays on the error
  });

  it('says "was killed" and leaves out an empty stderr', () => {
    const error = new CommandFailedError({
      argv: ['dd'],
      exitCode: null,
      stdout: '',
      stderr: '\n',
    });
    expect(error.message).toBe('dd was killed');
  });

  it('bounds a long stderr to 4 KiB with the head, the tail and a visible cut marker', () => {
    const lines = Array.from({ length: 500 }, (_, i) => `  line ${i} of a chatty tool`);
    lines.push('  the deciding last line');
    const error = new CommandFailedError({
      argv: ['vgck'],
      exitCode: 5,
      stdout: '',
      stderr: lines.join('\n'),
    });
    const detail = error.message.slice('vgck exited 5: '.length);
    expect(bytesOf(detail)).toBeLessThanOrEqual(STDERR_MESSAGE_BYTES);
    expect(detail).toMatch(/^line 0 of a chatty tool \| line 1 /);
    expect(detail).toMatch(/ \[… \d+ bytes cut …\] /);
    expect(detail.endsWith('line 499 of a chatty tool | the deciding last line')).toBe(true);
  });
});

describe('boundText', () => {
  it('returns a text of exactly the limit unchanged, and cuts one byte more', () => {
    const exact = 'a'.repeat(4096);
    expect(boundText(exact, 4096)).toBe(exact);
    const over = `${'a'.repeat(4096)}b`;
    const bounded = boundText(over, 4096);
    expect(bytesOf(bounded)).toBeLessThanOrEqual(4096);
    const cut = Number(/\[… (\d+) bytes cut …\]/.exec(bounded)?.[1]);
    const [head = '', tail = ''] = bounded.split(/ \[… \d+ bytes cut …\] /);
    expect(head.length + cut + tail.length).toBe(4097);
    expect(tail.endsWith('b')).toBe(true);
  });

  it('counts UTF-8 bytes, not characters, and never splits a character', () => {
    // 2,000 three-byte characters: 6,000 bytes but 2,000 UTF-16 units.
    const text = '€'.repeat(2000);
    const bounded = boundText(text, 4096);
    expect(bytesOf(bounded)).toBeLessThanOrEqual(4096);
    expect(bounded).not.toContain('\uFFFD');
    const [head = '', tail = ''] = bounded.split(/ \[… \d+ bytes cut …\] /);
    expect(head).toMatch(/^€+$/);
    expect(tail).toMatch(/^€+$/);
    const cut = Number(/\[… (\d+) bytes cut …\]/.exec(bounded)?.[1]);
    expect(bytesOf(head) + cut + bytesOf(tail)).toBe(6000);
    // exactly at the limit in bytes (1,365 × 3 + 1 = 4,096): unchanged
    const atLimit = `${'€'.repeat(1365)}x`;
    expect(bytesOf(atLimit)).toBe(4096);
    expect(boundText(atLimit, 4096)).toBe(atLimit);
  });

  it('keeps four-byte characters whole at both cut points', () => {
    const text = '😀'.repeat(1500);
    const bounded = boundText(text, 1000);
    expect(bytesOf(bounded)).toBeLessThanOrEqual(1000);
    expect(bounded).not.toContain('\uFFFD');
    expect(bounded.replace(/ \[… \d+ bytes cut …\] /, '')).toMatch(/^(😀)+$/u);
  });
});
