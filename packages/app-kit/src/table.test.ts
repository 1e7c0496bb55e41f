import { describe, expect, it } from 'vitest';
import { printable, renderTable } from './table.js';

describe('renderTable', () => {
  it('aligns columns with two spaces, capitalises the header and trims line ends', () => {
    expect(
      renderTable(
        ['name', 'size', 'note'],
        [
          ['vg0', '1 GiB', ''],
          ['longer-name', '4 MiB', 'ok'],
        ],
      ),
    ).toBe('NAME         SIZE   NOTE\nvg0          1 GiB\nlonger-name  4 MiB  ok\n');
  });

  it('writes control characters in a cell as \\xNN: an ESC cannot recolour the terminal, a newline cannot add a row', () => {
    expect(renderTable(['name'], [['a\u001b[31mb\nc\u0085']])).toBe(
      'NAME\na\\x1b[31mb\\x0ac\\x85\n',
    );
  });
});

describe('printable', () => {
  it('keeps printable text, non-ASCII letters included; a tab and DEL are escaped', () => {
    expect(printable('pvc-é 1')).toBe('pvc-é 1');
    expect(printable('\t\u007f')).toBe('\\x09\\x7f');
  });
});
