// The GC's undo window on real lvm2 (DESIGN.md §6 "Quarantine"): an orphan is
// quarantined (data device removed, one lvchange tags and deactivates it,
// lvrename to lvstamp_q_<id>, header untouched), restored by one command with
// its bytes, removed only when its window passed with both signals, purged on
// demand; and a GC killed between the steps converges on the next run. Every
// volume here carries a random owner ID, so these runs touch only this file's.
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { createLoopVg, installCleanupHooks, shOk, type LoopVg } from '../harness/index.js';
import {
  MiB,
  cli,
  cliJson,
  dmInfo,
  headerOnDisk,
  idOf,
  lvNames,
  lvRow,
  lvsRows,
  newOwnerId,
  nonZeroBytes,
  okHeaderOnDisk,
  pattern,
  peRanges,
  readBytes,
  readExtents,
  sleep,
  startCli,
  suffix,
  waitForNoProcessMentioning,
  writeAt,
  type GcJson,
} from './support.js';

installCleanupHooks();

const owner = newOwnerId();
const names = {
  live: `q-live-${suffix()}`,
  restored: `q-restored-${suffix()}`,
  expires: `q-expires-${suffix()}`,
  recreated: `q-recreated-${suffix()}`,
  corrupt: `q-corrupt-${suffix()}`,
  purged: `q-purged-${suffix()}`,
  killed: `q-killed-${suffix()}`,
};
type Key = keyof typeof names;
const ids = Object.fromEntries(Object.entries(names).map(([k, n]) => [k, idOf(n)])) as Record<
  Key,
  string
>;
/** Bytes written into the restored volume's data device before it is quarantined. */
const PAYLOAD = `quarantine payload ${suffix()}`;
/** The old tenant's bytes in the volume that expires: 1 MiB at byte 3 MiB of its LV. */
const EXPIRED_AT = 3 * MiB;
const EXPIRED_BYTES = pattern(`expired tenant bytes ${suffix()} `, MiB);

let vg: LoopVg;
let liveFile: string;

const lvstamp = (...args: string[]) => ['--owner-id', owner, ...args];
const gc = (...args: string[]) =>
  lvstamp('gc', '--vg', vg.vgName, '--live', liveFile, '--min-age', '0s', ...args);
const qName = (key: Key) => `lvstamp_q_${ids[key]}`;
const row = async (lvName: string) => (await lvsRows(vg.vgName)).find((r) => r.lv_name === lvName);
const quarantineTags = (tags: string) =>
  tags.split(',').filter((t) => t.startsWith('lvstamp.quarantined='));

async function setLive(...keys: Key[]): Promise<void> {
  await writeFile(liveFile, keys.map((k) => `${names[k]}\n`).join(''));
}

async function create(key: Key): Promise<void> {
  await cli(lvstamp('create', names[key], '--size', '8Mi', '--vg', vg.vgName), 0);
}

/** Asserts the finished quarantine of `key`: renamed, one tag, inactive, no data device, header intact. */
async function expectQuarantined(key: Key, header: { createdAtMs: number; name: string }) {
  const names_ = await lvNames(vg.vgName);
  expect(names_).toContain(qName(key));
  expect(names_).not.toContain(`lvstamp_${ids[key]}`);
  const q = await lvRow(vg.vgName, qName(key));
  expect(q.lv_attr[4], `${qName(key)} is inactive (lv_attr ${q.lv_attr})`).toBe('-');
  expect(quarantineTags(q.lv_tags)).toHaveLength(1);
  expect(q.lv_tags.split(',')).toEqual(
    expect.arrayContaining(['lvstamp', `lvstamp.owner=${owner}`]),
  );
  expect(await dmInfo(`lvstamp-${ids[key]}`)).toBeNull();
  // The header was never written: activate by hand, read, deactivate.
  await shOk(['lvchange', '--activate', 'y', `${vg.vgName}/${qName(key)}`]);
  const onDisk = await okHeaderOnDisk((await lvRow(vg.vgName, qName(key))).lv_dm_path);
  await shOk(['lvchange', '--activate', 'n', `${vg.vgName}/${qName(key)}`]);
  expect(onDisk).toMatchObject({
    createdAtMs: header.createdAtMs,
    name: header.name,
    volumeId: ids[key],
  });
}

beforeAll(async () => {
  vg = await createLoopVg({ sizeBytes: 512 * MiB });
  liveFile = join(vg.dir, 'live-volumes');
  await setLive('live');
  await Promise.all((['live', 'restored', 'expires', 'recreated', 'corrupt'] as const).map(create));
  const expiresLv = (await lvRow(vg.vgName, `lvstamp_${ids.expires}`)).lv_dm_path;
  await writeAt(expiresLv, EXPIRED_AT, EXPIRED_BYTES);
  // The restored volume holds known bytes at the start of its data device.
  const attached = await cli(lvstamp('attach', names.restored), 0);
  const dataDevice = attached.stdout.trim().split('\n').pop() ?? '';
  await shOk(['dd', `of=${dataDevice}`, 'bs=4096', 'conv=notrunc,fsync', 'status=none'], {
    stdin: PAYLOAD,
  });
}, 600_000);

describe('gc quarantine on real lvm2', () => {
  const headers: Partial<Record<Key, { createdAtMs: number; name: string }>> = {};

  it('quarantines the orphans instead of removing them: map removed, tagged, inactive, renamed, header intact', async () => {
    for (const key of ['restored', 'expires', 'recreated', 'corrupt'] as const) {
      headers[key] = await okHeaderOnDisk(
        (await lvRow(vg.vgName, `lvstamp_${ids[key]}`)).lv_dm_path,
      );
    }
    expect(await dmInfo(`lvstamp-${ids.restored}`)).not.toBeNull();
    const run = await cliJson<GcJson>(gc('--quarantine', '1h', '--apply'));
    const outcome = (key: Key) =>
      run.outcomes.find((o) => o.entry.device === `${vg.vgName}/lvstamp_${ids[key]}`);
    for (const key of ['restored', 'expires', 'recreated', 'corrupt'] as const) {
      expect(outcome(key)).toMatchObject({
        outcome: 'quarantined',
        entry: { action: 'quarantine-volume' },
      });
      expect(outcome(key)?.detail).toContain(
        `deactivated and renamed ${vg.vgName}/lvstamp_${ids[key]} to ${vg.vgName}/${qName(key)}`,
      );
      await expectQuarantined(key, headers[key] ?? { createdAtMs: 0, name: '' });
    }
    // Its data device went first, as every map over a volume that is not live (rule 4).
    expect(run.outcomes.find((o) => o.entry.device === `lvstamp-${ids.restored}`)).toMatchObject({
      outcome: 'removed',
      entry: { action: 'remove-map' },
    });
    expect(await lvNames(vg.vgName)).toContain(`lvstamp_${ids.live}`);
    // Invisible to the volume look-ups, visible to list --quarantined.
    const list = await cli(lvstamp('list', '--vg', vg.vgName), 0);
    expect(list.stdout).not.toContain(ids.restored);
    const quarantined = await cliJson<{
      quarantined: { id: string; kind: string; owned: boolean }[];
    }>(lvstamp('list', '--quarantined', '--vg', vg.vgName));
    expect(quarantined.quarantined.map((q) => q.id).sort()).toEqual(
      [ids.restored, ids.expires, ids.recreated, ids.corrupt].sort(),
    );
    expect(quarantined.quarantined.every((q) => q.kind === 'volume' && q.owned)).toBe(true);
    // A delete of a quarantined ID removes nothing and says where it is (exit 1).
    const del = await cli(lvstamp('delete', names.expires, '--vg', vg.vgName), 1);
    expect(del.stderr).toContain(`it is in quarantine as ${vg.vgName}/${qName('expires')}`);
    expect(del.stderr).toContain('lvstamp quarantine purge');
    expect(await lvNames(vg.vgName)).toContain(qName('expires'));
  });

  it('a run within the window keeps them and says how long is left', async () => {
    const run = await cli(gc('--quarantine', '1h'), 0);
    expect(run.stdout).toMatch(
      new RegExp(`${vg.vgName}/${qName('expires')}\\s+keep\\s+7\\s+since \\S+, [0-9dhms. ]+ left`),
    );
  });

  it('restore gives the name back with its bytes and prints the PersistentVolume to bind it', async () => {
    const restored = await cli(
      lvstamp(
        'quarantine',
        'restore',
        names.restored,
        '--vg',
        vg.vgName,
        '--storage-class',
        'lvstamp-thick',
        '--node',
        'node-7',
      ),
      0,
    );
    expect(restored.stdout).toContain(
      `restored volume ${ids.restored} as ${vg.vgName}/lvstamp_${ids.restored}`,
    );
    expect(restored.stdout).toContain(`volumeHandle: "${ids.restored}"`);
    expect(restored.stdout).toContain('storageClassName: "lvstamp-thick"');
    expect(restored.stdout).toContain('values: ["node-7"]');
    expect(restored.stdout).toContain(`name: "${names.restored}"`);
    // Raw bytes, no filesystem on the data area: Block, never Filesystem (staging would mkfs it).
    expect(restored.stdout).toContain(
      'volumeMode: Block: blkid finds nothing (blank) on the data area',
    );
    expect(restored.stdout).toContain('volumeMode: "Block"');
    expect(restored.stdout).not.toContain('fsType');
    const lv = await lvRow(vg.vgName, `lvstamp_${ids.restored}`);
    expect(quarantineTags(lv.lv_tags)).toEqual([]);
    expect(lv.lv_attr[4]).toBe('a');
    expect(await okHeaderOnDisk(lv.lv_dm_path)).toMatchObject(headers.restored ?? {});
    const attached = await cli(lvstamp('attach', names.restored), 0);
    const dataDevice = attached.stdout.trim().split('\n').pop() ?? '';
    expect(await readBytes(dataDevice, 0, PAYLOAD.length)).toEqual(Buffer.from(PAYLOAD));
    await cli(lvstamp('detach', names.restored), 0);
    // A second restore changes nothing and exits 0.
    const again = await cli(lvstamp('quarantine', 'restore', names.restored, '--vg', vg.vgName), 0);
    expect(again.stdout).toContain(
      `already restored: volume ${ids.restored} as ${vg.vgName}/lvstamp_${ids.restored}`,
    );
    expect((await lvRow(vg.vgName, `lvstamp_${ids.restored}`)).lv_tags).toBe(lv.lv_tags);
  });

  it('restore refuses when a volume with that ID exists again, and when the header no longer matches', async () => {
    await create('recreated');
    const again = await cli(lvstamp('quarantine', 'restore', ids.recreated, '--vg', vg.vgName), 1);
    expect(again.stderr).toMatch(new RegExp(`a volume with ID ${ids.recreated} exists again`));
    expect(again.stderr).toContain(
      `lvstamp quarantine purge ${vg.vgName}/${qName('recreated')} --apply`,
    );
    expect(await lvNames(vg.vgName)).toContain(qName('recreated'));

    // One byte of the quarantined volume's header name flipped.
    const target = `${vg.vgName}/${qName('corrupt')}`;
    await shOk(['lvchange', '--activate', 'y', target]);
    const path = (await lvRow(vg.vgName, qName('corrupt'))).lv_dm_path;
    await shOk(
      ['dd', `of=${path}`, 'bs=1', 'seek=74', 'count=1', 'conv=notrunc,fsync', 'status=none'],
      {
        stdin: 'Q',
      },
    );
    expect(await headerOnDisk(path)).toEqual({ status: 'corrupt', why: 'checksum' });
    await shOk(['lvchange', '--activate', 'n', target]);
    const bad = await cli(lvstamp('quarantine', 'restore', ids.corrupt, '--vg', vg.vgName), 1);
    expect(bad.stderr).toContain('is not provably this installation');
    const still = await lvRow(vg.vgName, qName('corrupt'));
    expect(still.lv_attr[4], 'a refused restore deactivates what it activated').toBe('-');
    expect(quarantineTags(still.lv_tags)).toHaveLength(1);
  });

  it('expiry removes only what passed its window with both signals, wiped first; live and corrupt ones are kept', async () => {
    await setLive('live', 'restored', 'recreated');
    await sleep(2_000);
    const extents = await peRanges(vg.vgName, qName('expires'));
    const run = await cliJson<GcJson>(gc('--quarantine', '1s', '--apply'));
    const entry = (lvName: string) =>
      run.plan.entries.find((e) => e.device === `${vg.vgName}/${lvName}`);
    expect(entry(qName('expires'))).toMatchObject({ action: 'remove-quarantined', rule: 7 });
    expect(entry(qName('recreated'))).toMatchObject({ action: 'keep', rule: 2, severity: 'warn' });
    expect(entry(qName('corrupt'))).toMatchObject({ action: 'keep', rule: 1, severity: 'warn' });
    expect(run.outcomes.map((o) => [o.entry.device, o.outcome, o.detail])).toEqual([
      [
        `${vg.vgName}/${qName('expires')}`,
        'removed',
        `wiped /dev/mapper/${vg.vgName}-${qName('expires')} (discard), removed quarantined LV ${vg.vgName}/${qName('expires')}`,
      ],
    ]);
    // DESIGN.md §5 "Wipe": the next volume on its extents reads zeros where the old bytes were.
    const next = await readExtents(vg.vgName, extents);
    expect(next.length).toBeGreaterThan(EXPIRED_AT + MiB);
    expect(nonZeroBytes(next)).toBe(0);
    const after = await lvNames(vg.vgName);
    expect(after).not.toContain(qName('expires'));
    expect(after).toEqual(expect.arrayContaining([qName('recreated'), qName('corrupt')]));
    // The kept ones rest inactive again.
    expect((await lvRow(vg.vgName, qName('recreated'))).lv_attr[4]).toBe('-');
  });

  it('purge: a dry run removes nothing; --apply removes what carries both signals and keeps the rest', async () => {
    await create('purged');
    await setLive('live', 'restored', 'recreated');
    const weekly = await cli([...gc('--quarantine', '7d', '--apply'), '--json'], 0);
    expect(weekly.stderr).not.toContain('Combining activation change');
    expect(await lvNames(vg.vgName)).toContain(qName('purged'));
    // Its header was corrupted above: a warning inside its window, not info (it can never expire).
    const corrupt = (JSON.parse(weekly.stdout) as GcJson).plan.entries.find(
      (e) => e.device === `${vg.vgName}/${qName('corrupt')}`,
    );
    expect(corrupt).toMatchObject({ action: 'keep', rule: 1, severity: 'warn' });
    expect(corrupt?.reason).toContain('it can never expire');

    const dry = await cli(lvstamp('quarantine', 'purge', '--vg', vg.vgName), 0);
    expect(dry.stdout).toMatch(/dry run: nothing was removed \(use --apply\)$/);
    expect(await lvNames(vg.vgName)).toContain(qName('purged'));
    const young = await cli(
      lvstamp('quarantine', 'purge', '--older-than', '1h', '--apply', '--vg', vg.vgName),
      0,
    );
    expect(young.stdout).toMatch(/0 removed$/);

    // Named: exactly the quarantined copy of the ID that exists again.
    await cli(
      lvstamp(
        'quarantine',
        'purge',
        `${vg.vgName}/${qName('recreated')}`,
        '--apply',
        '--vg',
        vg.vgName,
      ),
      0,
    );
    const named = await lvNames(vg.vgName);
    expect(named).not.toContain(qName('recreated'));
    expect(named).toEqual(expect.arrayContaining([qName('purged'), `lvstamp_${ids.recreated}`]));

    // The dry run reads sector 0 as --apply does (activating, then resting them): the same plan.
    const purge = (...args: string[]) => lvstamp('quarantine', 'purge', '--vg', vg.vgName, ...args);
    const decisions = (run: GcJson) =>
      run.plan.entries.map((e) => [e.device, e.action, e.rule, e.reason]);
    const dryAll = await cliJson<GcJson>(purge());
    expect(
      dryAll.plan.entries.find((e) => e.device === `${vg.vgName}/${qName('purged')}`),
    ).toMatchObject({
      action: 'remove-quarantined',
    });
    expect((await lvRow(vg.vgName, qName('purged'))).lv_attr[4]).toBe('-');
    const applied = await cliJson<GcJson>(purge('--apply'));
    expect(decisions(applied)).toEqual(decisions(dryAll));
    expect(applied.outcomes.map((o) => [o.entry.device, o.outcome])).toEqual(
      dryAll.plan.entries
        .filter((e) => e.action === 'remove-quarantined')
        .map((e) => [e.device, 'removed']),
    );
    const after = await lvNames(vg.vgName);
    expect(after).not.toContain(qName('purged'));
    expect(after).not.toContain(qName('recreated'));
    expect(after).toContain(qName('corrupt'));
    expect(after).toEqual(
      expect.arrayContaining([`lvstamp_${ids.live}`, `lvstamp_${ids.restored}`]),
    );
  });

  it('a GC killed between the quarantine steps converges on the next run', async () => {
    const landed: string[] = [];
    for (let attempt = 1; attempt <= 5 && landed.length === 0; attempt++) {
      const name = `${names.killed}-${attempt}`;
      const id = idOf(name);
      await cli(lvstamp('create', name, '--size', '8Mi', '--vg', vg.vgName), 0);
      const header = await okHeaderOnDisk((await lvRow(vg.vgName, `lvstamp_${id}`)).lv_dm_path);
      await setLive('live', 'restored');
      const lvNode = `/dev/mapper/${vg.vgName.replaceAll('-', '--')}-lvstamp_${id}`;
      const child = startCli(gc('--quarantine', '7d', '--apply'));
      const state = { exited: false };
      const done = child.then((r) => {
        state.exited = true;
        return r;
      });
      // The LV's device goes with the lvchange --activate n (step 2); kill before the lvrename.
      while (!state.exited && existsSync(lvNode)) await sleep(2);
      if (!state.exited) child.kill('SIGKILL');
      const result = await done;
      await sleep(200);
      await waitForNoProcessMentioning(id);
      const mid = await row(`lvstamp_${id}`);
      if (result.signal === 'SIGKILL' && mid !== undefined) {
        landed.push(name);
        expect(quarantineTags(mid.lv_tags), 'killed after the lvchange: tagged').toHaveLength(1);
        expect(mid.lv_attr[4]).toBe('-');
        // The next run finishes it: one quarantine tag, renamed, inactive, header intact.
        const next = await cliJson<GcJson>(gc('--quarantine', '7d', '--apply'));
        expect(
          next.outcomes.find((o) => o.entry.device === `${vg.vgName}/lvstamp_${id}`),
        ).toMatchObject({ outcome: 'quarantined' });
        const names_ = await lvNames(vg.vgName);
        expect(names_).toContain(`lvstamp_q_${id}`);
        expect(names_).not.toContain(`lvstamp_${id}`);
        const q = await lvRow(vg.vgName, `lvstamp_q_${id}`);
        expect(quarantineTags(q.lv_tags)).toHaveLength(1);
        await shOk(['lvchange', '--activate', 'y', `${vg.vgName}/lvstamp_q_${id}`]);
        expect(
          await okHeaderOnDisk((await lvRow(vg.vgName, `lvstamp_q_${id}`)).lv_dm_path),
        ).toMatchObject({
          createdAtMs: header.createdAtMs,
          name,
        });
        await shOk(['lvchange', '--activate', 'n', `${vg.vgName}/lvstamp_q_${id}`]);
      }
    }
    expect(landed, 'a kill landed between the lvchange and the lvrename').toHaveLength(1);
  });

  it('a restore interrupted after it removed the tag is finished by a second restore; the GC never expires it meanwhile', async () => {
    const [killed] = (await lvNames(vg.vgName)).filter(
      (n) => n.startsWith('lvstamp_q_') && n !== qName('corrupt'),
    );
    expect(killed).toBeDefined();
    const id = (killed ?? '').slice('lvstamp_q_'.length);
    const tag = quarantineTags((await lvRow(vg.vgName, killed ?? '')).lv_tags)[0] ?? '';
    // The restore's first step, as a kill would leave it: the tag gone, the name still quarantined.
    await shOk(['lvchange', '--deltag', tag, '--activate', 'y', `${vg.vgName}/${killed ?? ''}`]);
    await shOk(['lvchange', '--activate', 'n', `${vg.vgName}/${killed ?? ''}`]);
    const run = await cliJson<GcJson>(gc('--quarantine', '1s', '--apply'));
    expect(run.plan.entries.find((e) => e.device === `${vg.vgName}/${killed ?? ''}`)).toMatchObject(
      {
        action: 'keep',
        rule: 1,
      },
    );
    expect(await lvNames(vg.vgName)).toContain(killed);
    await cli(lvstamp('quarantine', 'restore', id, '--vg', vg.vgName), 0);
    expect(await lvNames(vg.vgName)).toContain(`lvstamp_${id}`);
  });
});
