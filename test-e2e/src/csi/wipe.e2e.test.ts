// The wipe on delete (DESIGN.md §5 "Wipe") on a device without discard: the volume group's loop
// device has discard_max_bytes 0, so the LVs' device-mapper maps have no discard either and a plain
// blkdiscard fails on them (docs/FACTS.md "Wiping"). With the wipe policy of the shipped default
// class (deploy/kubernetes/configmap-driver.yaml), DeleteVolume succeeds at its first call and the
// next volume on the same extents reads none of the old bytes. The control, wipe: none, shows that
// the next volume does sit on the old bytes and would read them.
import { randomBytes } from 'node:crypto';
import { open, readFile, writeFile } from 'node:fs/promises';
import { status } from '@grpc/grpc-js';
import { parseConfig } from '@lvstamp/csi-driver';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT, createLoopVg, installCleanupHooks, sh, shOk } from '../harness/index.js';
import {
  DATA_OFFSET,
  DEVICE_CLASS,
  MiB,
  blockCapability,
  driverDir,
  idOf,
  lvRows,
  startDriver,
  unique,
  type CsiClient,
  type RunningDriver,
} from './support.js';

installCleanupHooks();

const OWNER_ID = randomBytes(16).toString('hex');
/** Capacity of every volume: 16 MiB, an LV of 20 MiB (1 MiB header area, whole 4 MiB extents). */
const CAPACITY = 16 * MiB;
/** What the first tenant writes over its whole data device; no byte of it is zero. */
const PATTERN = Buffer.from('lvstamp-old-tenant-block\n');
/** The driver's warning when the device cannot zero while discarding (core volumes/wipe.ts). */
const FALLBACK = 'the device cannot zero while discarding; writing zeros instead';

/** The wipe policy of the default device class of deploy/kubernetes/configmap-driver.yaml. */
async function shippedDefaultWipe(): Promise<string> {
  const path = `${REPO_ROOT}deploy/kubernetes/configmap-driver.yaml`;
  const configMap = parse(await readFile(path, 'utf8')) as { data: Record<string, string> };
  return parseConfig(configMap.data['config.yaml'] ?? '', path).defaultClass.wipe;
}

async function driverWith(vgName: string, wipe: string): Promise<RunningDriver> {
  const configYaml = `deviceClasses:\n  ${DEVICE_CLASS}: { volumeGroup: ${vgName}, wipe: ${wipe}, default: true }\n`;
  return startDriver({ dir: await driverDir(), vgName, ownerId: OWNER_ID, configYaml });
}

/** Creates a raw block volume of CAPACITY; returns its ID. */
async function create(csi: CsiClient, prefix: string): Promise<string> {
  const name = unique(prefix);
  await csi.ok('Controller', 'CreateVolume', {
    name,
    capacity_range: { required_bytes: String(CAPACITY) },
    volume_capabilities: [blockCapability()],
  });
  return idOf(name);
}

/** Stages the volume, fills its data device with PATTERN (synced), and unstages it. */
async function writePattern(csi: CsiClient, id: string, staging: string): Promise<void> {
  const stage = { volume_id: id, staging_target_path: staging };
  await csi.ok('Node', 'NodeStageVolume', { ...stage, volume_capability: blockCapability() });
  const filled = Buffer.alloc(CAPACITY);
  for (let at = 0; at < CAPACITY; at += PATTERN.length) PATTERN.copy(filled, at);
  const device = await open(`/dev/mapper/lvstamp-${id}`, 'r+');
  try {
    await device.write(filled, 0, CAPACITY, 0);
    await device.sync();
  } finally {
    await device.close();
  }
  await csi.ok('Node', 'NodeUnstageVolume', stage);
}

/** The LV of a volume: its device path, size in bytes and extents (`seg_pe_ranges`). */
async function lvOf(vgName: string, id: string) {
  const row = (await lvRows(vgName)).find((r) => r.lv_name === `lvstamp_${id}`);
  if (row === undefined) throw new Error(`no LV lvstamp_${id} in ${vgName}`);
  const ranges = await shOk([
    'lvs',
    '--noheadings',
    '--segments',
    '-o',
    'seg_pe_ranges',
    `${vgName}/${row.lv_name}`,
  ]);
  return { path: row.lv_dm_path, bytes: Number(row.lv_size), extents: ranges.stdout.trim() };
}

/** Every byte of a block device. */
async function readAll(path: string, bytes: number): Promise<Buffer> {
  const buffer = Buffer.alloc(bytes);
  const device = await open(path, 'r');
  try {
    await device.read(buffer, 0, bytes, 0);
  } finally {
    await device.close();
  }
  return buffer;
}

/** How often PATTERN occurs in `buffer`. */
function occurrences(buffer: Buffer): number {
  let count = 0;
  for (let at = buffer.indexOf(PATTERN); at !== -1; at = buffer.indexOf(PATTERN, at + 1)) count++;
  return count;
}

/** `discard_max_bytes` of the block device at `path` (from its major:minor in sysfs). */
async function discardMaxBytes(path: string): Promise<string> {
  const numbers = (await shOk(['stat', '-L', '-c', '%t %T', path])).stdout.trim().split(' ');
  const [major, minor] = numbers.map((hex) => parseInt(hex, 16));
  return (
    await readFile(
      `/sys/dev/block/${String(major)}:${String(minor)}/queue/discard_max_bytes`,
      'utf8',
    )
  ).trim();
}

describe('the wipe on delete, on a device without discard (DESIGN.md §5 "Wipe")', () => {
  it('with the shipped default policy DeleteVolume succeeds at once and the next volume on the same extents reads no old byte; with none it would', async () => {
    const wipe = await shippedDefaultWipe();
    expect(wipe).toBe('discard');
    const vg = await createLoopVg({ sizeBytes: 32 * MiB });
    // Before any LV exists: device-mapper takes its devices' limits when a map is loaded.
    await writeFile(
      `/sys/block/${vg.loopDevice.replace('/dev/', '')}/queue/discard_max_bytes`,
      '0',
    );

    // The control: wipe none. The next volume sits on the same extents and reads the old bytes
    // between its data area's first and last MiB, which create zeroes (DESIGN.md §5).
    const control = await driverWith(vg.vgName, 'none');
    const first = await create(control.client, 'wipe-control');
    const firstLv = await lvOf(vg.vgName, first);
    await writePattern(control.client, first, `${vg.dir}/staging-control`);
    await control.client.ok('Controller', 'DeleteVolume', { volume_id: first });
    const next = await create(control.client, 'wipe-control-next');
    const nextLv = await lvOf(vg.vgName, next);
    expect(nextLv.extents).toBe(firstLv.extents);
    const leftover = await readAll(nextLv.path, nextLv.bytes);
    expect(occurrences(leftover)).toBeGreaterThan(
      (CAPACITY - 2 * MiB) / PATTERN.length - 2, // all but the zeroed first and last MiB
    );
    await control.client.ok('Controller', 'DeleteVolume', { volume_id: next });
    expect(await control.stop()).toBe(0);

    // The shipped policy on the same device.
    const driver = await driverWith(vg.vgName, wipe);
    const tenant = await create(driver.client, 'wipe-tenant');
    const tenantLv = await lvOf(vg.vgName, tenant);
    expect(tenantLv.extents).toBe(firstLv.extents);
    expect(await discardMaxBytes(tenantLv.path)).toBe('0');
    // What a wipe with plain BLKDISCARD met here: a failure at every DeleteVolume retry.
    const plain = await sh(['blkdiscard', tenantLv.path]);
    expect([plain.exitCode, plain.stderr.trim()]).toEqual([
      1,
      `blkdiscard: ${tenantLv.path}: BLKDISCARD ioctl failed: Operation not supported`,
    ]);
    await writePattern(driver.client, tenant, `${vg.dir}/staging-tenant`);
    expect(occurrences(await readAll(tenantLv.path, tenantLv.bytes))).toBe(
      Math.ceil(CAPACITY / PATTERN.length) - 1, // the last copy is cut at the end
    );
    const deleted = await driver.client.outcome('Controller', 'DeleteVolume', {
      volume_id: tenant,
    });
    expect([status[deleted.code], deleted.details]).toEqual(['OK', '']);
    const warnings = driver
      .output()
      .split('\n')
      .filter((line) => line.includes(FALLBACK))
      .map((line) => JSON.parse(line) as { level: string; device: string; argv: string[] });
    // One per range: past the header first, the header's 4 KiB last (DESIGN.md §5 "Wipe").
    expect(warnings.map((w) => [w.level, w.device, w.argv.slice(0, 6).join(' ')])).toEqual([
      [
        'warn',
        tenantLv.path,
        `fallocate --punch-hole --offset 4096 --length ${tenantLv.bytes - 4096}`,
      ],
      ['warn', tenantLv.path, 'fallocate --punch-hole --offset 0 --length 4096'],
    ]);

    const successor = await create(driver.client, 'wipe-successor');
    const successorLv = await lvOf(vg.vgName, successor);
    expect(successorLv.extents).toBe(firstLv.extents);
    const read = await readAll(successorLv.path, successorLv.bytes);
    expect(occurrences(read)).toBe(0);
    // The data area reads zeros, every byte (the header area holds the new header).
    const dataArea = read.subarray(DATA_OFFSET);
    expect(dataArea.length).toBe(successorLv.bytes - DATA_OFFSET);
    expect(dataArea.findIndex((b) => b !== 0)).toBe(-1);
    await driver.client.ok('Controller', 'DeleteVolume', { volume_id: successor });
    expect(await driver.stop()).toBe(0);
  });
});
