// The GC on a volume group lvm refuses to change (DESIGN.md §6 rule 1): one of
// its two PVs detached, a leaked volume is kept with the reason and nothing
// changes on disk (no map removed, no tag written, the metadata sequence
// number unchanged); once the PV is back, the next run quarantines it. Then a
// restore with the PV missing again, and a gc and a purge with the PV seen
// twice, are refused or keep everything, activating nothing; with the group
// whole the restore brings the volume back. The volumes carry a random owner
// ID, so these runs touch only this file's.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  cleanups,
  createLoopVg,
  installCleanupHooks,
  sh,
  shOk,
  type LoopVg,
} from '../harness/index.js';
import {
  MiB,
  cli,
  cliJson,
  dmInfo,
  idOf,
  lvRow,
  newOwnerId,
  suffix,
  type GcJson,
} from './support.js';

installCleanupHooks();

const owner = newOwnerId();
const names = { live: `bvg-live-${suffix()}`, leaked: `bvg-leaked-${suffix()}` };
const leaked = idOf(names.leaked);

let vg: LoopVg;
let secondFile: string;
let secondLoop: string;

const lvstamp = (...args: string[]) => ['--owner-id', owner, ...args];
/** `lvstamp gc` of this file's group and live set, with a quarantine `window`, applied unless `dry`. */
const gc = (window = '1h', dry = false) =>
  lvstamp(
    'gc',
    '--vg',
    vg.vgName,
    '--live',
    join(vg.dir, 'live-volumes'),
    '--min-age',
    '0s',
    '--quarantine',
    window,
    ...(dry ? [] : ['--apply']),
  );

/** What a change of the group would show: its metadata sequence number and the leaked LV. */
async function groupState(): Promise<string> {
  const seqno = (await shOk(['vgs', '--noheadings', '-o', 'vg_seqno', vg.vgName])).stdout.trim();
  const lvs = await shOk(['lvs', '--noheadings', '-o', 'lv_name,lv_attr,lv_tags', vg.vgName]);
  return `${seqno}\n${lvs.stdout.trim()}`;
}

beforeAll(async () => {
  vg = await createLoopVg({ sizeBytes: 128 * MiB });
  // A second PV in the group, torn down first (the registry runs last in, first out).
  secondFile = join(vg.dir, 'pv2.img');
  cleanups.add('tear down the two-PV group', async () => {
    if ((await sh(['losetup', '-j', secondFile, '-n', '-O', 'NAME'])).stdout.trim() === '') {
      await shOk(['losetup', '-f', secondFile]);
    }
    await vg.cleanup();
    for (const loop of (await shOk(['losetup', '-j', secondFile, '-n', '-O', 'NAME'])).stdout
      .trim()
      .split('\n')
      .filter((l) => l !== '')) {
      await sh(['pvremove', '-y', loop]);
      await shOk(['losetup', '-d', loop]);
    }
  });
  await shOk(['truncate', '-s', `${64 * MiB}`, secondFile]);
  secondLoop = (await shOk(['losetup', '-f', '--show', secondFile])).stdout.trim();
  await shOk(['pvcreate', '-y', secondLoop]);
  await shOk(['vgextend', vg.vgName, secondLoop]);
  await writeFile(join(vg.dir, 'live-volumes'), `${names.live}\n`);
  for (const name of [names.live, names.leaked]) {
    // both fit on the first PV, which lvm fills first
    await cli(lvstamp('create', name, '--size', '8Mi', '--vg', vg.vgName), 0);
  }
  await cli(lvstamp('attach', names.leaked), 0);
}, 600_000);

describe('gc on a volume group with a missing PV', () => {
  it('keeps the leaked volume with the reason and changes nothing; after the PV is back, quarantines it', async () => {
    await shOk(['losetup', '-d', secondLoop]);
    const before = await groupState();
    expect(before).toContain(`lvstamp_${leaked}`);

    for (let run = 0; run < 2; run++) {
      const report = await cliJson<GcJson>(gc());
      const entry = report.plan.entries.find((e) => e.device === `${vg.vgName}/lvstamp_${leaked}`);
      expect(entry).toMatchObject({ action: 'keep', rule: 1, severity: 'warn' });
      expect(entry?.reason).toContain(`volume group ${vg.vgName} cannot be changed (missing-pv)`);
      expect(entry?.reason).toContain(`is missing PV`);
      expect(entry?.reason).toContain(`(last written to ${secondLoop})`);
      expect(entry?.reason).toContain('would otherwise quarantine-volume');
      expect(report.outcomes).toEqual([]);
      expect(await dmInfo(`lvstamp-${leaked}`)).not.toBeNull();
      expect(await groupState()).toBe(before);
    }

    await shOk(['losetup', '-f', secondFile]);
    const report = await cliJson<GcJson>(gc());
    expect(report.outcomes.map((o) => [o.entry.device, o.outcome])).toEqual([
      // its data device first (rule 4), then the quarantine
      [`lvstamp-${leaked}`, 'removed'],
      [`${vg.vgName}/lvstamp_${leaked}`, 'quarantined'],
    ]);
    expect((await lvRow(vg.vgName, `lvstamp_q_${leaked}`)).lv_tags).toContain(
      'lvstamp.quarantined=',
    );
  });

  it('restore with the PV missing, gc and purge with a PV seen twice: refused or kept, nothing changed; restored once the group is whole', async () => {
    const quarantined = `lvstamp_q_${leaked}`;
    const restore = lvstamp('quarantine', 'restore', names.leaked, '--vg', vg.vgName);
    // lvm would commit the restore's tag change and refuse only its rename: refused before both
    await shOk(['losetup', '-d', secondLoop]);
    const before = await groupState();
    expect(before).toContain(quarantined);
    const missing = await cli(restore, 1);
    expect(missing.stderr).toContain(`volume group ${vg.vgName} is unusable (missing-pv)`);
    expect(await groupState()).toBe(before);
    secondLoop = (await shOk(['losetup', '-f', '--show', secondFile])).stdout.trim();

    // the first PV attached twice: lvm refuses any activation there, so the GC and purge must
    // plan without one (the quarantined LV rests inactive) and keep its entries with the reason
    const twice = (await shOk(['losetup', '-f', '--show', vg.file])).stdout.trim();
    try {
      const whole = await groupState();
      const report = await cliJson<GcJson>(gc('1s', true));
      const entry = report.plan.entries.find((e) => e.device === `${vg.vgName}/${quarantined}`);
      expect(entry).toMatchObject({ action: 'keep', rule: 1, severity: 'warn' });
      expect(entry?.reason).toContain(`volume group ${vg.vgName} cannot be changed (duplicate-pv)`);
      const purge = await cli(
        lvstamp('quarantine', 'purge', '--older-than', '0s', '--apply', '--vg', vg.vgName),
        0,
      );
      expect(`${purge.stdout}${purge.stderr}`).toContain(
        `volume group ${vg.vgName} cannot be changed (duplicate-pv)`,
      );
      const refused = await cli(restore, 1);
      expect(refused.stderr).toContain(`volume group ${vg.vgName} is unusable (duplicate-pv)`);
      expect(await groupState()).toBe(whole);
    } finally {
      await shOk(['losetup', '-d', twice]);
    }

    const restored = await cli(restore, 0);
    expect(restored.stdout).toContain(`as ${vg.vgName}/lvstamp_${leaked}`);
    expect((await lvRow(vg.vgName, `lvstamp_${leaked}`)).lv_tags).not.toContain(
      'lvstamp.quarantined=',
    );
  });
});
