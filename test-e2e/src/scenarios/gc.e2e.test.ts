// What `lvstamp gc` keeps and what it removes on
// real LVM (DESIGN.md §2.3, §2.4, §6). Every volume here carries a random
// owner ID, so these runs can only ever remove this file's volumes.
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { createLoopVg, installCleanupHooks, sh, shOk, type LoopVg } from '../harness/index.js';
import {
  MiB,
  cli,
  cliJson,
  dmInfo,
  formatAndMount,
  headerOnDisk,
  idOf,
  lvNames,
  lvRow,
  newOwnerId,
  nonZeroBytes,
  okHeaderOnDisk,
  pattern,
  peRanges,
  readExtents,
  sleepUntil,
  suffix,
  writeAt,
  type InspectJson,
} from './support.js';

installCleanupHooks();

/**
 * Grace period of these runs; the orphans are aged past it, the young volume is not. Two
 * minutes: the young volume, made in the second test, must still be younger at the fourth on a
 * loaded emulated VM (each gc run also discovers and activates; one minute was too tight).
 */
const MIN_AGE = '120s';
const MIN_AGE_MS = 120_000;

/** `lvstamp gc --json` output (the core's plan and outcomes, as the CLI prints them). */
interface GcJson {
  readonly dryRun: boolean;
  readonly minAgeMs: number;
  readonly maxDeletions: number;
  readonly plan: {
    readonly capped: boolean;
    readonly entries: readonly GcEntryJson[];
  };
  readonly outcomes: readonly {
    readonly entry: { readonly device: string };
    readonly outcome: string;
    readonly detail: string;
  }[];
}

interface GcEntryJson {
  readonly target: 'volume' | 'map';
  readonly device: string;
  readonly volumeId: string | null;
  readonly action: 'keep' | 'remove-map' | 'remove-volume';
  readonly rule: number;
  readonly severity: 'info' | 'warn';
  readonly reason: string;
  readonly evidence?: string | null;
}

const owner = newOwnerId();
const foreignOwner = newOwnerId();
const names = {
  live: `gc-live-${suffix()}`,
  orphanA: `gc-orphan-a-${suffix()}`,
  orphanB: `gc-orphan-b-${suffix()}`,
  foreign: `gc-foreign-${suffix()}`,
  corrupt: `gc-corrupt-${suffix()}`,
  open: `gc-open-${suffix()}`,
  young: `gc-young-${suffix()}`,
};
const ids = Object.fromEntries(Object.entries(names).map(([k, n]) => [k, idOf(n)])) as Record<
  keyof typeof names,
  string
>;
/**
 * The old tenant's bytes in each orphan, 1 MiB at byte 3 MiB of its LV: inside its data area
 * and outside the first and last MiB that create zeroes (DESIGN.md §5 "Wipe").
 */
const PATTERN_AT = 3 * MiB;
const ORPHAN_BYTES = pattern(`old tenant bytes ${suffix()} `, MiB);

/** An LV named like a volume (`lvstamp_<32 hex>`) that holds no header. */
const headerlessId = randomBytes(16).toString('hex');

let vg: LoopVg;
let liveFile: string;
let openMountPoint: string;
let orphansCreatedAtMs = 0;

/** `lvstamp --owner-id <owner> gc ...` */
/** `lvstamp --owner-id <owner> gc --quarantine 0 ...`: direct removal (quarantine.e2e.test.ts covers the window). */
const gc = (...args: string[]) => ['--owner-id', owner, 'gc', '--quarantine', '0', ...args];
/** Entries about this file's devices: its VG's LVs and its volumes' maps. */
const ours = (json: GcJson): GcEntryJson[] =>
  json.plan.entries.filter(
    (e) =>
      e.device.startsWith(`${vg.vgName}/`) ||
      (e.target === 'map' && Object.values(ids).includes(e.volumeId ?? '')),
  );
const lv = (key: keyof typeof names) => `lvstamp_${ids[key]}`;
const device = (key: keyof typeof names) => `${vg.vgName}/${lv(key)}`;

async function create(key: keyof typeof names, ownerId = owner): Promise<void> {
  await cli(['--owner-id', ownerId, 'create', names[key], '--size', '8Mi', '--vg', vg.vgName], 0);
}

beforeAll(async () => {
  vg = await createLoopVg({ sizeBytes: 512 * MiB });
  liveFile = join(vg.dir, 'live-volumes');
  await writeFile(liveFile, `# volumes still referenced\n${names.live}\n`);

  // The orphans first, so that they are the oldest. The CLI runs in parallel
  // (its start-up dominates under emulation); the host lock serialises lvm.
  await Promise.all([create('orphanA'), create('orphanB')]);
  const orphanHeaders = await Promise.all(
    (['orphanA', 'orphanB'] as const).map(async (k) =>
      okHeaderOnDisk((await lvRow(vg.vgName, lv(k))).lv_dm_path),
    ),
  );
  orphansCreatedAtMs = Math.max(...orphanHeaders.map((h) => h.createdAtMs));
  for (const k of ['orphanA', 'orphanB'] as const)
    await writeAt((await lvRow(vg.vgName, lv(k))).lv_dm_path, PATTERN_AT, ORPHAN_BYTES);
  await Promise.all([
    create('live'),
    create('foreign', foreignOwner),
    create('corrupt'),
    create('open'),
  ]);
  // orphan A keeps a stale (attached, unmounted) data device
  const [, openDevice] = await Promise.all([
    cli(['--owner-id', owner, 'attach', names.orphanA], 0),
    cli(['--owner-id', owner, 'attach', names.open], 0).then((r) => r.stdout),
  ]);

  // a corrupt header: one byte of the name flipped on the LV device
  const corruptLv = (await lvRow(vg.vgName, lv('corrupt'))).lv_dm_path;
  const flipped = String.fromCharCode(names.corrupt.charCodeAt(0) ^ 0x20); // 'g' -> 'G'
  await shOk(
    ['dd', `of=${corruptLv}`, 'bs=1', 'seek=74', 'count=1', 'conv=notrunc,fsync', 'status=none'],
    { stdin: flipped },
  );
  expect(await headerOnDisk(corruptLv)).toEqual({ status: 'corrupt', why: 'checksum' });

  // an open volume: its data device mounted
  openMountPoint = await formatAndMount(openDevice, 'ext4', vg.dir, 'open');

  // an LV with the prefix but no header: made by hand, start zeroed
  await shOk([
    'lvcreate',
    '--yes',
    '--zero',
    'y',
    '--wipesignatures',
    'y',
    '-n',
    `lvstamp_${headerlessId}`,
    '-L',
    `${8 * MiB}b`,
    vg.vgName,
  ]);
  const headerless = (await lvRow(vg.vgName, `lvstamp_${headerlessId}`)).lv_dm_path;
  await shOk(['dd', 'if=/dev/zero', `of=${headerless}`, 'bs=1M', 'count=1', 'oflag=direct']);
  expect(await headerOnDisk(headerless)).toEqual({ status: 'not-stamped', why: 'no magic' });
});

describe('gc on real volumes', () => {
  it('needs --live; refuses an empty live set while stamped volumes exist; with --allow-empty-live-set a dry run removes nothing', async () => {
    const before = await lvNames(vg.vgName);
    const missing = await cli(gc('--min-age', MIN_AGE, '--apply'), 2);
    expect(missing.stdout).toBe('');
    expect(missing.stderr).toBe(
      'lvstamp: give the live set with --live FILE (one PV name or ID per line, - for standard input); to run with none, --allow-empty-live-set',
    );
    const refused = await cli(gc('--live', '-', '--min-age', MIN_AGE, '--apply'), 1, { stdin: '' });
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toMatch(
      /\nlvstamp: the live set is empty while \d+ stamped volume\(s\) exist; refusing to plan removals \(an empty list is more often a failed one\); allow it with --allow-empty-live-set if nothing is really in use$/,
    );
    const stamped = Number(/while (\d+) stamped/.exec(refused.stderr)?.[1]);
    expect(stamped).toBeGreaterThanOrEqual(5); // live, two orphans, foreign, open

    const dry = await cli(gc('--min-age', '0s', '--allow-empty-live-set'), 0);
    expect(dry.stdout).toMatch(/; dry run: nothing was removed \(use --apply\)$/);
    expect(dry.stdout).toMatch(
      new RegExp(`\\n${device('live')}\\s+remove-volume\\s+6\\s+orphan: `),
    );
    expect(await lvNames(vg.vgName)).toEqual(before);
  });

  it('a dry run gives each device its rule and reason and removes nothing', async () => {
    await sleepUntil(orphansCreatedAtMs + MIN_AGE_MS + 1_000);
    await create('young');
    const before = await lvNames(vg.vgName);
    expect(before).toHaveLength(8);

    const plan = await cliJson<GcJson>(gc('--live', liveFile, '--min-age', MIN_AGE));
    expect(plan).toMatchObject({ dryRun: true, minAgeMs: MIN_AGE_MS, maxDeletions: 10 });
    expect(plan.outcomes).toEqual([]);
    const entries = ours(plan);
    const decided = new Map(entries.map((e) => [e.device, [e.target, e.action, e.rule]]));
    expect(Object.fromEntries(decided)).toEqual({
      [device('live')]: ['volume', 'keep', 2],
      [device('orphanA')]: ['volume', 'remove-volume', 6],
      [device('orphanB')]: ['volume', 'remove-volume', 6],
      [device('foreign')]: ['volume', 'keep', 1],
      [device('corrupt')]: ['volume', 'keep', 1],
      [device('open')]: ['volume', 'keep', 1],
      [device('young')]: ['volume', 'keep', 3],
      [`${vg.vgName}/lvstamp_${headerlessId}`]: ['volume', 'keep', 1],
      [`lvstamp-${ids.orphanA}`]: ['map', 'remove-map', 4],
      [`lvstamp-${ids.open}`]: ['map', 'keep', 1],
    });
    const reason = (d: string) => entries.find((e) => e.device === d)?.reason;
    expect(reason(device('live'))).toBe('in the live set');
    expect(reason(device('orphanA'))).toMatch(
      /^orphan: valid header of this owner, not in the live set, age \d+m( \d+s)? ≥ grace period 2m$/,
    );
    expect(reason(device('foreign'))).toBe(
      `owned by another installation: header owner ${foreignOwner}, this GC's owner ${owner}`,
    );
    expect(reason(device('corrupt'))).toMatch(/^header corrupt: .*; never deleted automatically$/);
    expect(reason(device('open'))).toBe(
      `data device lvstamp-${ids.open} open (1): mounted or in use, but not in the live set`,
    );
    expect(reason(device('young'))).toMatch(
      /^younger than the grace period: header createdAt .*, age (\d+(\.\d+)?s|1m( \d+s)?) < 2m$/,
    );
    expect(reason(`${vg.vgName}/lvstamp_${headerlessId}`)).toMatch(
      /^prefixed name but no header in sector 0 \(.*\); a finished volume without a valid header is never deleted automatically$/,
    );
    expect(reason(`lvstamp-${ids.orphanA}`)).toBe(
      `data device of ${device('orphanA')}, whose volume is not in the live set; removing the map leaves the data untouched`,
    );
    expect(reason(`lvstamp-${ids.open}`)).toBe(
      'open (1): mounted or in use, but not in the live set',
    );
    for (const e of entries.filter((x) => x.rule === 1)) expect(e.severity).toBe('warn');

    expect(await lvNames(vg.vgName)).toEqual(before);
    expect(await dmInfo(`lvstamp-${ids.orphanA}`)).not.toBeNull();
  });

  it('--max-delete 1 with two aged orphans removes exactly one (and the stale map) and says the cap was reached; with --wipe none its old bytes stay on the extents', async () => {
    const [first, second] = [ids.orphanA, ids.orphanB].sort();
    const extents = await peRanges(vg.vgName, `lvstamp_${first}`);
    const result = await cli(
      gc(
        '--live',
        liveFile,
        '--min-age',
        MIN_AGE,
        '--max-delete',
        '1',
        '--wipe',
        'none',
        '--apply',
      ),
      0,
    );
    expect(result.stdout).toMatch(/, deletion cap reached; 2 removed$/);
    expect(result.stdout).toMatch(
      new RegExp(
        `\\n${vg.vgName}/lvstamp_${second}\\s+keep\\s+6\\s+WARNING: deletion cap of 1 reached \\(at most 1 per run\\); would otherwise remove: orphan: `,
      ),
    );
    expect(result.stdout).toMatch(
      new RegExp(
        `\\n${vg.vgName}/lvstamp_${first}\\s+remove-volume\\s+6\\s+orphan: .*\\s+removed: `,
      ),
    );
    const left = await lvNames(vg.vgName);
    expect(left).not.toContain(`lvstamp_${first}`);
    expect(left).toContain(`lvstamp_${second}`);
    expect(left).toHaveLength(7);
    expect(await dmInfo(`lvstamp-${ids.orphanA}`)).toBeNull();
    // The control of the wipe test below: without a wipe the next LV on these extents reads them.
    const next = await readExtents(vg.vgName, extents);
    expect(next.subarray(PATTERN_AT, PATTERN_AT + MiB).equals(ORPHAN_BYTES)).toBe(true);
  });

  it('--apply removes the other aged orphan, wiped (discard, the default), and keeps live, young, foreign, corrupt, open and headerless volumes', async () => {
    const [, second] = [ids.orphanA, ids.orphanB].sort();
    const secondPath = (await lvRow(vg.vgName, `lvstamp_${second}`)).lv_dm_path;
    const extents = await peRanges(vg.vgName, `lvstamp_${second}`);
    const applied = await cliJson<GcJson>(gc('--live', liveFile, '--min-age', MIN_AGE, '--apply'));
    expect(applied.dryRun).toBe(false);
    expect(applied.plan.capped).toBe(false);
    expect(
      ours(applied)
        .filter((e) => e.action !== 'keep')
        .map((e) => [e.device, e.action, e.rule]),
    ).toEqual([[`${vg.vgName}/lvstamp_${second}`, 'remove-volume', 6]]);
    expect(applied.outcomes.map((o) => [o.entry.device, o.outcome, o.detail])).toEqual([
      [
        `${vg.vgName}/lvstamp_${second}`,
        'removed',
        `wiped ${secondPath} (discard), removed LV ${vg.vgName}/lvstamp_${second}`,
      ],
    ]);
    // DESIGN.md §5 "Wipe": the next volume on its extents reads zeros, header and pattern included.
    const next = await readExtents(vg.vgName, extents);
    expect(next.length).toBeGreaterThan(PATTERN_AT + MiB);
    expect(nonZeroBytes(next)).toBe(0);
    expect(ours(applied).find((e) => e.device === device('young'))?.rule).toBe(3);

    expect(await lvNames(vg.vgName)).toEqual(
      [
        lv('live'),
        lv('foreign'),
        lv('corrupt'),
        lv('open'),
        lv('young'),
        `lvstamp_${headerlessId}`,
      ].sort(),
    );
    const openMap = await dmInfo(`lvstamp-${ids.open}`);
    expect(openMap?.open).toBe(1);
    const mounted = await sh(['findmnt', '-n', '-o', 'SOURCE', openMountPoint]);
    expect(mounted.stdout.trim()).toBe(`/dev/mapper/lvstamp-${ids.open}`);
    for (const key of ['live', 'foreign', 'open', 'young'] as const) {
      const header = await okHeaderOnDisk((await lvRow(vg.vgName, lv(key))).lv_dm_path);
      expect(header).toMatchObject({ volumeId: ids[key], name: names[key] });
    }
    const corrupt = (await lvRow(vg.vgName, lv('corrupt'))).lv_dm_path;
    const inspected = await cliJson<InspectJson>(['inspect', corrupt]);
    expect(inspected.decode.status).toBe('corrupt');
    expect(inspected.explanation).toMatch(/: reported, never deleted automatically$/);
  });
});
