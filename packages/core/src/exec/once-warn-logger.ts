import type { WarnLogger } from './runner.js';

/**
 * A WarnLogger for one run (a CLI command, a GC run) that passes on each
 * stderr line of a command's warning once: lvm repeats the same lines in
 * every command while a PV is missing (`WARNING: Couldn't find device with
 * uuid …`), and a run starts many. A warning whose `stderr` lines were all
 * passed on already is not passed on; one with a new line is passed on with
 * only its new lines, so a new distinct warning is never hidden. The lines
 * left out are counted (`repeatedLines`, `summary`). A warning without
 * `stderr` is passed on unchanged. Lines compare after trimming.
 *
 * Not for a long-running process (the CSI driver): a line seen once would be
 * left out for good.
 */
export class OncePerRunWarnLogger implements WarnLogger {
  readonly #inner: WarnLogger;
  readonly #seen = new Set<string>();
  #repeated = 0;

  constructor(inner: WarnLogger) {
    this.#inner = inner;
  }

  warn(message: string, fields?: Readonly<Record<string, unknown>>): void {
    const stderr = fields?.['stderr'];
    if (typeof stderr !== 'string') {
      this.#inner.warn(message, fields);
      return;
    }
    const fresh: string[] = [];
    for (const line of stderr.split('\n')) {
      const key = line.trim();
      if (key === '') continue;
      if (this.#seen.has(key)) {
        this.#repeated += 1;
        continue;
      }
      this.#seen.add(key);
      fresh.push(line);
    }
    if (fresh.length > 0) this.#inner.warn(message, { ...fields, stderr: fresh.join('\n') });
  }

  /** How many stderr lines were left out as repeats so far. */
  get repeatedLines(): number {
    return this.#repeated;
  }

  /**
   * Passes on one warning counting the lines left out
   * (`<n> repeated stderr line(s) of commands not shown again`), when any were.
   */
  summary(): void {
    if (this.#repeated === 0) return;
    this.#inner.warn(
      `${this.#repeated} repeated stderr line${this.#repeated === 1 ? '' : 's'} of commands not shown again (each was shown once above)`,
    );
  }
}
