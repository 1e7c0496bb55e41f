import { UnparseableOutputError } from '../errors.js';
import type {
  LogicalVolume,
  ThinLvRow,
  ThinPoolReport,
  ThinPoolRow,
  VolumeGroup,
} from './types.js';

/**
 * Fields requested from `vgs` (lvm2 `lvmreport(7)` names). All sizes are
 * asked for in bytes with `--units b --nosuffix`.
 */
export const VG_REPORT_FIELDS = [
  'vg_name',
  'vg_uuid',
  'vg_size',
  'vg_free',
  'vg_extent_size',
  'vg_tags',
  'vg_attr',
] as const;

/**
 * Fields requested from `lvs`: one row per LV. Never add per-segment fields
 * (`seg_*`, `devices`): they turn one LV into one row per segment
 * and the report is read per LV (lvs(8), "--segments").
 */
export const LV_REPORT_FIELDS = [
  'vg_name',
  'lv_name',
  'lv_uuid',
  'lv_size',
  'lv_attr',
  'lv_kernel_major',
  'lv_kernel_minor',
  'lv_dm_path',
  'lv_time',
  'lv_tags',
] as const;

type Row = Readonly<Record<string, string>>;

/**
 * Parses the stdout of `vgs --reportformat json --units b --nosuffix -o
 * <VG_REPORT_FIELDS>`: `{"report":[{"vg":[{...}]}]}`, every value a string.
 * An empty list is returned only when the report really lists no VG.
 *
 * @param stdout the whole stdout of the command.
 * @param argv the command that printed it, carried by the error.
 * @throws UnparseableOutputError when stdout is anything but that one JSON
 *   report (a stray notice line, a missing field, a size that is not a
 *   plain byte count).
 */
export function parseVgsReport(stdout: string, argv: readonly string[]): VolumeGroup[] {
  const reader = new FieldReader(stdout, argv);
  return reader.rows('vg').map((row) => vgOfRow(reader, row));
}

function vgOfRow(reader: FieldReader, row: Row): VolumeGroup {
  return {
    name: reader.required(row, 'vg_name'),
    uuid: reader.required(row, 'vg_uuid'),
    sizeBytes: reader.bytes(row, 'vg_size'),
    freeBytes: reader.bytes(row, 'vg_free'),
    extentSizeBytes: reader.positiveBytes(row, 'vg_extent_size'),
    tags: reader.tags(row, 'vg_tags'),
    attr: reader.required(row, 'vg_attr'),
  };
}

/**
 * Parses the stdout of `lvs --reportformat json --units b --nosuffix
 * --config report/time_format="%s" -o <LV_REPORT_FIELDS>`:
 * `{"report":[{"lv":[{...}]}]}`.
 *
 * - sizes: plain byte counts (`^\d+$`, safe integers), never parseFloat;
 * - `lv_kernel_major`/`lv_kernel_minor` `"-1"` (inactive LV) and `""` → null;
 * - `lv_dm_path`, `lv_time` `""` → null; `lv_time` is Unix seconds (the
 *   `%s` time format) or lvm's default `%Y-%m-%d %T %z`, → milliseconds;
 * - `lv_attr` (lvs(8) "lv_attr bits"): active = char 5 `a`, open = char 6 `o`;
 * - rows with the same `lv_uuid` (a listing that wrongly carries
 *   per-segment fields) collapse into one LV; they must agree on every LV
 *   field, so sizes are never added up.
 *
 * @throws UnparseableOutputError on anything else, naming the field and value.
 */
export function parseLvsReport(stdout: string, argv: readonly string[]): LogicalVolume[] {
  const reader = new FieldReader(stdout, argv);
  return lvsOfRows(reader, reader.rows('lv'));
}

function lvsOfRows(reader: FieldReader, rows: readonly Row[]): LogicalVolume[] {
  const byUuid = new Map<string, LogicalVolume>();
  for (const row of rows) {
    const attr = reader.required(row, 'lv_attr');
    if (attr.length < 6) reader.fail(`lv_attr "${attr}" is shorter than 6 characters`);
    const lv: LogicalVolume = {
      vgName: reader.required(row, 'vg_name'),
      lvName: reader.required(row, 'lv_name'),
      lvUuid: reader.required(row, 'lv_uuid'),
      sizeBytes: reader.bytes(row, 'lv_size'),
      attr,
      active: attr[4] === 'a',
      open: attr[5] === 'o',
      kernelMajor: reader.deviceNumber(row, 'lv_kernel_major'),
      kernelMinor: reader.deviceNumber(row, 'lv_kernel_minor'),
      dmPath: reader.optional(row, 'lv_dm_path'),
      createdAtMs: reader.time(row, 'lv_time'),
      tags: reader.tags(row, 'lv_tags'),
    };
    const seen = byUuid.get(lv.lvUuid);
    if (seen === undefined) {
      byUuid.set(lv.lvUuid, lv);
    } else if (JSON.stringify(seen) !== JSON.stringify(lv)) {
      reader.fail(`two rows for lv_uuid "${lv.lvUuid}" disagree`);
    }
  }
  return [...byUuid.values()];
}

/**
 * Fields of the `pv` sub-report of the look-up's `lvm fullreport`: the PV
 * uuids of each group, for the duplicate-PV check (VolumeGroups.usable).
 */
export const FULLREPORT_PV_FIELDS = ['pv_uuid'] as const;

/** One volume group of an `lvm fullreport`: its `vg` row, its PVs' uuids and its LVs. */
export interface FullReportGroup {
  readonly group: VolumeGroup;
  readonly pvUuids: readonly string[];
  readonly lvs: readonly LogicalVolume[];
}

/**
 * Parses the stdout of `lvm fullreport --reportformat json --units b
 * --nosuffix --config report/time_format="%s" --configreport vg -o
 * <VG_REPORT_FIELDS> --configreport pv -o <FULLREPORT_PV_FIELDS>
 * --configreport lv -o <LV_REPORT_FIELDS> …` (lvmreport(7) "fullreport"):
 * `{"report":[{"vg":[…],"pv":[…],"lv":[…],"pvseg":[…],"seg":[…]}, …]}`, one
 * object per volume group lvm processed. An object whose `vg` row the
 * selection left out is skipped with its rows; two groups with one name
 * are two objects. Rows are read as parseVgsReport and parseLvsReport
 * read them.
 * @throws UnparseableOutputError when stdout is not that report, an object
 *   has several `vg` rows, or a field is not what the -o lists ask for.
 */
export function parseFullReport(stdout: string, argv: readonly string[]): FullReportGroup[] {
  const reader = new FieldReader(stdout, argv);
  return reader.sections().flatMap((section, index) => {
    const vgRows = reader.list(section, 'vg', index);
    const [vgRow, ...more] = vgRows;
    if (more.length > 0) reader.fail(`report object ${index} has ${vgRows.length} vg rows`);
    if (vgRow === undefined) return [];
    const group = vgOfRow(reader, vgRow);
    const lvs = lvsOfRows(reader, reader.list(section, 'lv', index));
    const stray = lvs.find((lv) => lv.vgName !== group.name);
    if (stray !== undefined) {
      reader.fail(`LV ${stray.vgName}/${stray.lvName} is listed under volume group ${group.name}`);
    }
    const pvUuids = reader.list(section, 'pv', index).map((row) => reader.required(row, 'pv_uuid'));
    return [{ group, pvUuids, lvs }];
  });
}

/**
 * Fields of the one `lvs` that measures a thin pool (docs/DESIGN.md §4
 * "Thin capacity"): selected with `vg_name="VG" && (lv_name="POOL" ||
 * pool_lv="POOL")`, one row for the pool and one per thin LV in it, each
 * carrying the group's free space. Per-LV fields only: the pool's type is
 * read from `lv_attr` (lvs(8): volume type `t` = segtype thin-pool, `V` =
 * thin volume), never from the per-segment `segtype`.
 */
export const THIN_POOL_REPORT_FIELDS = [
  'vg_name',
  'vg_free',
  'vg_extent_size',
  'lv_name',
  'lv_size',
  'lv_attr',
  'lv_permissions',
  'pool_lv',
  'data_percent',
  'metadata_percent',
  'lv_metadata_size',
  'lv_health_status',
  'lv_when_full',
  'zero',
] as const;

const PERCENT = /^(\d+)\.(\d{2})$/;

/**
 * Parses the stdout of `lvs --reportformat json --units b --nosuffix -o
 * <THIN_POOL_REPORT_FIELDS> -S 'vg_name="VG" && (lv_name="POOL" ||
 * pool_lv="POOL")'`. `data_percent`/`metadata_percent`: two decimals as
 * lvm prints them (`"11.52"`) → hundredths (1152), `""` → null (inactive
 * pool), anything else an error.
 * @throws UnparseableOutputError on anything but that report.
 */
export function parseThinPoolReport(
  stdout: string,
  argv: readonly string[],
  poolName: string,
): ThinPoolReport {
  const reader = new FieldReader(stdout, argv);
  const rows = reader.rows('lv');
  let vgFreeBytes: number | null = null;
  let extentSizeBytes: number | null = null;
  let pool: ThinPoolRow | null = null;
  const thinLvs: ThinLvRow[] = [];
  const percent = (row: Row, field: string): number | null => {
    const value = reader.optional(row, field);
    if (value === null) return null;
    const match = PERCENT.exec(value);
    if (match === null) return reader.fail(`field ${field} = "${value}" is not a percentage`);
    return Number(match[1]) * 100 + Number(match[2]);
  };
  for (const row of rows) {
    vgFreeBytes = reader.bytes(row, 'vg_free');
    extentSizeBytes = reader.positiveBytes(row, 'vg_extent_size');
    const lvName = reader.required(row, 'lv_name');
    const attr = reader.required(row, 'lv_attr');
    if (lvName === poolName) {
      pool = {
        vgName: reader.required(row, 'vg_name'),
        poolName: lvName,
        sizeBytes: reader.bytes(row, 'lv_size'),
        attr,
        isThinPool: attr[0] === 't',
        dataHundredths: percent(row, 'data_percent'),
        metadataHundredths: percent(row, 'metadata_percent'),
        healthStatus: reader.optional(row, 'lv_health_status') ?? '',
        whenFull: reader.optional(row, 'lv_when_full') ?? '',
        zero: reader.optional(row, 'zero') === 'zero',
      };
    } else if (reader.optional(row, 'pool_lv') === poolName) {
      thinLvs.push({
        lvName,
        sizeBytes: reader.bytes(row, 'lv_size'),
        writeable: reader.required(row, 'lv_permissions') === 'writeable',
      });
    }
  }
  return { vgFreeBytes, extentSizeBytes, pool, thinLvs };
}

/** Fields requested from `pvs` when discovering volume groups: where each PV lives. */
export const PV_REPORT_FIELDS = ['pv_name', 'vg_name'] as const;

/**
 * Parses the stdout of `pvs --reportformat json -o pv_name,vg_name`:
 * `{"report":[{"pv":[{...}]}]}`. A PV in no volume group has `vgName` null.
 * @throws UnparseableOutputError on anything else.
 */
export function parsePvsReport(
  stdout: string,
  argv: readonly string[],
): { pvName: string; vgName: string | null }[] {
  const reader = new FieldReader(stdout, argv);
  return reader.rows('pv').map((row) => ({
    pvName: reader.required(row, 'pv_name'),
    vgName: reader.optional(row, 'vg_name'),
  }));
}

const BYTES = /^\d+$/;
const DEVICE_NUMBER = /^\d+$/;
const UNIX_SECONDS = /^\d+$/;
// lvm2's default report/time_format "%Y-%m-%d %T %z".
const DEFAULT_TIME = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2}) ([+-])(\d{2})(\d{2})$/;

/** Reads typed fields out of one JSON report, failing with the field's name and value. */
class FieldReader {
  readonly #stdout: string;
  readonly #argv: readonly string[];

  constructor(stdout: string, argv: readonly string[]) {
    this.#stdout = stdout;
    this.#argv = argv;
  }

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

  required(row: Row, field: string): string {
    const value = row[field];
    if (value === undefined) this.fail(`field ${field} is missing`);
    if (value === '') this.fail(`field ${field} is empty`);
    return value;
  }

  optional(row: Row, field: string): string | null {
    const value = row[field];
    if (value === undefined) this.fail(`field ${field} is missing`);
    return value === '' ? null : value;
  }

  bytes(row: Row, field: string): number {
    const value = row[field];
    if (value === undefined) this.fail(`field ${field} is missing`);
    if (!BYTES.test(value)) this.fail(`field ${field} = "${value}" is not a plain byte count`);
    const bytes = Number(value);
    if (!Number.isSafeInteger(bytes))
      this.fail(`field ${field} = "${value}" is not a safe integer`);
    return bytes;
  }

  positiveBytes(row: Row, field: string): number {
    const bytes = this.bytes(row, field);
    if (bytes === 0) this.fail(`field ${field} = "0" must be positive`);
    return bytes;
  }

  deviceNumber(row: Row, field: string): number | null {
    const value = this.optional(row, field);
    if (value === null || value === '-1') return null;
    if (!DEVICE_NUMBER.test(value)) this.fail(`field ${field} = "${value}" is not a device number`);
    const number = Number(value);
    if (!Number.isSafeInteger(number))
      this.fail(`field ${field} = "${value}" is not a safe integer`);
    return number;
  }

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

/**
 * The `pv_uuid` values of `pvs --reportformat json -o pv_uuid`.
 * @throws UnparseableOutputError when stdout is not that report.
 */
export function parsePvUuids(result: {
  readonly stdout: string;
  readonly argv: readonly string[];
}): string[] {
  const reader = new FieldReader(result.stdout, result.argv);
  return reader.rows('pv').map((row) => reader.required(row, 'pv_uuid'));
}
