import Table from 'cli-table3';

/** Where a command writes: stdout for results, stderr for progress and errors. */
export interface Io {
  readonly stdout: { write(text: string): unknown };
  readonly stderr: { write(text: string): unknown };
}

/**
 * Renders rows as a borderless, left-aligned table in the style of
 * `kubectl get` (header in capitals, two spaces between columns).
 */
export function renderTable(
  headers: readonly string[],
  rows: readonly (readonly string[])[],
): string {
  const table = new Table({
    head: headers.map((h) => h.toUpperCase()),
    chars: {
      top: '',
      'top-mid': '',
      'top-left': '',
      'top-right': '',
      bottom: '',
      'bottom-mid': '',
      'bottom-left': '',
      'bottom-right': '',
      left: '',
      'left-mid': '',
      mid: '',
      'mid-mid': '',
      right: '',
      'right-mid': '',
      middle: '  ',
    },
    style: { head: [], border: [], 'padding-left': 0, 'padding-right': 0, compact: true },
  });
  for (const row of rows) table.push([...row]);
  return `${table
    .toString()
    .split('\n')
    .map((line) => line.trimEnd())
    .join('\n')}\n`;
}

/** Writes a value as pretty JSON followed by a newline. */
export function writeJson(io: Io, value: unknown): void {
  io.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** Progress of a long step, on stderr so that stdout stays parseable. */
export function progress(io: Io, message: string): void {
  io.stderr.write(`… ${message}\n`);
}
