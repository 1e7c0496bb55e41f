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
