// Node states lvm gets into on real nodes (docs/LVM-CONFIG.md), each built as the failure it
// prevents, through the built driver on real lvm2:
// - a tenant's volume group inside a data device (same VG name, an lvstamp_<id> LV) is invisible
//   and blocks neither create, unstage nor delete; the shipped ConfigMap's lvm.conf also hides it
//   behind a loop device (kubelet's block-volume loop);
// - a PV removed from a two-PV group, and the same loop file attached twice: GetCapacity 0,
//   CreateVolume RESOURCE_EXHAUSTED with lvm's message, Probe ready; healthy again once repaired;
// - a PV in no group beside the test group changes nothing (lvm reports it as an object of its own);
// - a PV the kernel holds read-only: DeleteVolume and a wiping CLI delete refused before any act;
// - a suspended device: DEADLINE_EXCEEDED naming it, and the next operation proceeds.
import { mkdtemp, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { status } from '@grpc/grpc-js';
import { execa } from 'execa';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  REPO_ROOT,
  cleanups,
  createLoopVg,
  installCleanupHooks,
  sh,
  shOk,
  type LoopVg,
} from '../harness/index.js';
import {
  MiB,
  GiB,
  blockCapability,
  driverDir,
  idOf,
  mountCapability,
  startDriver,
  unique,
  type CsiClient,
  type RunningDriver,
  type VolumeMsg,
} from './support.js';
import { cli } from '../scenarios/support.js';

installCleanupHooks();

const OWNER_ID = randomBytes(16).toString('hex');
/** The VM's lvm.conf with only the data device in view: how a tenant makes its own VG. */
const ONLY_DATA_DEVICES = 'devices/global_filter=["a|^/dev/mapper/lvstamp-|","r|.*|"]';

let vg: LoopVg;
let driver: RunningDriver;
let csi: CsiClient;
let dir: string;

beforeAll(async () => {
  vg = await createLoopVg({ sizeBytes: 2 * GiB });
  dir = await driverDir();
  driver = await startDriver({ dir, vgName: vg.vgName, ownerId: OWNER_ID });
  csi = driver.client;
});

async function create(name: string, capability = blockCapability()): Promise<VolumeMsg> {
  const response = await csi.ok<{ volume: VolumeMsg }>('Controller', 'CreateVolume', {
    name,
    capacity_range: { required_bytes: String(64 * MiB) },
    volume_capabilities: [capability],
  });
  return response.volume;
}

async function capacityBytes(): Promise<string> {
  const response = await csi.ok<{ available_capacity: string }>('Controller', 'GetCapacity', {});
  return response.available_capacity;
}

async function probeReady(): Promise<boolean> {
  const response = await csi.ok<{ ready: { value: boolean } | null }>('Identity', 'Probe');
  return response.ready?.value === true;
}

async function openCount(mapName: string): Promise<number> {
  const out = await shOk(['dmsetup', 'info', '-c', '--noheadings', '-o', 'open', mapName]);
  return Number(out.stdout.trim());
}

/** The `lvm.conf: |` block of deploy/kubernetes/configmap-lvm.yaml, unindented. */
async function shippedLvmConf(): Promise<string> {
  const yaml = await readFile(`${REPO_ROOT}deploy/kubernetes/configmap-lvm.yaml`, 'utf8');
  const lines = yaml.split('\n');
  const start = lines.findIndex((line) => /^\s+lvm\.conf: \|$/.test(line));
  expect(start).toBeGreaterThan(0);
  const body = lines.slice(start + 1);
  const end = body.findIndex((line) => line.trim() !== '' && !line.startsWith('    '));
  return (end === -1 ? body : body.slice(0, end)).map((line) => line.slice(4)).join('\n');
}

/** Runs an lvm command that reads the ConfigMap's lvm.conf (LVM_SYSTEM_DIR, lvm(8)). */
async function withShippedLvmConf(
  argv: string[],
): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  const systemDir = await mkdtemp(join(tmpdir(), 'lvse2e-lvmconf-'));
  try {
    await writeFile(join(systemDir, 'lvm.conf'), await shippedLvmConf());
    const [program = 'lvm', ...args] = argv;
    const result = await execa(program, args, {
      reject: false,
      stdin: 'ignore',
      timeout: 120_000,
      env: { LC_ALL: 'C', LVM_SUPPRESS_FD_WARNINGS: '1', LVM_SYSTEM_DIR: systemDir },
    });
    return { exitCode: result.exitCode ?? -1, stdout: result.stdout, stderr: result.stderr };
  } finally {
    await rm(systemDir, { recursive: true, force: true });
  }
}

describe("a tenant's volume group inside a data device", () => {
  it('is invisible, never activated, and blocks neither create, unstage nor delete', async () => {
    const a = await create(unique('tenant-holder'));
    const staging = join(dir, 'staging', a.volume_id);
    await csi.ok('Node', 'NodeStageVolume', {
      volume_id: a.volume_id,
      staging_target_path: staging,
      volume_capability: blockCapability(),
    });
    const data = `/dev/mapper/lvstamp-${a.volume_id}`;
    // The tenant's own LVM, with our VG's name and an lvstamp_<id> LV. vgcreate refuses a name
    // whose /dev/<vg> directory exists: ours is moved aside for the moment.
    const tenantLv = `lvstamp_${idOf(unique('tenant-lv'))}`;
    await shOk(['mv', `/dev/${vg.vgName}`, `/dev/${vg.vgName}.ours`]);
    try {
      await shOk(['pvcreate', '-y', '--config', ONLY_DATA_DEVICES, data]);
      await shOk(['vgcreate', '--config', ONLY_DATA_DEVICES, vg.vgName, data]);
      await shOk([
        'lvcreate',
        '--config',
        ONLY_DATA_DEVICES,
        '-an',
        '-Zn',
        '-n',
        tenantLv,
        '-L',
        '8m',
        vg.vgName,
      ]);
    } finally {
      await sh(['rm', '-rf', `/dev/${vg.vgName}`]);
      await shOk(['mv', `/dev/${vg.vgName}.ours`, `/dev/${vg.vgName}`]);
    }

    // lvm sees one group of that name, ours, and no PV on a data device.
    const pvs = await shOk(['pvs', '--noheadings', '-o', 'pv_name']);
    expect(pvs.stdout).not.toContain('/dev/mapper/lvstamp-');
    const vgs = await shOk(['vgs', '--noheadings', '-o', 'vg_uuid', vg.vgName]);
    expect(vgs.stdout.trim().split('\n')).toHaveLength(1);
    expect(vgs.stderr).not.toMatch(/VG name .* is used by VGs/);
    // Autoactivation (what a node's udev rules run) leaves the data device closed.
    await shOk(['vgchange', '-aay']);
    expect(await openCount(`lvstamp-${a.volume_id}`)).toBe(0);

    // Behind a loop device (kubelet's, for a pod's block volume) the tenant's PV shows again under
    // a name no static pattern tells from a loop-backed group's: the node plugin's shipped
    // lvm.conf rejects every loop device, so it sees no PV at all here (this VM's groups are
    // loop-backed).
    const loop = (await shOk(['losetup', '-f', '--show', data])).stdout.trim();
    try {
      const shipped = await withShippedLvmConf(['pvs', '--noheadings', '-o', 'pv_name,vg_name']);
      expect(shipped.exitCode, shipped.stderr).toBe(0);
      expect(shipped.stdout.trim()).toBe('');
    } finally {
      await shOk(['losetup', '-d', loop]);
    }

    // Everything else goes on.
    const b = await create(unique('next'), mountCapability());
    const listed = await csi.ok<{ entries: { volume: VolumeMsg }[] }>(
      'Controller',
      'ListVolumes',
      {},
    );
    expect(listed.entries.map((e) => e.volume.volume_id).sort()).toEqual(
      [a.volume_id, b.volume_id].sort(),
    );
    expect(Number(await capacityBytes())).toBeGreaterThan(0);
    await csi.ok('Node', 'NodeUnstageVolume', {
      volume_id: a.volume_id,
      staging_target_path: staging,
    });
    expect((await sh(['dmsetup', 'info', `lvstamp-${a.volume_id}`])).exitCode).not.toBe(0);
    await csi.ok('Controller', 'DeleteVolume', { volume_id: a.volume_id });
    await csi.ok('Controller', 'DeleteVolume', { volume_id: b.volume_id });
    const left = await shOk(['lvs', '--noheadings', '-o', 'lv_name', vg.vgName]);
    expect(left.stdout.trim()).toBe('');
  });
});

describe('a broken volume group', () => {
  /** A second 256 MiB PV in the group; undone (vgreduce, pvremove, detach) after the test. */
  async function addSecondPv(): Promise<{ file: string; loop: () => Promise<string> }> {
    const file = join(vg.dir, 'pv2.img');
    await writeFile(file, '');
    await truncate(file, 256 * MiB);
    const loop = (await shOk(['losetup', '-f', '--show', file])).stdout.trim();
    cleanups.add(`remove the second PV of ${vg.vgName}`, async () => {
      const attached = (await shOk(['losetup', '-j', file, '-O', 'NAME', '-n'])).stdout.trim();
      const device =
        attached === '' ? (await shOk(['losetup', '-f', '--show', file])).stdout.trim() : attached;
      await sh(['vgreduce', vg.vgName, device]);
      await sh(['pvremove', '-y', device]);
      await shOk(['losetup', '-d', device]);
      await rm(file, { force: true });
    });
    await shOk(['pvcreate', '-y', loop]);
    await shOk(['vgextend', vg.vgName, loop]);
    return {
      file,
      loop: async () => (await shOk(['losetup', '-j', file, '-O', 'NAME', '-n'])).stdout.trim(),
    };
  }

  it('a PV removed from a two-PV group: capacity 0, CreateVolume RESOURCE_EXHAUSTED, Probe ready', async () => {
    const second = await addSecondPv();
    const healthy = await capacityBytes();
    expect(Number(healthy)).toBeGreaterThan(0);
    await shOk(['losetup', '-d', await second.loop()]);

    expect(await capacityBytes()).toBe('0');
    const failure = await csi.fails(status.RESOURCE_EXHAUSTED, 'Controller', 'CreateVolume', {
      name: unique('on-broken'),
      capacity_range: { required_bytes: String(16 * MiB) },
      volume_capabilities: [mountCapability()],
    });
    expect(failure.details).toContain(`volume group ${vg.vgName} is unusable (missing-pv)`);
    expect(failure.details).toMatch(/VG \S+ is missing PV/);
    expect(await probeReady()).toBe(true);
    expect(driver.output()).toContain('volume group unusable');

    // Repaired (the disk is back): capacity and creates return.
    await shOk(['losetup', '-f', '--show', second.file]);
    expect(await capacityBytes()).toBe(healthy);
    const v = await create(unique('after-repair'));
    await csi.ok('Controller', 'DeleteVolume', { volume_id: v.volume_id });
  });

  it('the same loop file attached twice: capacity 0, CreateVolume and DeleteVolume RESOURCE_EXHAUSTED and resize refused before any act, Probe ready', async () => {
    const kept = await create(unique('kept-on-duplicate'));
    const healthy = await capacityBytes();
    const keptLv = `${vg.vgName}/lvstamp_${kept.volume_id}`;
    const twice = (await shOk(['losetup', '-f', '--show', vg.file])).stdout.trim();
    try {
      // DeleteVolume checks the group first: the LV is neither deactivated nor removed.
      const refused = await csi.fails(status.RESOURCE_EXHAUSTED, 'Controller', 'DeleteVolume', {
        volume_id: kept.volume_id,
      });
      expect(refused.details).toContain(`volume group ${vg.vgName} is unusable (duplicate-pv)`);
      expect(refused.details).toMatch(/Not using device \S+ for PV/);
      expect((await shOk(['lvs', '--noheadings', '-o', 'lv_active', keptLv])).stdout.trim()).toBe(
        'active',
      );
      // Expansion too (lvstamp expands on the node: the CLI's resize runs the same core call as
      // NodeExpandVolume): the group first, so the LV keeps its size.
      const lvSize = async (): Promise<string> =>
        (
          await shOk(['lvs', '--noheadings', '--units', 'b', '-o', 'lv_size', keptLv])
        ).stdout.trim();
      const sizeBefore = await lvSize();
      const lock = ['--owner-id', OWNER_ID, '--lock-file', join(dir, 'host.lock')];
      const resize = await cli(
        [...lock, 'resize', kept.volume_id, '--size', '128Mi', '--vg', vg.vgName],
        1,
      );
      expect(resize.stderr).toContain(`volume group ${vg.vgName} is unusable (duplicate-pv)`);
      expect(resize.stderr).toMatch(/Not using device \S+ for PV/);
      expect(await lvSize()).toBe(sizeBefore);
      expect(await capacityBytes()).toBe('0');
      const failure = await csi.fails(status.RESOURCE_EXHAUSTED, 'Controller', 'CreateVolume', {
        name: unique('on-duplicate'),
        capacity_range: { required_bytes: String(16 * MiB) },
        volume_capabilities: [mountCapability()],
      });
      expect(failure.details).toContain(`volume group ${vg.vgName} is unusable (duplicate-pv)`);
      expect(failure.details).toMatch(/Not using device \S+ for PV/);
      expect(await probeReady()).toBe(true);
    } finally {
      await shOk(['losetup', '-d', twice]);
    }
    expect(await capacityBytes()).toBe(healthy);
    await csi.ok('Controller', 'DeleteVolume', { volume_id: kept.volume_id });
  });
});

describe('a PV in no volume group on the node (pvcreate, or left by a vgremove)', () => {
  it('changes nothing: CreateVolume, ListVolumes and DeleteVolume work beside it', async () => {
    const file = join(vg.dir, 'orphan.img');
    await writeFile(file, '');
    await truncate(file, 64 * MiB);
    const loop = (await shOk(['losetup', '-f', '--show', file])).stdout.trim();
    cleanups.add(`remove the orphan PV ${loop}`, async () => {
      await sh(['pvremove', '-y', loop]);
      await sh(['losetup', '-d', loop]);
    });
    await shOk(['pvcreate', '-y', loop]);
    const v = await create(unique('beside-orphan'));
    const listed = await csi.ok<{ entries: { volume: VolumeMsg }[] }>(
      'Controller',
      'ListVolumes',
      {},
    );
    expect(listed.entries.map((e) => e.volume.volume_id)).toContain(v.volume_id);
    await csi.ok('Controller', 'DeleteVolume', { volume_id: v.volume_id });
    expect((await sh(['lvs', `${vg.vgName}/lvstamp_${v.volume_id}`])).exitCode).not.toBe(0);
  });
});

describe('a PV the kernel holds read-only (blockdev --setro; lvm reports nothing of it)', () => {
  it('DeleteVolume and a wiping CLI delete are refused before any act: the LV stays active, its sector 0 and data untouched; writable again, the delete converges', async () => {
    const kept = await create(unique('kept-on-readonly'));
    const lv = `${vg.vgName}/lvstamp_${kept.volume_id}`;
    const lvPath = `/dev/${lv}`;
    const head = async (): Promise<string> =>
      (await shOk(['sh', '-c', `head -c 1048576 ${lvPath} | sha256sum`])).stdout;
    const active = async (): Promise<string> =>
      (await shOk(['lvs', '--noheadings', '-o', 'lv_active', lv])).stdout.trim();
    const before = await head();
    await shOk(['blockdev', '--setro', vg.loopDevice]);
    cleanups.add(`make ${vg.loopDevice} writable again`, async () => {
      await sh(['blockdev', '--setrw', vg.loopDevice]);
    });
    try {
      const expected = `volume group ${vg.vgName} is unusable (read-only): the kernel holds PV ${vg.loopDevice}`;
      const refused = await csi.fails(status.RESOURCE_EXHAUSTED, 'Controller', 'DeleteVolume', {
        volume_id: kept.volume_id,
      });
      expect(refused.details).toContain(expected);
      // The CLI's delete wipes by default (discard); the group is refused before the wipe.
      const lock = ['--owner-id', OWNER_ID, '--lock-file', join(dir, 'host.lock')];
      const deleted = await cli(
        [...lock, 'delete', kept.volume_id, '--vg', vg.vgName, '--wipe', 'zero'],
        1,
      );
      const errors = deleted.stderr.split('\n').filter((line) => line.startsWith('lvstamp: '));
      expect(errors, deleted.stderr).toHaveLength(1);
      expect(errors[0]).toContain(expected);
      expect(deleted.stderr).not.toMatch(/^\s+at /m);
      expect(await active()).toBe('active');
      expect(await head()).toBe(before);
    } finally {
      await shOk(['blockdev', '--setrw', vg.loopDevice]);
    }
    await csi.ok('Controller', 'DeleteVolume', { volume_id: kept.volume_id });
    expect((await sh(['lvs', lv])).exitCode).not.toBe(0);
  });
});

describe('a device that does not answer', () => {
  it('an LV over a suspended device: DEADLINE_EXCEEDED naming it, and the next operation proceeds', async () => {
    const name = unique('hung');
    const v = await create(name);
    const lvPath = (
      await shOk(['lvs', '--noheadings', '-o', 'lv_dm_path', `${vg.vgName}/lvstamp_${v.volume_id}`])
    ).stdout.trim();
    const lvMap = lvPath.replace('/dev/mapper/', '');
    // A hung disk under an active LV: the LV's table is pointed at a map over the same extents
    // (named lvstamp-*, so lvm's filter keeps lvm itself off it), and that map is suspended. lvm
    // still reports the LV active; every read of it blocks in the kernel until resume.
    const original = (await shOk(['dmsetup', 'table', lvMap])).stdout.trim();
    const [, length, , lower, offset] = original.split(/\s+/);
    const hang = `lvstamp-hang-${randomBytes(4).toString('hex')}`;
    cleanups.add(`undo the hung device under ${lvMap}`, async () => {
      await sh(['dmsetup', 'resume', '--noudevsync', hang]);
      await sh(['dmsetup', 'reload', lvMap, '--table', original]);
      await sh(['dmsetup', 'resume', '--noudevsync', lvMap]);
      await sh(['dmsetup', 'remove', '--noudevsync', hang]);
      await sh(['rm', '-f', `/dev/mapper/${hang}`]);
    });
    await shOk([
      'dmsetup',
      'create',
      '--noudevsync',
      hang,
      '--table',
      `0 ${length} linear ${lower} ${offset}`,
    ]);
    await shOk(['dmsetup', 'mknodes', hang]);
    const [major, minor] = (
      await shOk([
        'dmsetup',
        'info',
        '-c',
        '--noheadings',
        '-o',
        'major,minor',
        '--separator',
        ':',
        hang,
      ])
    ).stdout
      .trim()
      .split(':');
    await shOk(['dmsetup', 'reload', lvMap, '--table', `0 ${length} linear ${major}:${minor} 0`]);
    await shOk(['dmsetup', 'resume', '--noudevsync', lvMap]);
    await shOk(['dmsetup', 'suspend', '--noudevsync', hang]);

    const request = {
      name,
      capacity_range: { required_bytes: String(64 * MiB) },
      volume_capabilities: [blockCapability()],
    };
    try {
      // The same name again: the create reads the existing LV's header, which never comes.
      const started = Date.now();
      const failure = await csi.fails(
        status.DEADLINE_EXCEEDED,
        'Controller',
        'CreateVolume',
        request,
      );
      expect(failure.details).toContain(`read of ${lvPath} did not finish within`);
      console.log(
        `[csi-e2e] DEADLINE_EXCEEDED after ${Date.now() - started} ms: ${failure.details}`,
      );
      // No stuck call holds the host lock: another volume is created and deleted now.
      const other = await create(unique('meanwhile'));
      await csi.ok('Controller', 'DeleteVolume', { volume_id: other.volume_id });
      expect(await probeReady()).toBe(true);
    } finally {
      await shOk(['dmsetup', 'resume', '--noudevsync', hang]);
    }
    // The disk answers again: the same create converges to the same volume.
    await expect
      .poll(async () => (await csi.outcome('Controller', 'CreateVolume', request)).code, {
        timeout: 120_000,
        interval: 2_000,
      })
      .toBe(status.OK);
    await shOk(['dmsetup', 'reload', lvMap, '--table', original]);
    await shOk(['dmsetup', 'resume', '--noudevsync', lvMap]);
    await shOk(['dmsetup', 'remove', '--noudevsync', hang]);
    await sh(['rm', '-f', `/dev/mapper/${hang}`]);
    await csi.ok('Controller', 'DeleteVolume', { volume_id: v.volume_id });
  });
});
