// The GC on a volume group lvm refuses to change (DESIGN.md §6 rule 1): one of
// its two PVs detached, a leaked volume is kept with the reason and nothing
// changes on disk (no map removed, no tag written, the metadata sequence
// number unchanged); once the PV is back, the next run quarantines it. The
// volumes carry a random owner ID, so these runs touch only this file's.
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
const gc = () =>
  lvstamp(
    'gc',
    '--vg',
    vg.vgName,
    '--live',
    join(vg.dir, 'live-volumes'),
    '--min-age',
    '0s',
    '--quarantine',
    '1h',
    '--apply',
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
});
