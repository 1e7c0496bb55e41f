// Ownership before every act, and inactive LVs (DESIGN.md §2.3, §5, §6), on real lvm2 with the
// built driver and CLI, without an lvm device filter: (a) a tenant's volume group nested in a
// block volume (LVs named lvstamp_<id> with our tags) and a second volume group with the SAME
// name as ours are never listed, activated or removed; (b) an LV with the lvstamp name but
// without tags or header is refused by DeleteVolume and `lvstamp delete`, bytes untouched, until
// the operator's --force-unowned; (c) after `vgchange -an` of our group, a create retry,
// NodeStage, expansion, GC and a delete with a wipe each activate what they need and work.
import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  adoptLoopVg,
  cleanups,
  createLoopVg,
  createTempDir,
  installCleanupHooks,
  newTestVgName,
  sh,
  shOk,
} from '../harness/index.js';
import { cli } from '../scenarios/support.js';
import {
  MiB,
  blockCapability,
  driverDir,
  idOf,
  startDriver,
  unique,
  type CsiClient,
  type VolumeMsg,
} from './support.js';

installCleanupHooks();

const OWNER_ID = randomBytes(16).toString('hex');
const LONG = 600_000;
/** The test VM's lvm configuration; its global_filter hides lvstamp data devices (docs/LVM-CONFIG.md). */
const LVMLOCAL = '/etc/lvm/lvmlocal.conf';

let vgName = '';
let dir = '';
let csi: CsiClient;

beforeAll(async () => {
  // lvstamp must be safe without the device filter too: this file runs with it taken out (the
  // VM's root is a throwaway overlay; the original is put back after the file).
  const original = await readFile(LVMLOCAL, 'utf8');
  cleanups.add('restore lvmlocal.conf', () => writeFile(LVMLOCAL, original));
  await writeFile(
    LVMLOCAL,
    original
      .split('\n')
      .filter((line) => !line.includes('global_filter'))
      .join('\n'),
  );
  const vg = await createLoopVg({ sizeBytes: 512 * MiB });
  vgName = vg.vgName;
  dir = await driverDir();
  csi = (await startDriver({ dir, vgName, ownerId: OWNER_ID })).client;
}, LONG);

interface LvRow {
  readonly vg_name: string;
  readonly vg_uuid: string;
  readonly lv_name: string;
  readonly lv_attr: string;
  readonly lv_dm_path: string;
}

/** Every LV lvm sees that matches `selection`, from every volume group (the test's own view). */
async function lvsWhere(selection: string): Promise<LvRow[]> {
  const out = await shOk([
    'lvs',
    '--reportformat',
    'json',
    '-o',
    'vg_name,vg_uuid,lv_name,lv_attr,lv_dm_path',
    '-S',
    selection,
  ]);
  return (JSON.parse(out.stdout) as { report: [{ lv: LvRow[] }] }).report[0].lv;
}

const isActive = (row: LvRow): boolean => row.lv_attr[4] === 'a';

async function create(name: string, bytes = 16 * MiB): Promise<VolumeMsg> {
  const response = await csi.ok<{ volume: VolumeMsg }>('Controller', 'CreateVolume', {
    name,
    capacity_range: { required_bytes: String(bytes) },
    volume_capabilities: [blockCapability()],
  });
  return response.volume;
}

/** `lvstamp --owner-id <ours> ...args`, asserting the exit code. */
function lvstamp(args: readonly string[], exitCode: number) {
  return cli(['--owner-id', OWNER_ID, '--lock-file', join(dir, 'host.lock'), ...args], exitCode, {
    timeoutMs: LONG,
  });
}

async function readBytes(path: string, length: number): Promise<Buffer> {
  const handle = await open(path, 'r');
  try {
    const buffer = Buffer.alloc(length);
    await handle.read(buffer, 0, length, 0);
    return buffer;
  } finally {
    await handle.close();
  }
}

describe('(b) an LV with the lvstamp name but not provably ours', () => {
  it(
    'DeleteVolume is FAILED_PRECONDITION and lvstamp delete exits 1, the LV and its bytes stay; --force-unowned removes it',
    async () => {
      const id = idOf(unique('not-ours'));
      const lv = `lvstamp_${id}`;
      await shOk(['lvcreate', '-y', '-n', lv, '-L', '8m', vgName]);
      const [row] = await lvsWhere(`vg_name="${vgName}" && lv_name="${lv}"`);
      if (row === undefined) throw new Error(`${lv} was not created`);
      const bytes = randomBytes(4096);
      const handle = await open(row.lv_dm_path, 'r+');
      await handle.write(bytes, 0, bytes.length, 0);
      await handle.close();

      const untagged = await csi.fails(status.FAILED_PRECONDITION, 'Controller', 'DeleteVolume', {
        volume_id: id,
      });
      expect(untagged.details).toBe(
        `${vgName}/${lv} is not provably this installation's volume: refusing to delete: it lacks the tag lvstamp (tags: none); left untouched`,
      );
      const refused = await lvstamp(['delete', id, '--vg', vgName], 1);
      expect(refused.stderr.split('\n').filter((l) => l.startsWith('lvstamp: '))).toEqual([
        `lvstamp: ${vgName}/${lv} is not provably this installation's volume: refusing to delete: it lacks the tag lvstamp (tags: none); left untouched (lvstamp delete --force-unowned skips these checks)`,
      ]);

      // The tags alone are not enough: the header must be there too.
      await shOk([
        'lvchange',
        '--addtag',
        'lvstamp',
        '--addtag',
        `lvstamp.owner=${OWNER_ID}`,
        `${vgName}/${lv}`,
      ]);
      const headerless = await csi.fails(status.FAILED_PRECONDITION, 'Controller', 'DeleteVolume', {
        volume_id: id,
      });
      expect(headerless.details).toBe(
        `${vgName}/${lv} is not provably this installation's volume: refusing to delete: its header is not-stamped; left untouched`,
      );
      expect(await lvsWhere(`vg_name="${vgName}" && lv_name="${lv}"`)).toHaveLength(1);
      expect((await readBytes(row.lv_dm_path, 4096)).equals(bytes)).toBe(true);

      const forced = await lvstamp(['delete', id, '--vg', vgName, '--force-unowned'], 0);
      expect(forced.stdout).toBe(
        `deleted ${id} (--force-unowned: not checked: the lvstamp tag, the owner tag lvstamp.owner=<owner ID> and the sector-0 header (valid, with the volume ID of the name and this owner))`,
      );
      expect(await lvsWhere(`vg_name="${vgName}" && lv_name="${lv}"`)).toEqual([]);
    },
    LONG,
  );
});

describe('(b3) a volume of another installation is never attached', () => {
  it(
    'lvstamp attach and NodeStageVolume refuse a volume of another owner (tags or header), and make no map',
    async () => {
      const other = randomBytes(16).toString('hex');
      const name = unique('theirs');
      const id = idOf(name);
      const lockFile = join(dir, 'host.lock');
      await cli(
        [
          '--owner-id',
          other,
          '--lock-file',
          lockFile,
          'create',
          name,
          '--size',
          '8Mi',
          '--vg',
          vgName,
        ],
        0,
        { timeoutMs: LONG },
      );
      const where = `${vgName}/lvstamp_${id}`;

      const refused = await lvstamp(['attach', id, '--vg', vgName], 1);
      expect(refused.stderr.split('\n').filter((l) => l.startsWith('lvstamp: '))).toEqual([
        `lvstamp: ${where} is not provably this installation's volume: refusing to attach: it lacks the owner tag lvstamp.owner=${OWNER_ID} (tags: lvstamp,lvstamp.owner=${other}); left untouched`,
      ]);
      await mkdir(join(dir, 'stage-theirs'), { recursive: true });
      const stage = await csi.fails(status.FAILED_PRECONDITION, 'Node', 'NodeStageVolume', {
        volume_id: id,
        staging_target_path: join(dir, 'stage-theirs'),
        volume_capability: blockCapability(),
      });
      expect(stage.details).toContain(`${where} is not provably this installation's volume`);

      // our tags, their header (a disk moved between installations): the header decides
      await shOk([
        'lvchange',
        '--deltag',
        `lvstamp.owner=${other}`,
        '--addtag',
        `lvstamp.owner=${OWNER_ID}`,
        where,
      ]);
      const headerRefused = await lvstamp(['attach', id, '--vg', vgName], 1);
      expect(headerRefused.stderr).toContain(
        `${where} is not provably this installation's volume: refusing to attach: its header names owner ${other}, not ${OWNER_ID}`,
      );
      expect((await sh(['dmsetup', 'info', `lvstamp-${id}`])).exitCode).not.toBe(0);
      await cli(
        [
          '--owner-id',
          other,
          '--lock-file',
          lockFile,
          'delete',
          id,
          '--vg',
          vgName,
          '--force-unowned',
        ],
        0,
        { timeoutMs: LONG },
      );
    },
    LONG,
  );
});

describe('(b2) a copy of a volume in a second volume group (a cloned or moved disk)', () => {
  it(
    'lvstamp delete without --vg refuses it as every other command does, and removes neither LV',
    async () => {
      const name = unique('pvc-copied');
      const origin = await create(name);
      const lv = `lvstamp_${origin.volume_id}`;
      const [row] = await lvsWhere(`vg_name="${vgName}" && lv_name="${lv}"`);
      if (row === undefined) throw new Error(`${lv} was not created`);

      // The copy: the same LV name, both tags and the same first MiB, in another group.
      const other = await createLoopVg({ sizeBytes: 128 * MiB });
      await shOk([
        'lvcreate',
        '-y',
        '-n',
        lv,
        '-L',
        '20m',
        '--addtag',
        'lvstamp',
        '--addtag',
        `lvstamp.owner=${OWNER_ID}`,
        other.vgName,
      ]);
      const [copy] = await lvsWhere(`vg_name="${other.vgName}" && lv_name="${lv}"`);
      if (copy === undefined) throw new Error(`the copy of ${lv} was not created`);
      const head = await readBytes(row.lv_dm_path, MiB);
      const handle = await open(copy.lv_dm_path, 'r+');
      await handle.write(head, 0, head.length, 0);
      await handle.sync();
      await handle.close();

      const refused = await lvstamp(['delete', name], 1);
      expect(refused.stderr).toContain(
        `volume ${origin.volume_id} exists in several volume groups`,
      );
      expect(refused.stderr).toContain(vgName);
      expect(refused.stderr).toContain(other.vgName);
      expect(await lvsWhere(`lv_name="${lv}"`)).toHaveLength(2);

      // Named with --vg, the one volume group decides: ours goes, the copy stays.
      await lvstamp(['delete', name, '--vg', vgName], 0);
      expect((await lvsWhere(`lv_name="${lv}"`)).map((r) => r.vg_name)).toEqual([other.vgName]);
    },
    LONG,
  );
});

describe('(c) after vgchange -an of our volume group', () => {
  it(
    'a create retry, NodeStage, expansion, GC, DeleteVolume and a delete with a wipe each activate what they need',
    async () => {
      const name = unique('pvc-inactive');
      const id = idOf(name);
      const lv = `lvstamp_${id}`;
      const ours = `vg_name="${vgName}" && lv_name="${lv}"`;
      const deactivate = async () => {
        await shOk(['vgchange', '-an', vgName]);
        expect((await lvsWhere(ours)).map(isActive)).toEqual([false]);
      };
      const first = await create(name);

      await deactivate();
      expect(await create(name)).toEqual(first); // the retry adopts it
      expect((await lvsWhere(ours)).map(isActive)).toEqual([true]);

      await deactivate();
      const staging = join(dir, 'staging-inactive');
      await csi.ok('Node', 'NodeStageVolume', {
        volume_id: id,
        staging_target_path: staging,
        volume_capability: blockCapability(),
      });
      expect((await sh(['dmsetup', 'info', `lvstamp-${id}`])).exitCode).toBe(0);
      await csi.ok('Node', 'NodeUnstageVolume', { volume_id: id, staging_target_path: staging });

      // expansion happens on the node (DESIGN.md §7 "Expansion on the node"): on the device the
      // stage of a deactivated volume made and published
      await deactivate();
      await csi.ok('Node', 'NodeStageVolume', {
        volume_id: id,
        staging_target_path: staging,
        volume_capability: blockCapability(),
      });
      const target = join(dir, 'pods', id, 'volume');
      await mkdir(join(dir, 'pods', id), { recursive: true });
      await csi.ok('Node', 'NodePublishVolume', {
        volume_id: id,
        staging_target_path: staging,
        target_path: target,
        volume_capability: blockCapability(),
        readonly: false,
      });
      const grown = await csi.ok<{ capacity_bytes: string }>('Node', 'NodeExpandVolume', {
        volume_id: id,
        volume_path: target,
        capacity_range: { required_bytes: String(32 * MiB) },
        volume_capability: blockCapability(),
      });
      expect(grown.capacity_bytes).toBe(String(32 * MiB));
      expect((await shOk(['blockdev', '--getsize64', target])).stdout.trim()).toBe(
        String(32 * MiB),
      );
      await csi.ok('Node', 'NodeUnpublishVolume', { volume_id: id, target_path: target });
      await csi.ok('Node', 'NodeUnstageVolume', { volume_id: id, staging_target_path: staging });

      await deactivate();
      const live = join(await createTempDir(), 'live');
      await writeFile(live, `${name}\n`);
      const gc = JSON.parse(
        (
          await lvstamp(
            [
              '--json',
              'gc',
              '--quarantine',
              '0',
              '--vg',
              vgName,
              '--live',
              live,
              '--min-age',
              '1s',
            ],
            0,
          )
        ).stdout,
      ) as {
        volumeGroups: string[];
        activated: string[];
        plan: { entries: { device: string; rule: number; action: string }[] };
      };
      expect(gc.volumeGroups).toEqual([vgName]);
      expect(gc.activated).toEqual([`${vgName}/${lv}`]);
      // Its header was read (active now): kept by rule 2 (live), not rule 1 ("unreadable").
      expect(gc.plan.entries.find((e) => e.device === `${vgName}/${lv}`)).toMatchObject({
        action: 'keep',
        rule: 2,
      });

      const other = unique('pvc-inactive-b');
      await create(other);
      await deactivate();
      await csi.ok('Controller', 'DeleteVolume', { volume_id: idOf(other) });
      expect(await lvsWhere(`lv_name="lvstamp_${idOf(other)}"`)).toEqual([]);

      await deactivate();
      await lvstamp(['delete', name, '--vg', vgName, '--wipe', 'zero'], 0);
      expect(await lvsWhere(ours)).toEqual([]);
    },
    LONG,
  );
});

describe('(a) a tenant volume group, nested or with our name, is never touched', () => {
  it(
    'a VG nested in a block volume, with LVs named lvstamp_<id> and our tags, is not listed, deleted, activated or collected',
    async () => {
      const kept = await create(unique('pvc-kept'));
      const tenantVolume = await create(unique('pvc-tenant'), 64 * MiB);
      const staging = join(dir, 'staging-tenant');
      await csi.ok('Node', 'NodeStageVolume', {
        volume_id: tenantVolume.volume_id,
        staging_target_path: staging,
        volume_capability: blockCapability(),
      });
      const map = `/dev/mapper/lvstamp-${tenantVolume.volume_id}`;
      const tenantVg = `tenant${randomBytes(4).toString('hex')}`;
      // The tenant's LVM inside the volume; lvm sees it (no device filter in this test).
      await shOk(['vgcreate', '--devices', map, tenantVg, map]);
      const victimId = idOf(unique('pvc-victim'));
      for (const victim of [kept.volume_id, victimId]) {
        await shOk([
          ...['lvcreate', '--devices', map, '-an', '-Zn', '-y', '-n', `lvstamp_${victim}`],
          ...['-L', '8m', '--addtag', 'lvstamp', '--addtag', `lvstamp.owner=${OWNER_ID}`],
          tenantVg,
        ]);
      }
      const tenantLvs = `vg_name="${tenantVg}"`;
      expect((await lvsWhere(tenantLvs)).map((r) => [r.lv_name, isActive(r)]).sort()).toEqual(
        [`lvstamp_${kept.volume_id}`, `lvstamp_${victimId}`].sort().map((n) => [n, false]),
      );

      const listed = await csi.ok<{ entries: { volume: VolumeMsg }[] }>(
        'Controller',
        'ListVolumes',
      );
      expect(listed.entries.map((e) => e.volume.volume_id)).not.toContain(victimId);
      const cliList = JSON.parse((await lvstamp(['--json', 'list'], 0)).stdout) as {
        volumeGroups: string[];
        volumes: { vg: string; volumeId: string }[];
      };
      expect(cliList.volumeGroups).toEqual([vgName]); // the nested group is not discovered
      expect(cliList.volumes.every((v) => v.vg === vgName)).toBe(true);

      await csi.ok('Controller', 'DeleteVolume', { volume_id: victimId }); // not ours: "gone"
      const live = join(await createTempDir(), 'live');
      await writeFile(live, `${kept.volume_id}\n${tenantVolume.volume_id}\n`);
      await lvstamp(['gc', '--quarantine', '0', '--live', live, '--min-age', '1s', '--apply'], 0);
      expect((await lvsWhere(tenantLvs)).map((r) => [r.lv_name, isActive(r)]).sort()).toEqual(
        [`lvstamp_${kept.volume_id}`, `lvstamp_${victimId}`].sort().map((n) => [n, false]),
      );

      await csi.ok('Node', 'NodeUnstageVolume', {
        volume_id: tenantVolume.volume_id,
        staging_target_path: staging,
      });
      expect(await lvsWhere(tenantLvs)).toEqual([]); // gone from view with the data device
      await csi.ok('Controller', 'DeleteVolume', { volume_id: kept.volume_id });
      await csi.ok('Controller', 'DeleteVolume', { volume_id: tenantVolume.volume_id });
    },
    LONG,
  );

  it(
    'a second VG with our very name (lvstamp_<id> LVs, our tags): every act refused naming both vg_uuids, nothing removed or activated',
    async () => {
      const ourVolume = await create(unique('pvc-twin'));
      const lv = `lvstamp_${ourVolume.volume_id}`;
      // The twin: a loop device of its own, made under a temporary lvse2e name while only it is
      // visible, then renamed to our name (lvm refuses while /dev/<our VG> exists, so ours is
      // deactivated first).
      const twinDir = await createTempDir();
      const twinFile = join(twinDir, 'twin.img');
      const twinName = newTestVgName();
      adoptLoopVg({ vgName: twinName, file: twinFile });
      const file = await open(twinFile, 'wx');
      await file.truncate(64 * MiB);
      await file.close();
      const loop = (await shOk(['losetup', '-f', '--show', twinFile])).stdout.trim();
      await shOk(['vgcreate', '--devices', loop, twinName, loop]);
      await shOk([
        ...['lvcreate', '--devices', loop, '-an', '-Zn', '-y', '-n', lv, '-L', '8m'],
        ...['--addtag', 'lvstamp', '--addtag', `lvstamp.owner=${OWNER_ID}`, twinName],
      ]);
      const twinUuid = (
        await shOk(['vgs', '--devices', loop, '--noheadings', '-o', 'vg_uuid', twinName])
      ).stdout.trim();
      await shOk(['vgchange', '-an', vgName]);
      // Undo before the VG teardowns (LIFO): give the twin its own name back, by uuid.
      cleanups.add('rename the twin volume group back', async () => {
        await sh(['vgrename', twinUuid, twinName]);
      });
      await shOk(['vgrename', '--devices', loop, twinName, vgName]);

      const both = `vg_name="${vgName}" && lv_name="${lv}"`;
      const rows = await lvsWhere(both);
      expect(rows).toHaveLength(2);
      const ourUuid = rows.map((r) => r.vg_uuid).find((u) => u !== twinUuid) ?? '';
      const duplicate = (details: string) => {
        expect(details).toContain(`lvm sees 2 volume groups named ${vgName}`);
        expect(details).toContain(ourUuid);
        expect(details).toContain(twinUuid);
      };

      duplicate(
        (
          await csi.fails(status.FAILED_PRECONDITION, 'Controller', 'DeleteVolume', {
            volume_id: ourVolume.volume_id,
          })
        ).details,
      );
      duplicate(
        (
          await csi.fails(status.FAILED_PRECONDITION, 'Node', 'NodeStageVolume', {
            volume_id: ourVolume.volume_id,
            staging_target_path: join(dir, 'staging-twin'),
            volume_capability: blockCapability(),
          })
        ).details,
      );
      duplicate((await lvstamp(['list', '--vg', vgName], 1)).stderr);
      // the live set names our volume: were the duplicate ever missed, nothing live would go
      const live = join(dir, 'live-twin.txt');
      await writeFile(live, `${ourVolume.volume_id}\n`);
      duplicate(
        (await lvstamp(['gc', '--quarantine', '0', '--vg', vgName, '--live', live, '--apply'], 1))
          .stderr,
      );
      expect((await lvsWhere(both)).map((r) => [r.vg_uuid, isActive(r)]).sort()).toEqual(
        [
          [ourUuid, false],
          [twinUuid, false],
        ].sort(),
      );

      await shOk(['vgrename', twinUuid, twinName]);
      await shOk(['vgchange', '-ay', vgName]);
      await csi.ok('Controller', 'DeleteVolume', { volume_id: ourVolume.volume_id });
      expect(await lvsWhere(`vg_name="${twinName}"`)).toHaveLength(1);
    },
    LONG,
  );
});
