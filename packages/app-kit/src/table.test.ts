import { describe, expect, it } from 'vitest';
import { renderTable } from './table.js';

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
});
