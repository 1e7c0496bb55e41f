// A volume the GC quarantined, seen through the built driver on real lvm2 (DESIGN.md §6
// "Quarantine"): ListVolumes no longer lists it, DeleteVolume of its ID succeeds and leaves it
// alone, a CreateVolume of the same name makes a new volume beside it, and GetCapacity never
// offers its space: the quarantine frees nothing, only its removal (purge) does.
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { beforeAll, describe, expect, it } from 'vitest';
import { createLoopVg, installCleanupHooks, shOk } from '../harness/index.js';
import { cli, lvNames, lvRow } from '../scenarios/support.js';
import {
  DEVICE_CLASS,
  MiB,
  blockCapability,
  driverDir,
  idOf,
  startDriver,
  unique,
  vgFreeBytes,
  type CsiClient,
  type VolumeMsg,
} from './support.js';

installCleanupHooks();

const OWNER_ID = randomBytes(16).toString('hex');
let vgName = '';
let dir = '';
let csi: CsiClient;

beforeAll(async () => {
  const vg = await createLoopVg({ sizeBytes: 512 * MiB });
  vgName = vg.vgName;
  dir = await driverDir();
  csi = (await startDriver({ dir, vgName, ownerId: OWNER_ID })).client;
});

/** `lvstamp --owner-id <ours> --lock-file <the driver's> ...args`, asserting the exit code. */
const lvstamp = (args: readonly string[], exitCode = 0) =>
  cli(['--owner-id', OWNER_ID, '--lock-file', join(dir, 'host.lock'), ...args], exitCode);

async function create(name: string): Promise<VolumeMsg> {
  const response = await csi.ok<{ volume: VolumeMsg }>('Controller', 'CreateVolume', {
    name,
    capacity_range: { required_bytes: String(20 * MiB) },
    volume_capabilities: [blockCapability()],
  });
  return response.volume;
}

async function capacity(): Promise<number> {
  const answer = await csi.ok<{ available_capacity: string }>('Controller', 'GetCapacity', {
    volume_capabilities: [blockCapability()],
    parameters: { deviceClass: DEVICE_CLASS },
  });
  return Number(answer.available_capacity);
}

async function listedIds(): Promise<string[]> {
  const listed = await csi.ok<{ entries: { volume: VolumeMsg }[] }>('Controller', 'ListVolumes');
  return listed.entries.map((e) => e.volume.volume_id);
}

/**
 * `lvstamp gc --apply` with a 1 h quarantine window and a live set (file `liveFile` in the run's
 * directory) that names another volume only: every volume of ours is quarantined.
 */
async function quarantineAll(liveFile: string): Promise<void> {
  const live = join(dir, liveFile);
  await writeFile(live, `${unique('pvc-other')}\n`);
  await lvstamp([
    'gc',
    '--vg',
    vgName,
    '--live',
    live,
    '--min-age',
    '0s',
    '--quarantine',
    '1h',
    '--apply',
  ]);
}

describe('a quarantined volume through the CSI driver', () => {
  it('is not listed, not deleted, not in the way of a new volume of its name, and its space is never offered until it is purged', async () => {
    const name = unique('pvc-quarantined');
    const id = idOf(name);
    const volume = await create(name);
    expect(volume.volume_id).toBe(id);
    expect(await listedIds()).toContain(id);
    const withVolume = await capacity();

    // The GC quarantines it (its PV is gone: the live set names another volume only).
    await quarantineAll('live');
    expect(await lvNames(vgName)).toEqual([`lvstamp_q_${id}`]);
    expect(await listedIds()).not.toContain(id);
    // Quarantine frees nothing: the LV keeps its extents, so GetCapacity offers no more.
    expect(await capacity()).toBe(withVolume);
    expect(await capacity()).toBe(await vgFreeBytes(vgName));

    // DeleteVolume of its ID: nothing of that ID is live, so it succeeds and removes nothing.
    await csi.ok('Controller', 'DeleteVolume', { volume_id: id });
    expect(await lvNames(vgName)).toEqual([`lvstamp_q_${id}`]);

    // A create of the same name makes a new volume beside the quarantined copy.
    const again = await create(name);
    expect(again.volume_id).toBe(id);
    expect((await lvNames(vgName)).sort()).toEqual([`lvstamp_${id}`, `lvstamp_q_${id}`].sort());
    expect(await listedIds()).toEqual([id]);
    const withBoth = await capacity();
    expect(withBoth).toBeLessThan(withVolume);

    // Only the removal of the quarantined copy gives its space back.
    await lvstamp(['quarantine', 'purge', `${vgName}/lvstamp_q_${id}`, '--apply', '--vg', vgName]);
    expect(await lvNames(vgName)).toEqual([`lvstamp_${id}`]);
    expect(await capacity()).toBe(withVolume);
    await csi.ok('Controller', 'DeleteVolume', { volume_id: id });
    expect(await lvNames(vgName)).toEqual([]);
  });

  it('restore refuses while another process holds the quarantined LV open, and changes nothing', async () => {
    const name = unique('pvc-held');
    const id = idOf(name);
    await create(name);
    await quarantineAll('live-held');
    const qName = `lvstamp_q_${id}`;
    expect(await lvNames(vgName)).toEqual([qName]);
    // Someone activates it and keeps its device open (a look at the data, a stray mount).
    await shOk(['lvchange', '-ay', `${vgName}/${qName}`]);
    const before = await lvRow(vgName, qName);
    const holder = execa('sh', ['-c', `exec 3<${before.lv_dm_path}; sleep 120`], { reject: false });
    try {
      let row = before;
      for (let i = 0; i < 50 && row.lv_attr[5] !== 'o'; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        row = await lvRow(vgName, qName);
      }
      expect(row.lv_attr[5]).toBe('o');
      const refused = await lvstamp(['quarantine', 'restore', name, '--vg', vgName], 1);
      expect(refused.stdout).toBe('');
      const lines = refused.stderr.trim().split('\n');
      expect(lines.at(-1)).toMatch(
        new RegExp(
          `^lvstamp: ${vgName}/${qName} is open \\(.*\\); not restored, nothing was changed: close it first$`,
        ),
      );
      const after = await lvRow(vgName, qName);
      expect([after.lv_uuid, after.lv_tags]).toEqual([before.lv_uuid, before.lv_tags]);
      expect(after.lv_tags).toContain('lvstamp.quarantined=');
    } finally {
      holder.kill('SIGKILL');
      await holder;
    }
    // Closed again, the same restore goes ahead.
    await lvstamp(['quarantine', 'restore', name, '--vg', vgName]);
    expect(await lvNames(vgName)).toEqual([`lvstamp_${id}`]);
    await csi.ok('Controller', 'DeleteVolume', { volume_id: id });
    expect(await lvNames(vgName)).toEqual([]);
  });
});
