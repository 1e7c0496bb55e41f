import { UnparseableOutputError } from '../errors.js';

/** One row of an lvm JSON report: every value a string (docs/FACTS.md). */
export type Row = Readonly<Record<string, string>>;

const BYTES = /^\d+$/;
const DEVICE_NUMBER = /^\d+$/;
const UNIX_SECONDS = /^\d+$/;
// lvm2's default report/time_format "%Y-%m-%d %T %z".
const DEFAULT_TIME = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2}) ([+-])(\d{2})(\d{2})$/;

/**
 * Reads typed fields out of one JSON report, failing with the field's name
 * and value: every method throws UnparseableOutputError carrying the argv and
 * stdout it was given.
 */
export class FieldReader {
  readonly #stdout: string;
  readonly #argv: readonly string[];

  constructor(stdout: string, argv: readonly string[]) {
    this.#stdout = stdout;
    this.#argv = argv;
  }

  /** Throws UnparseableOutputError with `detail`. */
  fail(detail: string): never {
    throw new UnparseableOutputError(
      { argv: this.#argv, exitCode: 0, stdout: this.#stdout, stderr: '' },
      detail,
    );
  }

  /** The rows of the single `{"report":[{"<kind>":[...]}]}` section. */
  rows(kind: 'vg' | 'lv' | 'pv'): Row[] {
    const sections = this.sections();
    const [section, ...more] = sections;
    if (section === undefined || more.length > 0) {
      this.fail('"report" is not an array of exactly one section');
    }
    if (!Array.isArray(section[kind])) this.fail(`the report has no "${kind}" list`);
    return this.list(section, kind, 0);
  }

  /** The objects of `{"report":[{…}, …]}` (fullreport: one per volume group). */
  sections(): Record<string, unknown>[] {
    let document: unknown;
    try {
      document = JSON.parse(this.#stdout);
    } catch (error) {
      this.fail(`stdout is not one JSON document (${(error as Error).message})`);
    }
    if (!isObject(document)) this.fail('stdout is not a JSON object');
    const extra = Object.keys(document).filter((key) => key !== 'report' && key !== 'log');
    if (extra.length > 0) this.fail(`unexpected top-level keys ${JSON.stringify(extra)}`);
    const report = document['report'];
    if (!Array.isArray(report)) this.fail('"report" is not an array');
    return report.map((section: unknown, index) => {
      if (!isObject(section)) this.fail(`report object ${index} is not an object`);
      return section;
    });
  }

  /** The `kind` rows of one report object, each a string-valued object. */
  list(section: Record<string, unknown>, kind: string, index: number): Row[] {
    const list = section[kind];
    if (!Array.isArray(list)) this.fail(`report object ${index} has no "${kind}" list`);
    return list.map((row: unknown, rowIndex) => {
      if (!isObject(row)) this.fail(`${kind} row ${rowIndex} is not an object`);
      for (const [key, value] of Object.entries(row)) {
        if (typeof value !== 'string')
          this.fail(`field ${key} of ${kind} row ${rowIndex} is not a string`);
      }
      return row as Row;
    });
  }

  /** A field that must be present and non-empty. */
  required(row: Row, field: string): string {
    const value = row[field];
    if (value === undefined) this.fail(`field ${field} is missing`);
    if (value === '') this.fail(`field ${field} is empty`);
    return value;
  }

  /** A field that must be present; `""` → null. */
  optional(row: Row, field: string): string | null {
    const value = row[field];
    if (value === undefined) this.fail(`field ${field} is missing`);
    return value === '' ? null : value;
  }

  /** A plain byte count (`--units b --nosuffix`: `^\d+$`, a safe integer), never parseFloat. */
  bytes(row: Row, field: string): number {
    const value = row[field];
    if (value === undefined) this.fail(`field ${field} is missing`);
    if (!BYTES.test(value)) this.fail(`field ${field} = "${value}" is not a plain byte count`);
    const bytes = Number(value);
    if (!Number.isSafeInteger(bytes))
      this.fail(`field ${field} = "${value}" is not a safe integer`);
    return bytes;
  }

  /** A byte count above 0 (an extent size). */
  positiveBytes(row: Row, field: string): number {
    const bytes = this.bytes(row, field);
    if (bytes === 0) this.fail(`field ${field} = "0" must be positive`);
    return bytes;
  }

  /** A kernel major or minor number; `"-1"` (inactive LV) and `""` → null. */
  deviceNumber(row: Row, field: string): number | null {
    const value = this.optional(row, field);
    if (value === null || value === '-1') return null;
    if (!DEVICE_NUMBER.test(value)) this.fail(`field ${field} = "${value}" is not a device number`);
    const number = Number(value);
    if (!Number.isSafeInteger(number))
      this.fail(`field ${field} = "${value}" is not a safe integer`);
    return number;
  }

  /**
   * A time in Unix milliseconds, from Unix seconds (`report/time_format="%s"`)
   * or lvm's default `%Y-%m-%d %T %z`; `""` → null.
   */
  time(row: Row, field: string): number | null {
    const value = this.optional(row, field);
    if (value === null) return null;
    if (UNIX_SECONDS.test(value)) {
      const ms = Number(value) * 1000;
      if (!Number.isSafeInteger(ms)) this.fail(`field ${field} = "${value}" is out of range`);
      return ms;
    }
    const match = DEFAULT_TIME.exec(value);
    if (match === null) this.fail(`field ${field} = "${value}" is not a time lvstamp can read`);
    const [year, month, day, hour, minute, second, offsetHours, offsetMinutes] = [
      1, 2, 3, 4, 5, 6, 8, 9,
    ].map((group) => Number(match[group]));
    const local = new Date(Date.UTC(year ?? 0, (month ?? 0) - 1, day, hour, minute, second));
    const fieldsRoundTrip =
      local.getUTCFullYear() === year &&
      local.getUTCMonth() === (month ?? 0) - 1 &&
      local.getUTCDate() === day &&
      local.getUTCHours() === hour &&
      local.getUTCMinutes() === minute &&
      local.getUTCSeconds() === second;
    if (!fieldsRoundTrip) this.fail(`field ${field} = "${value}" is not a valid date`);
    const offsetMs = ((offsetHours ?? 0) * 60 + (offsetMinutes ?? 0)) * 60_000;
    return local.getTime() - (match[7] === '-' ? -offsetMs : offsetMs);
  }

  /** A comma-separated tag list; `""` → []; an empty tag is an error. */
  tags(row: Row, field: string): string[] {
    const value = this.optional(row, field);
    if (value === null) return [];
    const tags = value.split(',');
    if (tags.some((tag) => tag === '')) this.fail(`field ${field} = "${value}" holds an empty tag`);
    return tags;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
