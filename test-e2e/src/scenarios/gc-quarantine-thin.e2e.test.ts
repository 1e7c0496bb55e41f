// The GC's undo window for what gc-quarantine.e2e.test.ts does not make with the CLI, on real
// lvm2 (DESIGN.md §6 "Quarantine"): a thin volume and a thin snapshot of it are quarantined
// (lvstamp_q_<id>, lvstamp_qs_<id>: inactive, tagged, still thin LVs of the pool, sector 0
// untouched), restored with their bytes and flags, quarantined again and expired; and a GC
// killed at the other steps of quarantining (after the data device went, before the lvchange)
// and of expiry (after the activation, before the lvremove) converges on the next run. The
// thin volume and the snapshot are made with lvm itself in the form docs/SNAPSHOTS.md §4 and
// DESIGN.md §4 give them, their sector 0 a real header made by the CLI. Every volume here
// carries a random owner ID.
import { existsSync } from 'node:fs';
import { readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { createLoopVg, installCleanupHooks, shOk, type LoopVg } from '../harness/index.js';
import {
  DATA_OFFSET,
  MiB,
  cli,
  cliJson,
  idOf,
  lvNames,
  lvRow,
  lvsRows,
  newOwnerId,
  okHeaderOnDisk,
  readBytes,
  sleep,
  startCli,
  suffix,
  waitForNoProcessMentioning,
  type GcJson,
  type OnDiskHeader,
} from './support.js';

installCleanupHooks();

const owner = newOwnerId();
const s = suffix();
const volumeName = `q-thin-${s}`;
const snapshotName = `q-thin-snap-${s}`;
const volumeId = idOf(volumeName);
const snapshotId = idOf(snapshotName);
const thinLv = `lvstamp_${volumeId}`;
const snapLv = `lvstamp_snap_${snapshotId}`;
const qThin = `lvstamp_q_${volumeId}`;
const qSnap = `lvstamp_qs_${snapshotId}`;
/** Raw bytes at the start of the thin volume's data area. */
const PAYLOAD = `thin quarantine payload ${s}`;
const SNAPSHOT_TAGS = [
  'lvstamp',
  `lvstamp.owner=${owner}`,
  `lvstamp.source=${volumeId}`,
  `lvstamp.size=${8 * MiB}`,
];

let vg: LoopVg;
let liveFile: string;
let snapshotFile: string;
let thinHeader: OnDiskHeader;

const lvstamp = (...args: string[]) => ['--owner-id', owner, ...args];
const gc = (...args: string[]) =>
  lvstamp(
    'gc',
    '--vg',
    vg.vgName,
    '--live',
    liveFile,
    '--live-snapshots',
    snapshotFile,
    '--min-age',
    '0s',
    ...args,
  );
const tagsOf = (row: { lv_tags: string }) => row.lv_tags.split(',').filter((t) => t !== '');
const quarantineTags = (row: { lv_tags: string }) =>
  tagsOf(row).filter((t) => t.startsWith('lvstamp.quarantined='));
const row = async (lvName: string) => (await lvsRows(vg.vgName)).find((r) => r.lv_name === lvName);
/** lv_attr: [4] state (`a` active, `-` not), [9] `k` = activation skip (lvs(8)). */
const active = (r: { lv_attr: string }) => r.lv_attr[4] === 'a';
const skipFlag = (r: { lv_attr: string }) => r.lv_attr[9] === 'k';

/** Sector 0 of an LV read by activating it by hand (`-K` for a snapshot), then deactivated again. */
async function sectorZero(lvName: string, snapshot: boolean): Promise<OnDiskHeader> {
  const target = `${vg.vgName}/${lvName}`;
  await shOk(['lvchange', '--activate', 'y', ...(snapshot ? ['-K'] : []), target]);
  try {
    return await okHeaderOnDisk((await lvRow(vg.vgName, lvName)).lv_dm_path);
  } finally {
    await shOk(['lvchange', '--activate', 'n', target]);
  }
}

/** Whether a device-mapper map of that name exists, from sysfs (a stale /dev node proves nothing). */
async function mapExists(name: string): Promise<boolean> {
  for (const dev of await readdir('/sys/block')) {
    if (!dev.startsWith('dm-')) continue;
    const dmName = await readFile(`/sys/block/${dev}/dm/name`, 'utf8').catch(() => '');
    if (dmName.trim() === name) return true;
  }
  return false;
}

/** The `/dev/mapper` node of an LV of this test's group (no `-` to double in either name). */
const lvNode = (lvName: string) => `/dev/mapper/${vg.vgName}-${lvName}`;

beforeAll(async () => {
  vg = await createLoopVg({ sizeBytes: 512 * MiB });
  expect(vg.vgName).not.toContain('-');
  await shOk(['lvcreate', '--yes', '--type', 'thin-pool', '-L', '128m', '-n', 'pool0', vg.vgName]);
  // The thin volume: the header of a real volume of that name (made by the CLI, its first 4 KiB
  // copied, then deleted) on a thin LV of the pool with the name, tags and size a thin class gives.
  await cli(lvstamp('create', volumeName, '--size', '8Mi', '--vg', vg.vgName), 0);
  const thick = await lvRow(vg.vgName, thinLv);
  const headerFile = join(vg.dir, 'thin.header');
  await shOk(['dd', `if=${thick.lv_dm_path}`, `of=${headerFile}`, 'bs=4096', 'count=1']);
  await cli(lvstamp('delete', volumeName, '--vg', vg.vgName), 0);
  await shOk([
    'lvcreate',
    '--yes',
    '--type',
    'thin',
    '-V',
    `${thick.lv_size}b`,
    '--thinpool',
    'pool0',
    '-n',
    thinLv,
    '--addtag',
    'lvstamp',
    '--addtag',
    `lvstamp.owner=${owner}`,
    vg.vgName,
  ]);
  const thin = await lvRow(vg.vgName, thinLv);
  await shOk(['dd', `if=${headerFile}`, `of=${thin.lv_dm_path}`, 'bs=4096', 'oflag=direct']);
  await shOk(
    [
      'dd',
      `of=${thin.lv_dm_path}`,
      'bs=4096',
      `seek=${DATA_OFFSET / 4096}`,
      'conv=notrunc,fsync',
      'status=none',
    ],
    { stdin: PAYLOAD },
  );
  thinHeader = await okHeaderOnDisk(thin.lv_dm_path);
  // Its snapshot (docs/SNAPSHOTS.md §4): read-only, inactive with the activation-skip flag, tagged.
  await shOk([
    'lvcreate',
    '--yes',
    '-s',
    '-pr',
    '-n',
    snapLv,
    ...[...SNAPSHOT_TAGS, `lvstamp.created=${Date.now() - 10 * 60_000}`].flatMap((t) => [
      '--addtag',
      t,
    ]),
    `${vg.vgName}/${thinLv}`,
  ]);
  liveFile = join(vg.dir, 'live-volumes');
  snapshotFile = join(vg.dir, 'live-snapshots');
  await writeFile(liveFile, `pvc-unrelated-${s}\n`);
  await writeFile(snapshotFile, `snap-unrelated-${s}\n`);
}, 600_000);

describe('gc quarantine of thin volumes and snapshots on a real thin pool', () => {
  it('quarantines the orphan thin volume and its orphan snapshot: renamed, tagged, inactive, still in the pool, sector 0 untouched', async () => {
    const before = await row(snapLv);
    expect(before && skipFlag(before), 'the snapshot rests with the activation-skip flag').toBe(
      true,
    );
    const run = await cliJson<GcJson>(gc('--quarantine', '1h', '--apply'));
    const outcome = (lvName: string) =>
      run.outcomes.find((o) => o.entry.device === `${vg.vgName}/${lvName}`);
    expect(outcome(thinLv)).toMatchObject({
      outcome: 'quarantined',
      entry: { action: 'quarantine-volume' },
    });
    expect(outcome(snapLv)).toMatchObject({
      outcome: 'quarantined',
      entry: { action: 'quarantine-snapshot' },
    });
    const names = await lvNames(vg.vgName);
    expect(names).toEqual(expect.arrayContaining([qThin, qSnap, 'pool0']));
    expect(names).not.toContain(thinLv);
    expect(names).not.toContain(snapLv);
    const pooled = (
      await shOk(['lvs', '--noheadings', '-o', 'lv_name', '-S', 'pool_lv=pool0', vg.vgName])
    ).stdout
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '')
      .sort();
    expect(pooled, 'both are still thin LVs of the pool (their chunks stay allocated)').toEqual(
      [qSnap, qThin].sort(),
    );
    const q = await lvRow(vg.vgName, qThin);
    const qs = await lvRow(vg.vgName, qSnap);
    for (const r of [q, qs]) {
      expect(active(r), `${r.lv_name} is inactive (lv_attr ${r.lv_attr})`).toBe(false);
      expect(quarantineTags(r)).toHaveLength(1);
    }
    expect(tagsOf(q)).toEqual(expect.arrayContaining(['lvstamp', `lvstamp.owner=${owner}`]));
    // Still writeable: the pool's thin capacity keeps counting it as promised (DESIGN.md §4
    // "Thin capacity": V sums the writeable thin LVs of the pool, whatever their names).
    expect(q.lv_attr[1], `${qThin} lv_attr ${q.lv_attr}`).toBe('w');
    expect(tagsOf(qs)).toEqual(expect.arrayContaining(SNAPSHOT_TAGS));
    expect(skipFlag(qs), 'the quarantined snapshot keeps its activation-skip flag').toBe(true);
    expect(await sectorZero(qThin, false)).toEqual(thinHeader);
    expect(await sectorZero(qSnap, true)).toEqual(thinHeader);
    const listed = await cliJson<{ quarantined: { id: string; kind: string; owned: boolean }[] }>(
      lvstamp('list', '--quarantined', '--vg', vg.vgName),
    );
    expect(listed.quarantined.map((l) => [l.kind, l.id, l.owned]).sort()).toEqual(
      [
        ['snapshot', snapshotId, true],
        ['volume', volumeId, true],
      ].sort(),
    );
  });

  it('restores the thin volume with its bytes and the snapshot inactive with its flag and tags', async () => {
    const restored = await cli(lvstamp('quarantine', 'restore', volumeId, '--vg', vg.vgName), 0);
    expect(restored.stdout).toContain(`restored volume ${volumeId} as ${vg.vgName}/${thinLv}`);
    const thin = await lvRow(vg.vgName, thinLv);
    expect(active(thin)).toBe(true);
    expect(quarantineTags(thin)).toEqual([]);
    expect(await okHeaderOnDisk(thin.lv_dm_path)).toEqual(thinHeader);
    expect(await readBytes(thin.lv_dm_path, DATA_OFFSET, PAYLOAD.length)).toEqual(
      Buffer.from(PAYLOAD),
    );

    const snap = await cli(
      lvstamp('quarantine', 'restore', '--snapshot', snapshotId, '--vg', vg.vgName),
      0,
    );
    expect(snap.stdout).toContain(`restored snapshot ${snapshotId} as ${vg.vgName}/${snapLv}`);
    const back = await lvRow(vg.vgName, snapLv);
    expect(active(back), 'a restored snapshot rests inactive').toBe(false);
    expect(skipFlag(back)).toBe(true);
    expect(quarantineTags(back)).toEqual([]);
    expect(tagsOf(back)).toEqual(expect.arrayContaining(SNAPSHOT_TAGS));
    expect(await sectorZero(snapLv, true)).toEqual(thinHeader);
    expect((await lvNames(vg.vgName)).filter((n) => n.startsWith('lvstamp_q'))).toEqual([]);
  });

  it('quarantined again, both expire once the window passed: removed unwiped (even with --wipe zero), nothing left in the pool', async () => {
    const first = await cliJson<GcJson>(gc('--quarantine', '1s', '--apply'));
    expect(first.outcomes.map((o) => [o.entry.device, o.outcome]).sort()).toEqual(
      [
        [`${vg.vgName}/${snapLv}`, 'quarantined'],
        [`${vg.vgName}/${thinLv}`, 'quarantined'],
      ].sort(),
    );
    await sleep(2_000);
    // A thin LV is never wiped (DESIGN.md §5 "Wipe"): the outcome names every step that ran.
    const run = await cliJson<GcJson>(gc('--quarantine', '1s', '--wipe', 'zero', '--apply'));
    expect(
      run.outcomes.map((o) => [o.entry.device, o.entry.action, o.outcome, o.detail]).sort(),
    ).toEqual(
      [
        [
          `${vg.vgName}/${qSnap}`,
          'remove-quarantined',
          'removed',
          `removed quarantined LV ${vg.vgName}/${qSnap}`,
        ],
        [
          `${vg.vgName}/${qThin}`,
          'remove-quarantined',
          'removed',
          `removed quarantined LV ${vg.vgName}/${qThin}`,
        ],
      ].sort(),
    );
    expect(await lvNames(vg.vgName)).toEqual(['pool0']);
  });

  it('a GC killed after the data device went and before the lvchange: the next run quarantines it', async () => {
    const landed: string[] = [];
    for (let attempt = 1; attempt <= 5 && landed.length === 0; attempt++) {
      const name = `q-mapkill-${s}-${attempt}`;
      const id = idOf(name);
      await cli(lvstamp('create', name, '--size', '8Mi', '--vg', vg.vgName), 0);
      await cli(lvstamp('attach', name), 0);
      const header = await okHeaderOnDisk((await lvRow(vg.vgName, `lvstamp_${id}`)).lv_dm_path);
      expect(await mapExists(`lvstamp-${id}`)).toBe(true);
      const child = startCli(gc('--quarantine', '7d', '--apply'));
      const state = { exited: false };
      const done = child.then((r) => {
        state.exited = true;
        return r;
      });
      while (!state.exited && (await mapExists(`lvstamp-${id}`))) await sleep(2);
      if (!state.exited) child.kill('SIGKILL');
      const result = await done;
      await waitForNoProcessMentioning(id);
      const mid = await row(`lvstamp_${id}`);
      if (result.signal !== 'SIGKILL' || mid === undefined || quarantineTags(mid).length > 0) {
        continue; // the kill came too late: try again with a new volume
      }
      landed.push(name);
      expect(await mapExists(`lvstamp-${id}`)).toBe(false);
      expect(active(mid), 'killed before the lvchange: still active').toBe(true);
      const next = await cliJson<GcJson>(gc('--quarantine', '7d', '--apply'));
      expect(
        next.outcomes.find((o) => o.entry.device === `${vg.vgName}/lvstamp_${id}`),
      ).toMatchObject({ outcome: 'quarantined', entry: { action: 'quarantine-volume' } });
      const q = await lvRow(vg.vgName, `lvstamp_q_${id}`);
      expect(active(q)).toBe(false);
      expect(quarantineTags(q)).toHaveLength(1);
      expect(await sectorZero(`lvstamp_q_${id}`, false)).toEqual(header);
    }
    expect(landed, 'a kill landed between the map removal and the lvchange').toHaveLength(1);
    // This test's quarantined volumes go, so that the next test's runs judge only its own.
    await cli(lvstamp('quarantine', 'purge', '--apply', '--vg', vg.vgName), 0);
    expect((await lvNames(vg.vgName)).filter((n) => n.startsWith('lvstamp_q_'))).toEqual([]);
  });

  it('a GC killed after it activated an expired quarantined LV and before the lvremove: the next run removes it', async () => {
    const landed: string[] = [];
    for (let attempt = 1; attempt <= 5 && landed.length === 0; attempt++) {
      const name = `q-expkill-${s}-${attempt}`;
      const id = idOf(name);
      const qLv = `lvstamp_q_${id}`;
      await cli(lvstamp('create', name, '--size', '8Mi', '--vg', vg.vgName), 0);
      const header = await okHeaderOnDisk((await lvRow(vg.vgName, `lvstamp_${id}`)).lv_dm_path);
      const quarantined = await cliJson<GcJson>(gc('--quarantine', '1h', '--apply'));
      expect(
        quarantined.outcomes.find((o) => o.entry.device === `${vg.vgName}/lvstamp_${id}`),
      ).toMatchObject({ outcome: 'quarantined' });
      const before = await lvRow(vg.vgName, qLv);
      expect(active(before)).toBe(false);
      expect(existsSync(lvNode(qLv))).toBe(false);
      await sleep(1_100);
      const child = startCli(gc('--quarantine', '1s', '--apply'));
      const state = { exited: false };
      const done = child.then((r) => {
        state.exited = true;
        return r;
      });
      // The run activates it to read sector 0 (its /dev/mapper node appears); kill at once.
      while (!state.exited && !existsSync(lvNode(qLv))) await sleep(2);
      if (!state.exited) child.kill('SIGKILL');
      const result = await done;
      await waitForNoProcessMentioning(id);
      const mid = await row(qLv);
      if (result.signal !== 'SIGKILL' || mid === undefined) continue; // too late: try again
      landed.push(name);
      // Nothing but the activation happened: same LV, same tags (the quarantine time unchanged).
      expect(mid.lv_uuid).toBe(before.lv_uuid);
      expect(mid.lv_tags).toBe(before.lv_tags);
      expect(
        active(mid) ? await okHeaderOnDisk(mid.lv_dm_path) : await sectorZero(qLv, false),
      ).toEqual(header);
      const next = await cliJson<GcJson>(gc('--quarantine', '1s', '--apply'));
      expect(next.outcomes.find((o) => o.entry.device === `${vg.vgName}/${qLv}`)).toMatchObject({
        outcome: 'removed',
        entry: { action: 'remove-quarantined' },
      });
      expect(await lvNames(vg.vgName)).not.toContain(qLv);
    }
    expect(landed, 'a kill landed between the activation and the lvremove').toHaveLength(1);
  });
});
