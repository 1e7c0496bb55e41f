import Table from 'cli-table3';

const NO_BORDER = '';

/**
 * `text` with each control character (Unicode category Cc: C0, DEL, C1; a
 * newline, ESC) written as `\xNN`: text read from a disk (a header's name)
 * can neither move the terminal's cursor nor fake a line of output.
 */
export function printable(text: string): string {
  return text.replace(
    /[\u0000-\u001f\u007f-\u009f]/gu,
    (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`,
  );
}

/**
 * Rows as a borderless, left-aligned table in the style of `kubectl get`:
 * header in capitals, two spaces between columns, no trailing blanks, a
 * newline at the end (cli-table3); each cell printable.
 */
export function renderTable(
  headers: readonly string[],
  rows: readonly (readonly string[])[],
): string {
  const table = new Table({
    head: headers.map((h) => h.toUpperCase()),
    chars: {
      top: NO_BORDER,
      'top-mid': NO_BORDER,
      'top-left': NO_BORDER,
      'top-right': NO_BORDER,
      bottom: NO_BORDER,
      'bottom-mid': NO_BORDER,
      'bottom-left': NO_BORDER,
      'bottom-right': NO_BORDER,
      left: NO_BORDER,
      'left-mid': NO_BORDER,
      mid: NO_BORDER,
      'mid-mid': NO_BORDER,
      right: NO_BORDER,
      'right-mid': NO_BORDER,
      middle: '  ',
    },
    style: { head: [], border: [], 'padding-left': 0, 'padding-right': 0, compact: true },
  });
  for (const row of rows) table.push(row.map(printable));
  const lines = table
    .toString()
    .split('\n')
    .map((line) => line.trimEnd());
  return `${lines.join('\n')}\n`;
}
