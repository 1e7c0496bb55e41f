// A tenant's LVM inside a block volume through a loop device (DESIGN.md §2.3 "Scope"), on real
// lvm2 with the VM's usual lvm filter (it hides /dev/mapper/lvstamp-*, not loop devices over
// them): kubelet attaches a block volume as `losetup -f --show /dev/mapper/lvstamp-<id>`, and a
// tenant's volume group on that loop device, tagged lvstamp, with an LV `lvstamp_new_<id>`
// carrying our tags, is never listed, collected or chosen for a new volume.
import { createHash, randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  cleanups,
  createLoopVg,
  installCleanupHooks,
  newTestVgName,
  sh,
  shOk,
  type LoopVg,
} from '../harness/index.js';
import { MiB, cli, idOf, lvNames, newOwnerId, readBytes, suffix } from './support.js';

installCleanupHooks();

const LONG = 600_000;
const owner = newOwnerId();
const volumeName = `nested-host-${suffix()}`;
const tenantVg = newTestVgName();
const tenantLv = `lvstamp_new_${randomBytes(16).toString('hex')}`;
const tenantLvPath = `/dev/${tenantVg}/${tenantLv}`;

let vg: LoopVg;
let loopDevice = '';
let firstMiB = '';

const sha = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

/** `lvs` of the tenant's group, as lvm sees it (the test's own view). */
async function tenantLvNames(): Promise<string[]> {
  const out = await shOk(['lvs', '--noheadings', '-o', 'lv_name', tenantVg]);
  return out.stdout
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
}

beforeAll(async () => {
  vg = await createLoopVg({ sizeBytes: 256 * MiB });
  await cli(['--owner-id', owner, 'create', volumeName, '--size', '64Mi', '--vg', vg.vgName], 0);
  const dataDevice = (await cli(['--owner-id', owner, 'attach', volumeName], 0)).stdout.trim();
  expect(dataDevice).toBe(`/dev/mapper/lvstamp-${idOf(volumeName)}`);
  // What kubelet does for a block volume: a loop device over the data device.
  loopDevice = (await shOk(['losetup', '-f', '--show', dataDevice])).stdout.trim();
  // Runs before the node VG's teardown (LIFO): the tenant's LVM off, then the loop device.
  cleanups.add(`remove tenant ${tenantVg} and ${loopDevice}`, async () => {
    await sh(['vgchange', '-an', tenantVg]);
    await sh(['vgremove', '-ff', '-y', tenantVg]);
    await sh(['pvremove', '-ff', '-y', loopDevice]);
    await sh(['losetup', '-d', loopDevice]);
  });
  await shOk(['pvcreate', '-y', loopDevice]);
  await shOk(['vgcreate', '--addtag', 'lvstamp', tenantVg, loopDevice]);
  await shOk([
    ...['lvcreate', '-y', '-n', tenantLv, '-L', '8m'],
    ...['--addtag', 'lvstamp', '--addtag', `lvstamp.owner=${owner}`, tenantVg],
  ]);
  await shOk(['dd', 'if=/dev/urandom', `of=${tenantLvPath}`, 'bs=1M', 'count=1', 'oflag=direct']);
  firstMiB = sha(await readBytes(tenantLvPath, 0, MiB));
  await shOk(['lvchange', '-an', `${tenantVg}/${tenantLv}`]);
}, LONG);

describe('a tenant volume group on a loop device over a data device', () => {
  it(
    'lvstamp list (no --vg) does not discover it',
    async () => {
      const listed = await cli(['--owner-id', owner, '--json', 'list'], 0, { timeoutMs: LONG });
      const json = JSON.parse(listed.stdout) as { volumeGroups: string[] };
      expect(json.volumeGroups).toEqual([vg.vgName]);
      expect(listed.stdout).not.toContain(tenantVg);
      expect(listed.stdout).not.toContain(tenantLv);
    },
    LONG,
  );

  it(
    'lvstamp gc --apply with a live set removes and activates nothing in it: the tenant LV and its first MiB stay',
    async () => {
      const live = join(vg.dir, 'live');
      await writeFile(live, `${volumeName}\n`);
      await cli(
        [
          '--owner-id',
          owner,
          'gc',
          '--quarantine',
          '0',
          '--live',
          live,
          '--min-age',
          '0s',
          '--apply',
        ],
        0,
        {
          timeoutMs: LONG,
        },
      );
      expect(await tenantLvNames()).toEqual([tenantLv]);
      const attr = await shOk(['lvs', '--noheadings', '-o', 'lv_attr', `${tenantVg}/${tenantLv}`]);
      expect(attr.stdout.trim()[4]).toBe('-'); // not activated
      await shOk(['lvchange', '-ay', `${tenantVg}/${tenantLv}`]);
      expect(sha(await readBytes(tenantLvPath, 0, MiB))).toBe(firstMiB);
      await shOk(['lvchange', '-an', `${tenantVg}/${tenantLv}`]);
    },
    LONG,
  );

  it(
    'lvstamp create without --vg refuses when the only tagged group is the tenant one, then lands in the node group once it is tagged',
    async () => {
      const refused = await cli(
        ['--owner-id', owner, 'create', `y-${suffix()}`, '--size', '4Mi'],
        1,
        {
          timeoutMs: LONG,
        },
      );
      expect(refused.stderr).toContain(
        `no volume group tagged "lvstamp" is the node's: ${tenantVg}: `,
      );
      expect(refused.stderr).toContain(
        `${loopDevice} rests on lvstamp data device lvstamp-${idOf(volumeName)}`,
      );
      expect(await tenantLvNames()).toEqual([tenantLv]);

      await shOk(['vgchange', '--addtag', 'lvstamp', vg.vgName]);
      const name = `y-${suffix()}`;
      await cli(['--owner-id', owner, 'create', name, '--size', '4Mi'], 0, { timeoutMs: LONG });
      expect(await lvNames(vg.vgName)).toContain(`lvstamp_${idOf(name)}`);
      expect(await tenantLvNames()).toEqual([tenantLv]);
    },
    LONG,
  );
});
