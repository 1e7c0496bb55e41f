// What `lvstamp gc` does with snapshot LVs `lvstamp_snap_<id>` and interrupted restores on real
// lvm2 thin pools (DESIGN.md §6 "Snapshots"). The pool, the thin origins and the snapshots are
// made here with lvm itself, in the form docs/SNAPSHOTS.md §4 gives them: a read-only thin
// snapshot, inactive with the activation-skip flag, tagged lvstamp, owner, source, size, created,
// whose sector 0 is its source volume's header. The headers come from real volumes made by the
// CLI (then deleted). Every volume carries a random owner ID.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { createLoopVg, installCleanupHooks, shOk, type LoopVg } from '../harness/index.js';
import {
  MiB,
  cli,
  cliJson,
  idOf,
  lvNames,
  lvRow,
  newOwnerId,
  okHeaderOnDisk,
  sleepUntil,
  suffix,
} from './support.js';

installCleanupHooks();

/** Grace period; snapshots are aged by their `lvstamp.created` tag, the restore by lv_time. */
// Wide enough that "young" stays young from its (re-)tagging to the plan of a GC run on a loaded
// machine under emulation (snapshot activations alone took over 60 s there).
const MIN_AGE = '120s';
const MIN_AGE_MS = 120_000;

interface GcJson {
  readonly plan: {
    readonly entries: readonly {
      readonly target: string;
      readonly device: string;
      readonly action: string;
      readonly rule: number;
      readonly severity: string;
      readonly reason: string;
    }[];
  };
  readonly activated: readonly string[];
  readonly outcomes: readonly {
    readonly entry: { readonly device: string };
    readonly outcome: string;
    readonly detail: string;
  }[];
}

const owner = newOwnerId();
const foreignOwner = newOwnerId();
const s = suffix();
const snaps = {
  live: `snap-live-${s}`,
  orphan: `snap-orphan-${s}`,
  young: `snap-young-${s}`,
  foreign: `snap-foreign-${s}`,
};
const restoreName = `pvc-restore-${s}`;
const snapLv = (key: keyof typeof snaps) => `lvstamp_snap_${idOf(snaps[key])}`;
const restoreLv = `lvstamp_new_${idOf(restoreName)}`;

let vg: LoopVg;
let liveFile: string;
let snapshotFile: string;
let restoreCreatedMs = 0;
let sourceId = '';

/**
 * A thin LV `name` in pool0 whose sector 0 is the header of a real volume `volumeName` of
 * `ownerId` (made by the CLI, its first 4 KiB copied, then deleted). Returns the volume ID.
 */
async function thinOriginWithHeaderOf(
  name: string,
  volumeName: string,
  ownerId: string,
): Promise<string> {
  await cli(['--owner-id', ownerId, 'create', volumeName, '--size', '8Mi', '--vg', vg.vgName], 0);
  const volumeLv = await lvRow(vg.vgName, `lvstamp_${idOf(volumeName)}`);
  const headerFile = join(vg.dir, `${name}.header`);
  await shOk(['dd', `if=${volumeLv.lv_dm_path}`, `of=${headerFile}`, 'bs=4096', 'count=1']);
  await cli(['--owner-id', ownerId, 'delete', volumeName, '--vg', vg.vgName], 0);
  await shOk([
    'lvcreate',
    '--yes',
    '--type',
    'thin',
    '-V',
    '16m',
    '--thinpool',
    'pool0',
    '-n',
    name,
    vg.vgName,
  ]);
  const thin = await lvRow(vg.vgName, name);
  await shOk([
    'dd',
    `if=${headerFile}`,
    `of=${thin.lv_dm_path}`,
    'bs=4096',
    'count=1',
    'oflag=direct',
    'conv=fsync',
  ]);
  return idOf(volumeName);
}

/** `lvcreate -s -pr` of `origin` (an LV name in the group) as `lvstamp_snap_<id>` with the five tags (inactive, `k`). */
async function snapshot(
  key: keyof typeof snaps,
  origin: string,
  source: string,
  createdMs: number,
) {
  await shOk([
    'lvcreate',
    '--yes',
    '-s',
    '-pr',
    '-n',
    snapLv(key),
    '--addtag',
    'lvstamp',
    '--addtag',
    `lvstamp.owner=${owner}`,
    '--addtag',
    `lvstamp.source=${source}`,
    '--addtag',
    `lvstamp.size=${8 * MiB}`,
    '--addtag',
    `lvstamp.created=${createdMs}`,
    `${vg.vgName}/${origin}`,
  ]);
}

beforeAll(async () => {
  vg = await createLoopVg({ sizeBytes: 512 * MiB });
  await shOk(['lvcreate', '--yes', '--type', 'thin-pool', '-L', '128m', '-n', 'pool0', vg.vgName]);
  sourceId = await thinOriginWithHeaderOf('origin', `pvc-source-${s}`, owner);
  const foreignSource = await thinOriginWithHeaderOf(
    'foreignorigin',
    `pvc-foreign-${s}`,
    foreignOwner,
  );
  const old = Date.now() - 10 * 60_000;
  await snapshot('live', 'origin', sourceId, old);
  await snapshot('orphan', 'origin', sourceId, old);
  await snapshot('foreign', 'foreignorigin', foreignSource, old);
  // An interrupted restore from the live snapshot: a writable, active thin snapshot of it under
  // the temporary name, with the owner's tags and lvstamp.from, its sector 0 the source's header.
  await shOk([
    'lvcreate',
    '--yes',
    '-s',
    '-kn',
    '-ay',
    '-prw',
    '-n',
    restoreLv,
    '--addtag',
    'lvstamp',
    '--addtag',
    `lvstamp.owner=${owner}`,
    '--addtag',
    `lvstamp.from=snapshot.${idOf(snaps.live)}`,
    `${vg.vgName}/${snapLv('live')}`,
  ]);
  restoreCreatedMs = Number((await lvRow(vg.vgName, restoreLv)).lv_time) * 1000;
  // The origin goes: the live snapshot's source volume is gone (lvm forgets the origin).
  await shOk(['lvremove', '--yes', `${vg.vgName}/origin`]);

  liveFile = join(vg.dir, 'live-volumes');
  snapshotFile = join(vg.dir, 'live-snapshots');
  await writeFile(liveFile, `pvc-unrelated-${s}\n`);
  await writeFile(snapshotFile, `${snaps.live}\n`);
}, 600_000);

const gc = (...args: string[]) => [
  '--owner-id',
  owner,
  'gc',
  '--quarantine',
  '0',
  '--vg',
  vg.vgName,
  '--live',
  liveFile,
  '--min-age',
  MIN_AGE,
  ...args,
];

describe('gc and snapshots on a real thin pool', () => {
  it('activates inactive snapshots with -K, keeps the live one (origin gone), the young one and the foreign-header one; removes the orphan and the interrupted restore', async () => {
    expect((await lvRow(vg.vgName, snapLv('orphan'))).lv_attr).toMatch(/^Vri-{3}tz-k$/);
    await sleepUntil(restoreCreatedMs + MIN_AGE_MS + 2_000);
    // A snapshot taken just now (of the live snapshot: its sector 0 is the same source header).
    let youngCreatedMs = Date.now();
    await snapshot('young', snapLv('live'), sourceId, youngCreatedMs);

    const dry = await cliJson<GcJson>(gc('--live-snapshots', snapshotFile));
    const decided = Object.fromEntries(
      dry.plan.entries
        .filter((e) => e.device.startsWith(`${vg.vgName}/`))
        .map((e) => [e.device, [e.target, e.action, e.rule]]),
    );
    expect(decided).toEqual({
      [`${vg.vgName}/${snapLv('live')}`]: ['snapshot', 'keep', 2],
      [`${vg.vgName}/${snapLv('orphan')}`]: ['snapshot', 'remove-snapshot', 6],
      [`${vg.vgName}/${snapLv('young')}`]: ['snapshot', 'keep', 3],
      [`${vg.vgName}/${snapLv('foreign')}`]: ['snapshot', 'keep', 1],
      [`${vg.vgName}/${restoreLv}`]: ['volume', 'remove-volume', 5],
    });
    // The inactive snapshots of this owner were activated with -K (a plain -ay leaves them
    // inactive and their sector 0 unreadable).
    expect([...dry.activated].sort()).toEqual(
      (['foreign', 'live', 'orphan', 'young'] as const)
        .map((k) => `${vg.vgName}/${snapLv(k)}`)
        .sort(),
    );
    const byDevice = new Map(dry.plan.entries.map((e) => [e.device, e]));
    expect(byDevice.get(`${vg.vgName}/${snapLv('live')}`)?.reason).toContain(
      `its source volume ${sourceId} is gone`,
    );
    expect(byDevice.get(`${vg.vgName}/${snapLv('foreign')}`)?.reason).toContain(
      "sector 0 is another installation's header",
    );
    // Snapshots rest inactive (docs/DESIGN.md §3, §6 "Snapshots"): the dry run put back every
    // snapshot it activated (lvchange --activate n).
    for (const k of ['foreign', 'live', 'orphan', 'young'] as const) {
      expect([k, (await lvRow(vg.vgName, snapLv(k))).lv_attr]).toEqual([k, 'Vri---tz-k']);
    }

    // "Just now" again for the applied run: a snapshot's age is its lvstamp.created tag (§6).
    const retagged = Date.now();
    await shOk([
      'lvchange',
      '--deltag',
      `lvstamp.created=${youngCreatedMs}`,
      '--addtag',
      `lvstamp.created=${retagged}`,
      `${vg.vgName}/${snapLv('young')}`,
    ]);
    youngCreatedMs = retagged;
    const applied = await cliJson<GcJson>(gc('--live-snapshots', snapshotFile, '--apply'));
    expect(applied.outcomes.map((o) => [o.entry.device, o.outcome]).sort()).toEqual(
      [
        [`${vg.vgName}/${restoreLv}`, 'removed'],
        [`${vg.vgName}/${snapLv('orphan')}`, 'removed'],
      ].sort(),
    );
    const left = await lvNames(vg.vgName);
    expect(left).toEqual(
      ['foreignorigin', 'pool0', snapLv('foreign'), snapLv('live'), snapLv('young')].sort(),
    );
    // The applied run removed the orphan and put the kept ones back to rest.
    for (const k of ['foreign', 'live', 'young'] as const) {
      expect([k, (await lvRow(vg.vgName, snapLv(k))).lv_attr]).toEqual([k, 'Vri---tz-k']);
    }
    // The kept snapshot still holds its source's header (activated here to read it; the next
    // test relies on it staying active).
    await shOk(['lvchange', '-ay', '-K', `${vg.vgName}/${snapLv('live')}`]);
    const live = await lvRow(vg.vgName, snapLv('live'));
    expect((await okHeaderOnDisk(live.lv_dm_path)).volumeId).toBe(sourceId);
  }, 600_000);

  it('without a snapshot live set keeps every snapshot; an empty one is refused while snapshots exist', async () => {
    const plan = await cliJson<GcJson>(gc('--apply'));
    expect(plan.outcomes).toEqual([]);
    const empty = join(vg.dir, 'empty');
    await writeFile(empty, '');
    const refused = await cli(gc('--live-snapshots', empty, '--apply'), 1);
    expect(refused.stderr).toContain(
      'the snapshot live set is empty while 3 snapshot LV(s) of this owner exist',
    );
    expect(await lvNames(vg.vgName)).toContain(snapLv('live'));
    // The refused run deactivated what it activated, and left the one active before it active.
    expect((await lvRow(vg.vgName, snapLv('young'))).lv_attr).toBe('Vri---tz-k');
    expect((await lvRow(vg.vgName, snapLv('live'))).lv_attr).toBe('Vri-a-tz-k');
  }, 600_000);
});
