import { oneLine } from '@lvstamp/app-kit';
/** Where a command writes: stdout for results, stderr for progress and errors. */
export interface Io {
  readonly stdout: { write(text: string): unknown };
  readonly stderr: { write(text: string): unknown };
}

/** Writes a value as pretty JSON followed by a newline. */
export function writeJson(io: Io, value: unknown): void {
  io.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** Progress of a long step, on stderr so that stdout stays parseable. */
export function progress(io: Io, message: string): void {
  io.stderr.write(`… ${message}\n`);
}

/**
 * One stderr line for a warning of the core (a command that succeeded with
 * output on stderr, ...): the message and each field, `argv` joined by
 * spaces and text fields on one line.
 */
export function warningLine(
  message: string,
  fields: Readonly<Record<string, unknown>> = {},
): string {
  const parts = Object.entries(fields).map(([key, value]) => {
    if (Array.isArray(value)) return `${key}: ${value.join(' ')}`;
    if (typeof value === 'string') return `${key}: ${oneLine(value.trim())}`;
    return `${key}: ${JSON.stringify(value)}`;
  });
  return `lvstamp: warning: ${[message, ...parts].join('; ')}\n`;
}

/**
 * The line of a delete that found nothing (exit 0: a retried delete is done).
 * A ref that looks like an LV name or a device path (`lvstamp_…`,
 * `lvstamp-…`, any `/`) was read as a volume or snapshot name and so named
 * nothing: the line says so, with the ID it was hashed to (DESIGN.md §3), and
 * where the right ref is shown.
 */
export function absentLine(what: string, ref: string, id: string, listCommand: string): string {
  const looksLikeDevice = ref.includes('/') || /^lvstamp[-_]/.test(ref);
  return (
    `${what} did not exist (nothing to do)` +
    (looksLikeDevice
      ? `; "${ref}" was read as a name (ID ${id}), not as an LV or device: give a name or an ID that \`${listCommand}\` shows`
      : '') +
    '\n'
  );
}
