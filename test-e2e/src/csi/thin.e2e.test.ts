// Thin device classes on real lvm2 through the built driver (DESIGN.md §4 "Thin device classes",
// "Thin capacity", §5): a pool created from thinPoolSize by the first CreateVolume, a thin volume
// stamped like a thick one, staged, written, expanded and deleted with its chunks returned to the
// pool; an adopted pool; an LV of the pool's name that is no thin pool; a pool running full:
// CreateVolume RESOURCE_EXHAUSTED, an existing volume's condition abnormal, a writer gets ENOSPC
// at once (the pool is made with --errorwhenfull y), GetCapacity exactly the formula.
import { randomBytes } from 'node:crypto';
import { readFile, statfs, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { beforeAll, describe, expect, it } from 'vitest';
import { createLoopVg, installCleanupHooks, sh, shOk } from '../harness/index.js';
import {
  GiB,
  MiB,
  blockCapability,
  driverDir,
  headerOf,
  mountCapability,
  startDriver,
  unique,
  type CsiClient,
  type VolumeMsg,
} from './support.js';

installCleanupHooks();

const OWNER_ID = randomBytes(16).toString('hex');
let vgName = '';
let dir = '';
let csi: CsiClient;

interface PoolLvRow {
  lv_name: string;
  lv_size: string;
  lv_attr: string;
  lv_permissions: string;
  pool_lv: string;
  data_percent: string;
  metadata_percent: string;
  lv_when_full: string;
  zero: string;
  lv_tags: string;
}

/** The pool and its thin LVs, as lvs reports them. */
async function poolRows(pool: string): Promise<{ pool: PoolLvRow | undefined; thin: PoolLvRow[] }> {
  const out = await shOk([
    'lvs',
    '--reportformat',
    'json',
    '--units',
    'b',
    '--nosuffix',
    '-o',
    'lv_name,lv_size,lv_attr,lv_permissions,pool_lv,data_percent,metadata_percent,lv_when_full,zero,lv_tags',
    '-S',
    `lv_name="${pool}" || pool_lv="${pool}"`,
    vgName,
  ]);
  const rows = (JSON.parse(out.stdout) as { report: { lv: PoolLvRow[] }[] }).report[0]?.lv ?? [];
  return {
    pool: rows.find((r) => r.lv_name === pool),
    thin: rows.filter((r) => r.pool_lv === pool),
  };
}

/** DESIGN.md §4 "Thin capacity", by hand from the lvs fields (4 MiB extents, 1 MiB data offset). */
function expectedCapacity(rows: Awaited<ReturnType<typeof poolRows>>, ratio: number): number {
  const P = Number(rows.pool?.lv_size);
  const [whole, frac] = (rows.pool?.data_percent ?? '').split('.');
  const hundredths = Number(whole) * 100 + Number(frac);
  const U = Math.ceil((P * (hundredths + 1)) / 10000);
  const F = Math.max(0, P - U);
  const V = rows.thin
    .filter((r) => r.lv_permissions === 'writeable')
    .reduce((sum, r) => sum + Number(r.lv_size), 0);
  const B = Math.floor(P * ratio) - V;
  const extent = 4 * MiB;
  const L = Math.max(0, Math.floor(Math.min(B, Math.floor(F * ratio), P) / extent) * extent);
  return Math.max(0, Math.floor((L - MiB) / 4096) * 4096);
}

async function capacityOf(deviceClass: string): Promise<number> {
  const answer = await csi.ok<{
    available_capacity: string;
    maximum_volume_size: { value: string };
  }>('Controller', 'GetCapacity', {
    volume_capabilities: [mountCapability('ext4')],
    parameters: { deviceClass },
  });
  expect(answer.maximum_volume_size.value).toBe(answer.available_capacity);
  return Number(answer.available_capacity);
}

async function create(
  deviceClass: string,
  bytes: number,
  capability: object = mountCapability('ext4'),
): Promise<VolumeMsg> {
  const name = unique('thin');
  const response = await csi.ok<{ volume: VolumeMsg }>('Controller', 'CreateVolume', {
    name,
    capacity_range: { required_bytes: String(bytes) },
    volume_capabilities: [capability],
    parameters: { deviceClass },
  });
  return response.volume;
}

beforeAll(async () => {
  const vg = await createLoopVg({ sizeBytes: 2 * GiB });
  vgName = vg.vgName;
  dir = await driverDir();
  // an adopted pool (lvm defaults: zeroing on) and an LV that is no thin pool
  await shOk(['lvcreate', '--yes', '--type', 'thin-pool', '-L', '128m', '-n', 'adopted', vgName]);
  await shOk(['lvcreate', '--yes', '-L', '8m', '-n', 'plainlv', vgName]);
  const configYaml = `deviceClasses:
  thin: { volumeGroup: ${vgName}, type: thin, thinPool: pool0, thinPoolSize: ${256 * MiB}, overprovisionRatio: 4, wipe: none, default: true }
  adopt: { volumeGroup: ${vgName}, type: thin, thinPool: adopted, overprovisionRatio: 2, wipe: none }
  notapool: { volumeGroup: ${vgName}, type: thin, thinPool: plainlv, overprovisionRatio: 2, wipe: none }
  small: { volumeGroup: ${vgName}, type: thin, thinPool: small, thinPoolSize: ${64 * MiB}, overprovisionRatio: 10, wipe: none }
defaultCapacityBytes: ${16 * MiB}
`;
  csi = (await startDriver({ dir, vgName, ownerId: OWNER_ID, configYaml })).client;
}, 600_000);

describe('thin classes on real lvm2', () => {
  it('creates the pool from thinPoolSize at the first CreateVolume; stamps, stages, writes, expands and deletes a thin volume; lvremove returns its chunks', async () => {
    // absent pool with thinPoolSize: the prospective capacity, P − 1 MiB data offset
    expect((await poolRows('pool0')).pool).toBeUndefined();
    expect(await capacityOf('thin')).toBe(256 * MiB - MiB);

    const volume = await create('thin', 64 * MiB);
    const id = volume.volume_id;
    expect(volume.capacity_bytes).toBe(String(64 * MiB));
    const after = await poolRows('pool0');
    expect(after.pool?.lv_attr.startsWith('t')).toBe(true);
    expect(after.pool?.lv_size).toBe(String(256 * MiB));
    expect(after.pool?.lv_when_full).toBe('error');
    expect(after.pool?.zero).toBe('zero');
    expect(after.pool?.lv_tags).toBe(`lvstamp,lvstamp.owner=${OWNER_ID}`);
    const lv = after.thin.find((r) => r.lv_name === `lvstamp_${id}`);
    expect(lv?.lv_attr.startsWith('V')).toBe(true);
    expect(lv?.lv_size).toBe(String(68 * MiB));
    const header = await headerOf(`/dev/mapper/${vgName}-lvstamp_${id}`);
    expect(header.volumeId).toBe(id);
    expect(header.requestedBytes).toBe(64 * MiB);
    // the header maps one 64 KiB chunk (0.09 % of 68 MiB); clearing the data area's first and
    // last MiB, as a thick create does, would map 2 MiB (2.94 %)
    expect(Number(lv?.data_percent)).toBeLessThan(1);
    expect(await capacityOf('thin')).toBe(expectedCapacity(await poolRows('pool0'), 4));

    const staging = join(dir, 'staging', id);
    await csi.ok('Node', 'NodeStageVolume', {
      volume_id: id,
      staging_target_path: staging,
      volume_capability: mountCapability('ext4'),
    });
    const payload = randomBytes(8 * MiB);
    await writeFile(join(staging, 'data.bin'), payload);
    await shOk(['sync']);
    expect((await readFile(join(staging, 'data.bin'))).equals(payload)).toBe(true);

    // lvstamp expands on the node only (DESIGN.md §7 "Expansion on the node")
    const expand = (bytes: number) => ({
      volume_id: id,
      volume_path: staging,
      capacity_range: { required_bytes: String(bytes) },
      volume_capability: mountCapability('ext4'),
    });
    const grown = await csi.ok<{ capacity_bytes: string }>(
      'Node',
      'NodeExpandVolume',
      expand(128 * MiB),
    );
    expect(grown.capacity_bytes).toBe(String(128 * MiB));
    const grownRows = await poolRows('pool0');
    expect(grownRows.thin.find((r) => r.lv_name === `lvstamp_${id}`)?.lv_size).toBe(
      String(132 * MiB),
    );
    expect((await headerOf(`/dev/mapper/${vgName}-lvstamp_${id}`)).requestedBytes).toBe(128 * MiB);
    expect(
      (await shOk(['blockdev', '--getsize64', `/dev/mapper/lvstamp-${id}`])).stdout.trim(),
    ).toBe(String(128 * MiB));
    expect((await readFile(join(staging, 'data.bin'))).equals(payload)).toBe(true);
    const usedBefore = Number(grownRows.pool?.data_percent);
    // beyond what the pool admits: OUT_OF_RANGE (DESIGN.md §7 "Expansion on the node"), nothing
    // grown: the kubelet marks it infeasible and the user can lower the request
    const refused = await csi.fails(
      status.OUT_OF_RANGE,
      'Node',
      'NodeExpandVolume',
      expand(64 * 1024 * MiB),
    );
    expect(refused.details).toBe(
      `cannot grow here: thin pool ${vgName}/pool0 cannot grow volume ${id} by ${64 * 1024 * MiB + 4 * MiB - 132 * MiB} bytes: a ${64 * 1024 * MiB + 4 * MiB}-byte volume is larger than its ${256 * MiB}-byte thin pool`,
    );
    expect((await poolRows('pool0')).thin.find((r) => r.lv_name === `lvstamp_${id}`)?.lv_size).toBe(
      String(132 * MiB),
    );
    expect((await headerOf(`/dev/mapper/${vgName}-lvstamp_${id}`)).requestedBytes).toBe(128 * MiB);
    // the lowered request then grows it, the mounted ext4 with it
    const lowered = await csi.ok<{ capacity_bytes: string }>(
      'Node',
      'NodeExpandVolume',
      expand(192 * MiB),
    );
    expect(lowered.capacity_bytes).toBe(String(192 * MiB));
    expect((await poolRows('pool0')).thin.find((r) => r.lv_name === `lvstamp_${id}`)?.lv_size).toBe(
      String(196 * MiB),
    );
    expect((await headerOf(`/dev/mapper/${vgName}-lvstamp_${id}`)).requestedBytes).toBe(192 * MiB);
    const fs = await statfs(staging);
    expect(fs.blocks * fs.bsize).toBeGreaterThan(160 * MiB);
    expect((await readFile(join(staging, 'data.bin'))).equals(payload)).toBe(true);

    await csi.ok('Node', 'NodeUnstageVolume', { volume_id: id, staging_target_path: staging });
    await csi.ok('Controller', 'DeleteVolume', { volume_id: id });
    const gone = await poolRows('pool0');
    expect(gone.thin).toEqual([]);
    expect(gone.pool).toBeDefined();
    expect(Number(gone.pool?.data_percent)).toBeLessThan(usedBefore);
    expect(Number(gone.pool?.data_percent)).toBeLessThan(1);
  }, 900_000);

  it('adopts an existing pool, and refuses a class whose pool is an ordinary LV', async () => {
    const rows = await poolRows('adopted');
    expect(await capacityOf('adopt')).toBe(expectedCapacity(rows, 2));
    const volume = await create('adopt', 32 * MiB, blockCapability());
    const lv = (await poolRows('adopted')).thin.find(
      (r) => r.lv_name === `lvstamp_${volume.volume_id}`,
    );
    expect(lv?.lv_attr.startsWith('V')).toBe(true);
    await csi.ok('Controller', 'DeleteVolume', { volume_id: volume.volume_id });
    expect((await poolRows('adopted')).thin).toEqual([]);

    expect(await capacityOf('notapool')).toBe(0);
    const failure = await csi.fails(status.RESOURCE_EXHAUSTED, 'Controller', 'CreateVolume', {
      name: unique('notapool'),
      capacity_range: { required_bytes: String(8 * MiB) },
      volume_capabilities: [blockCapability()],
      parameters: { deviceClass: 'notapool' },
    });
    expect(failure.details).toContain(`thin pool ${vgName}/plainlv is unusable`);
    expect(failure.details).toContain('is not a thin pool');
    // nothing was made in its place
    expect((await poolRows('plainlv')).pool?.lv_attr.startsWith('-')).toBe(true);
  }, 900_000);

  it('a pool running full: a writer gets ENOSPC at once, GetCapacity 0, CreateVolume RESOURCE_EXHAUSTED, an existing volume abnormal', async () => {
    // 64 MiB pool, ratio 10: three 60 MiB volumes (64 MiB LVs) are promised 192 MiB
    const mounted = await create('small', 60 * MiB);
    const raw1 = await create('small', 60 * MiB, blockCapability());
    const raw2 = await create('small', 60 * MiB, blockCapability());
    expect(await capacityOf('small')).toBe(expectedCapacity(await poolRows('small'), 10));
    const staging = join(dir, 'staging', mounted.volume_id);
    await csi.ok('Node', 'NodeStageVolume', {
      volume_id: mounted.volume_id,
      staging_target_path: staging,
      volume_capability: mountCapability('ext4'),
    });
    for (const v of [raw1, raw2]) {
      await csi.ok('Node', 'NodeStageVolume', {
        volume_id: v.volume_id,
        staging_target_path: join(dir, 'staging', v.volume_id),
        volume_capability: blockCapability(),
      });
    }
    const fill = (id: string) =>
      sh(['dd', 'if=/dev/urandom', `of=/dev/mapper/lvstamp-${id}`, 'bs=1M', 'oflag=direct'], {
        timeoutMs: 600_000,
      });
    const first = await fill(raw1.volume_id);
    // 60 MiB of 64: the device end, not the pool
    expect(first.stderr).toContain('No space left on device');
    const started = Date.now();
    const second = await fill(raw2.volume_id);
    expect(second.exitCode).toBe(1);
    expect(second.stderr).toContain('No space left on device');
    // the pool's errorwhenfull: the error comes at once, the writer never blocks for
    // dm-thin's no_space_timeout (60 s)
    expect(Date.now() - started).toBeLessThan(60_000);
    const full = await poolRows('small');
    expect(full.pool?.data_percent).toBe('100.00');

    expect(await capacityOf('small')).toBe(0);
    const failure = await csi.fails(status.RESOURCE_EXHAUSTED, 'Controller', 'CreateVolume', {
      name: unique('full'),
      capacity_range: { required_bytes: String(8 * MiB) },
      volume_capabilities: [blockCapability()],
      parameters: { deviceClass: 'small' },
    });
    expect(failure.details).toContain('out of data space');
    const stats = await csi.ok<{ volume_condition: { abnormal: boolean; message: string } }>(
      'Node',
      'NodeGetVolumeStats',
      { volume_id: mounted.volume_id, volume_path: staging },
    );
    expect(stats.volume_condition).toEqual({
      abnormal: true,
      message: `thin pool ${vgName}/small is out of data space: writes fail`,
    });
    for (const v of [mounted, raw1, raw2]) {
      await csi.ok('Node', 'NodeUnstageVolume', {
        volume_id: v.volume_id,
        staging_target_path: join(dir, 'staging', v.volume_id),
      });
    }
  }, 900_000);
});
