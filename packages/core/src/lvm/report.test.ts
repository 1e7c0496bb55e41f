import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { UnparseableOutputError } from '../errors.js';
import { CORE_FIXTURES_DIR } from '../testing/replay-runner.js';
import { parseFullReport, parseLvsReport, parseVgsReport } from './report.js';

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

describe('parseFullReport (lvm fullreport, recorded in the test VM)', () => {
  const recorded = (name: string): string =>
    readFileSync(`${CORE_FIXTURES_DIR}lvm/recorded/${name}.stdout`, 'utf8');
  const FULL = ['lvm', 'fullreport'];

  it('one entry per group with a vg row: its row, PV uuids and LVs, read as vgs and lvs read them', () => {
    const groups = parseFullReport(recorded('fullreport-two-groups'), FULL);
    expect(groups.map((g) => [g.group.name, g.group.attr, g.pvs.length, g.lvs.length])).toEqual([
      ['lvse2eother', 'wz--n-', 1, 1],
      ['lvse2ebroken', 'wz--n-', 2, 2],
    ]);
    expect(groups[1]?.lvs[1]).toMatchObject({
      vgName: 'lvse2ebroken',
      lvName: 'lvstamp_new_dc1e11f69c551788f71fa509be2e1b06',
      active: false,
      kernelMajor: null,
      tags: ['lvstamp', 'lvstamp.owner=00000000000000000000000000000000'],
    });
  });

  it('a group that does not exist: no entry (every object without a vg row is skipped)', () => {
    expect(parseFullReport(recorded('fullreport-missing-vg'), FULL)).toEqual([]);
  });

  it('a PV in no group adds an object with pv and pvseg lists only: skipped, the groups read as without it', () => {
    const withOrphan = parseFullReport(recorded('fullreport-orphan-pv'), FULL);
    expect(withOrphan).toEqual(parseFullReport(recorded('fullreport-found'), FULL));
    expect(withOrphan.map((g) => g.group.name)).toEqual(['lvse2ebroken']);
    // an object with LVs but no vg list is no orphan object: refused
    const lvOnly = '{"report":[{"pv":[],"lv":[],"pvseg":[]}]}';
    expect(() => parseFullReport(lvOnly, FULL)).toThrow(/report object 0 has no "vg" list/);
  });

  it('two groups of one name are two entries with their own vg_uuid', () => {
    const uuids = parseFullReport(recorded('fullreport-duplicate-vg'), FULL).map(
      (g) => g.group.uuid,
    );
    expect(uuids).toEqual([
      's032To-Di5G-6UWQ-FygI-vMu1-DGH5-9LuFNE',
      'rTGx6s-9jWm-oFKn-DxoD-abQr-rj9h-E9Vz2L',
    ]);
  });

  it('refuses an object with two vg rows, or an LV listed under another group', () => {
    const vg = (name: string) =>
      `{"vg_name":"${name}", "vg_uuid":"u-${name}", "vg_size":"8", "vg_free":"4", "vg_extent_size":"4", "vg_tags":"", "vg_attr":"wz--n-"}`;
    const two = `{"report":[{"vg":[${vg('a')},${vg('b')}],"pv":[],"lv":[],"pvseg":[],"seg":[]}]}`;
    expect(() => parseFullReport(two, FULL)).toThrow(/report object 0 has 2 vg rows/);
    const lv = parseLvsReport(fixture('lvs-203-final.json'), LVS)[0];
    expect(lv?.vgName).toBe('vg0');
    const stray = JSON.stringify({
      report: [
        {
          vg: [JSON.parse(vg('a')) as unknown],
          pv: [],
          lv: (JSON.parse(fixture('lvs-203-final.json')) as { report: { lv: unknown[] }[] })
            .report[0]?.lv,
          pvseg: [],
          seg: [],
        },
      ],
    });
    expect(() => parseFullReport(stray, FULL)).toThrow(/is listed under volume group a/);
  });
});
