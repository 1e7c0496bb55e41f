import type {
  LogicalVolume,
  PvDevice,
  ThinLvRow,
  ThinPoolReport,
  ThinPoolRow,
  VolumeGroup,
} from './types.js';
import { FieldReader, type Row } from './field-reader.js';

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
 * Fields of the `pv` sub-report of the look-up's `lvm fullreport`: each
 * group's PVs, their uuids for the duplicate-PV check (VolumeGroups.usable)
 * and their devices for the read-only check (sysfs `ro`, which lvm does not
 * report: docs/FACTS.md "Broken groups").
 */
export const FULLREPORT_PV_FIELDS = ['pv_uuid', 'pv_name', 'pv_major', 'pv_minor'] as const;

/** One volume group of an `lvm fullreport`: its `vg` row, its PVs and its LVs. */
export interface FullReportGroup {
  readonly group: VolumeGroup;
  readonly pvs: readonly PvDevice[];
  readonly lvs: readonly LogicalVolume[];
}

/**
 * Parses the stdout of `lvm fullreport --reportformat json --units b
 * --nosuffix --config report/time_format="%s" --configreport vg -o
 * <VG_REPORT_FIELDS> --configreport pv -o <FULLREPORT_PV_FIELDS>
 * --configreport lv -o <LV_REPORT_FIELDS> …` (lvmreport(7) "fullreport"):
 * `{"report":[{"vg":[…],"pv":[…],"lv":[…],"pvseg":[…],"seg":[…]}, …]}`, one
 * object per volume group lvm processed, and one with only `pv` and
 * `pvseg` lists when some PV is in no group (skipped). An object whose
 * `vg` row the selection left out is skipped with its rows; two groups
 * with one name are two objects. Rows are read as parseVgsReport and parseLvsReport
 * read them.
 * @throws UnparseableOutputError when stdout is not that report, an object
 *   has several `vg` rows, or a field is not what the -o lists ask for.
 */
export function parseFullReport(stdout: string, argv: readonly string[]): FullReportGroup[] {
  const reader = new FieldReader(stdout, argv);
  return reader.sections().flatMap((section, index) => {
    // The PVs in no group (a `pvcreate`d device, one left by a `vgremove`) come as one more
    // object with `pv` and `pvseg` lists only: it holds no group and no LV.
    if (!('vg' in section) && !('lv' in section)) return [];
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
    const pvs = reader.list(section, 'pv', index).map((row) => ({
      uuid: reader.required(row, 'pv_uuid'),
      name: reader.required(row, 'pv_name'),
      major: reader.deviceNumber(row, 'pv_major'),
      minor: reader.deviceNumber(row, 'pv_minor'),
    }));
    return [{ group, pvs, lvs }];
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
