import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { UnparseableOutputError } from '../errors.js';
import { CORE_FIXTURES_DIR } from '../testing/replay-runner.js';
import { parseLvsReport, parseVgsReport } from './report.js';

const fixture = (name: string): string => readFileSync(`${CORE_FIXTURES_DIR}lvm/${name}`, 'utf8');
const LVS = ['lvs', '--reportformat', 'json'];
const VGS = ['vgs', '--reportformat', 'json'];
const OWNER_TAGS = ['lvstamp', 'lvstamp.owner=0123456789abcdef0123456789abcdef'];

function parseError(fn: () => unknown): UnparseableOutputError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(UnparseableOutputError);
    return error as UnparseableOutputError;
  }
  throw new Error('expected UnparseableOutputError');
}

describe('parseVgsReport', () => {
  it('reads sizes in bytes, extent size and tags', () => {
    expect(parseVgsReport(fixture('vgs-two.json'), VGS)).toEqual([
      {
        name: 'vg0',
        uuid: 'kJ3x2T-Qm8v-1d0s-Yc1E-pL6w-9fHz-aB3nQe',
        sizeBytes: 10733223936,
        freeBytes: 8589934592,
        extentSizeBytes: 4194304,
        tags: [],
        attr: 'wz--n-',
      },
      {
        name: 'vg-data',
        uuid: 'Tn0bW2-9xQe-Lk3s-Pq7d-Ue2Z-Rw4m-Hc8yJa',
        sizeBytes: 21470642176,
        freeBytes: 209715200,
        extentSizeBytes: 4194304,
        tags: ['ssd', 'lvstamp'],
        attr: 'wz--n-',
      },
    ]);
  });

  it('returns an empty list only for a report that lists nothing', () => {
    expect(parseVgsReport(fixture('vgs-empty.json'), VGS)).toEqual([]);
  });

  it('rejects a human size such as "<10.00g"', () => {
    const error = parseError(() => parseVgsReport(fixture('vgs-size-human.json'), VGS));
    expect(error.message).toBe(
      'cannot parse the output of vgs --reportformat json: field vg_size = "<10.00g" is not a plain byte count',
    );
    expect(error.argv).toEqual(VGS);
  });
});

describe('parseLvsReport', () => {
  it('reads one active LV with every field', () => {
    expect(parseLvsReport(fixture('lvs-203-final.json'), LVS)).toEqual([
      {
        vgName: 'vg0',
        lvName: 'lvstamp_746bf03d564ec8613ddeb80287a0caa1',
        lvUuid: 'Yh3d0P-2kLw-Qs8e-Rr1B-oN5v-Jt6u-Cx2gAz',
        sizeBytes: 213909504,
        attr: '-wi-a-----',
        active: true,
        open: false,
        kernelMajor: 253,
        kernelMinor: 4,
        dmPath: '/dev/mapper/vg0-lvstamp_746bf03d564ec8613ddeb80287a0caa1',
        createdAtMs: 1732897000000,
        tags: OWNER_TAGS,
      },
    ]);
  });

  it('turns empty optional fields into null (not 0) and empty tags into []', () => {
    const [lv] = parseLvsReport(fixture('lvs-optional-empty.json'), LVS);
    expect(lv).toMatchObject({
      kernelMajor: null,
      kernelMinor: null,
      dmPath: null,
      createdAtMs: null,
      tags: [],
    });
  });

  it("reads lvm's default time format strictly", () => {
    const [lv] = parseLvsReport(fixture('lvs-default-time.json'), LVS);
    expect(lv?.createdAtMs).toBe(Date.UTC(2024, 10, 29, 15, 0, 0));
  });

  it('rejects an impossible date', () => {
    const stdout = fixture('lvs-default-time.json').replace('2024-11-29', '2024-02-30');
    const error = parseError(() => parseLvsReport(stdout, LVS));
    expect(error.message).toContain(
      'field lv_time = "2024-02-30 16:00:00 +0100" is not a valid date',
    );
  });

  it('rejects a value that is not a string', () => {
    const stdout = fixture('lvs-203-final.json').replace(
      '"lv_size":"213909504"',
      '"lv_size":213909504',
    );
    const error = parseError(() => parseLvsReport(stdout, LVS));
    expect(error.message).toContain('field lv_size of lv row 0 is not a string');
  });

  it('rejects a report of the wrong kind', () => {
    const error = parseError(() => parseLvsReport(fixture('vgs-one.json'), LVS));
    expect(error.message).toContain('the report has no "lv" list');
  });

  it('rejects a missing field', () => {
    const stdout = fixture('lvs-203-final.json').replace('"lv_dm_path":', '"lv_dm_pathX":');
    const error = parseError(() => parseLvsReport(stdout, LVS));
    expect(error.message).toContain('field lv_dm_path is missing');
  });

  it('rejects empty stdout instead of reading it as "no volumes"', () => {
    const error = parseError(() => parseLvsReport('', LVS));
    expect(error.message).toContain('stdout is not one JSON document');
  });
});
