import { randomBytes } from 'node:crypto';
import { mkdtemp, open, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, sep } from 'node:path';
import { cleanups, type CleanupRegistry } from './cleanup.js';
import { sh, shOk } from './sh.js';

/**
 * Every volume group the harness creates is named `lvse2e` + 8 hex digits.
 * The harness refuses to act on any VG without this prefix.
 */
export const TEST_VG_PREFIX = 'lvse2e';

/** VGs this process created or adopted: the only ones the harness may remove. */
const ownedVgs = new Set<string>();

/** A fresh, unused test VG name: `lvse2e` + 8 random hex digits. */
export function newTestVgName(): string {
  return TEST_VG_PREFIX + randomBytes(4).toString('hex');
}

/**
 * Safety check before any destructive command on a VG.
 * @throws Error when the name lacks the `lvse2e` prefix or this process did not create or adopt it.
 */
export function assertOwnedVg(vgName: string): void {
  if (!vgName.startsWith(TEST_VG_PREFIX) || !ownedVgs.has(vgName)) {
    throw new Error(`refusing to touch volume group "${vgName}": not created by this test process`);
  }
}

/**
 * Creates a temp dir `<tmpdir>/lvse2e-XXXXXX`, removed at cleanup after
 * everything mounted under it is unmounted.
 */
export async function createTempDir(registry: CleanupRegistry = cleanups): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `${TEST_VG_PREFIX}-`));
  registry.add(`remove ${dir}`, async () => {
    await unmountUnder([dir]);
    await rm(dir, { recursive: true, force: true });
  });
  return dir;
}

/** Options of {@link createLoopVg}. */
export interface LoopVgOptions {
  /** Size of the sparse backing file and so of the PV, in bytes. */
  readonly sizeBytes: number;
  /** Physical extent size in bytes (`vgcreate -s`); lvm's default (4 MiB) when absent. */
  readonly extentSize?: number;
  /** Appended to the generated name (e.g. `-a-b`, whose `-` device-mapper doubles). */
  readonly nameSuffix?: string;
}

/** A volume group on one loop device over a sparse file in a temp dir. */
export interface LoopVg {
  readonly vgName: string;
  /** The loop device, e.g. `/dev/loop3`. */
  readonly loopDevice: string;
  /** The backing file. */
  readonly file: string;
  /** The temp dir holding the file; a good place for mount points. */
  readonly dir: string;
  /**
   * Tears the VG down now (see {@link teardownLoopVg}); idempotent. The
   * registry runs it anyway after the test.
   */
  cleanup(): Promise<void>;
}

/**
 * Creates a loop-backed VG with a unique `lvse2e…` name: sparse file, `losetup
 * -f --show`, `pvcreate`, `vgcreate`. Its teardown is registered before the
 * first command runs, so a failure half-way is still undone.
 * @throws Error when a command fails (after registering the teardown).
 */
export async function createLoopVg(
  options: LoopVgOptions,
  registry: CleanupRegistry = cleanups,
): Promise<LoopVg> {
  const dir = await createTempDir(registry);
  const file = join(dir, 'pv.img');
  const vgName = newTestVgName() + (options.nameSuffix ?? '');
  adoptLoopVg({ vgName, file }, registry);
  const handle = await open(file, 'wx');
  await handle.truncate(options.sizeBytes);
  await handle.close();
  const loopDevice = (await shOk(['losetup', '-f', '--show', file])).stdout.trim();
  await shOk(['pvcreate', '-y', loopDevice]);
  const extent = options.extentSize === undefined ? [] : ['-s', `${options.extentSize}b`];
  await shOk(['vgcreate', ...extent, vgName, loopDevice]);
  return { vgName, loopDevice, file, dir, cleanup: () => teardownLoopVg(vgName, file) };
}

/**
 * Takes ownership of a loop-backed VG that something else (the CLI's
 * `vg create NAME --loop FILE`) creates, so the registry tears it down.
 * Call it before running the command that creates the VG.
 * @throws Error when the name lacks the `lvse2e` prefix.
 */
export function adoptLoopVg(
  vg: { readonly vgName: string; readonly file: string },
  registry: CleanupRegistry = cleanups,
): void {
  if (!vg.vgName.startsWith(TEST_VG_PREFIX)) {
    throw new Error(`test volume group names must start with ${TEST_VG_PREFIX}: ${vg.vgName}`);
  }
  ownedVgs.add(vg.vgName);
  registry.add(`tear down ${vg.vgName}`, () => teardownLoopVg(vg.vgName, vg.file));
}

/**
 * Removes an owned test VG and everything on it, whatever state it is in:
 * unmounts every filesystem on its LVs or on maps stacked on them and
 * everything under the backing file's dir, removes the `lvstamp-*` (and
 * test-made `lvse2e*`) device-mapper maps whose table targets an LV of the VG, `lvremove -y`, `vgremove -y`, `pvremove -y` and `losetup -d` of every
 * loop device over `file`, and deletes `file`. Every step runs even when an
 * earlier one failed; a missing VG, map or device is success.
 * @throws Error when the VG is not owned (nothing is touched), or AggregateError
 *   listing the steps that failed, after trying all of them.
 */
export async function teardownLoopVg(vgName: string, file: string): Promise<void> {
  assertOwnedVg(vgName);
  const errors: Error[] = [];
  const attempt = async (what: string, step: () => Promise<void>): Promise<void> => {
    try {
      await step();
    } catch (error) {
      errors.push(new Error(`${what}: ${error instanceof Error ? error.message : String(error)}`));
    }
  };

  const lvDevices = await activeLvDevices(vgName);
  const maps = await mapsOver(lvDevices);
  const devices = new Set([...lvDevices, ...maps.map((m) => m.device)]);
  const dir = dirname(file);
  await attempt('unmount', () =>
    unmountWhere(
      (m) => devices.has(m.device) || m.mountPoint === dir || m.mountPoint.startsWith(dir + sep),
    ),
  );
  await attempt('remove maps', () => removeMaps(maps.map((m) => m.name)));
  if (await vgExists(vgName)) {
    await attempt('lvremove', async () => {
      await shOk(['lvremove', '-y', vgName]);
    });
    await attempt('vgremove', async () => {
      await shOk(['vgremove', '-y', vgName]);
    });
  }
  for (const loop of await loopDevicesOf(file)) {
    await attempt(`pvremove ${loop}`, async () => {
      const pv = await sh(['pvs', '--noheadings', '-o', 'pv_name', loop]);
      if (pv.exitCode === 0) await shOk(['pvremove', '-y', loop]);
    });
    await attempt(`losetup -d ${loop}`, async () => {
      await shOk(['losetup', '-d', loop]);
    });
  }
  await attempt('remove backing file', () => rm(file, { force: true }));
  if (errors.length > 0) {
    throw new AggregateError(
      errors,
      `teardown of ${vgName}: ${errors.map((e) => e.message).join('; ')}`,
    );
  }
}

/** True when `vgs VG` succeeds. Exit 5 with "not found" on stderr means absent. */
export async function vgExists(vgName: string): Promise<boolean> {
  const result = await sh(['vgs', '--noheadings', '-o', 'vg_name', vgName]);
  if (result.exitCode === 0) return true;
  if (result.exitCode === 5 && /not found/i.test(result.stderr)) return false;
  throw new Error(`vgs ${vgName} exited ${result.exitCode}: ${result.stderr.trim()}`);
}

/**
 * Loop devices whose backing file is `file`, e.g. `['/dev/loop3']`, from
 * `losetup --list` (also finds devices whose file was deleted).
 */
export async function loopDevicesOf(file: string): Promise<string[]> {
  const result = await shOk(['losetup', '--list', '-n', '-O', 'NAME,BACK-FILE']);
  return result.stdout
    .split('\n')
    .map((line) => /^(\S+)\s+(.*?)(?: \(deleted\))?\s*$/.exec(line))
    .filter((m): m is RegExpExecArray => m?.[2] === file)
    .map((m) => m[1] ?? '');
}

/** `major:minor` of every active LV of the VG; empty when the VG is gone. */
async function activeLvDevices(vgName: string): Promise<Set<string>> {
  const result = await sh([
    'lvs',
    '--reportformat',
    'json',
    '-o',
    'lv_name,lv_kernel_major,lv_kernel_minor',
    vgName,
  ]);
  const devices = new Set<string>();
  if (result.exitCode !== 0) return devices;
  const report = JSON.parse(result.stdout) as {
    report: { lv: { lv_kernel_major: string; lv_kernel_minor: string }[] }[];
  };
  for (const lv of report.report[0]?.lv ?? []) {
    if (lv.lv_kernel_major !== '-1') devices.add(`${lv.lv_kernel_major}:${lv.lv_kernel_minor}`);
  }
  return devices;
}

/** One line of `dmsetup table`: the map and the `major:minor` devices it targets. */
export interface DmTableLine {
  readonly name: string;
  readonly target: string;
  readonly devices: readonly string[];
}

/** Parses `dmsetup table` (one line per segment: `name: start length target args`). */
export function parseDmTable(text: string): DmTableLine[] {
  const lines: DmTableLine[] = [];
  for (const line of text.split('\n')) {
    const match = /^(\S+): \d+ \d+ (\S+)(.*)$/.exec(line);
    if (match?.[1] === undefined || match[2] === undefined) continue;
    const devices = [...(match[3] ?? '').matchAll(/\b(\d+:\d+)\b/g)].map((m) => m[1] ?? '');
    lines.push({ name: match[1], target: match[2], devices });
  }
  return lines;
}

/** The `lvstamp-*` / `lvse2e*` maps stacked on any of the given devices, with their own `major:minor`. */
async function mapsOver(lvDevices: Set<string>): Promise<{ name: string; device: string }[]> {
  if (lvDevices.size === 0) return [];
  const table = await shOk(['dmsetup', 'table']);
  const names = new Set(
    parseDmTable(table.stdout)
      .filter((l) => l.name.startsWith('lvstamp-') || l.name.startsWith(TEST_VG_PREFIX))
      .filter((l) => l.devices.some((d) => lvDevices.has(d)))
      .map((l) => l.name),
  );
  const maps: { name: string; device: string }[] = [];
  for (const name of names) {
    const info = await shOk([
      'dmsetup',
      'info',
      '-c',
      '--noheadings',
      '-o',
      'major,minor',
      '--separator',
      ':',
      name,
    ]);
    maps.push({ name, device: info.stdout.trim() });
  }
  return maps;
}

/** `dmsetup remove --noudevsync` each map (retrying while busy), then drops stale /dev/mapper nodes. */
async function removeMaps(names: readonly string[]): Promise<void> {
  for (const name of names) {
    let last = await sh(['dmsetup', 'remove', '--noudevsync', name]);
    for (let i = 0; i < 5 && last.exitCode !== 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      last = await sh(['dmsetup', 'remove', '--noudevsync', name]);
    }
    if (last.exitCode !== 0) throw new Error(`dmsetup remove ${name}: ${last.stderr.trim()}`);
  }
  if (names.length > 0) await sh(['dmsetup', 'mknodes']);
}

/** One mount from /proc/self/mountinfo. */
export interface MountEntry {
  /** Field 5, octal escapes decoded. */
  readonly mountPoint: string;
  /** Field 3: `major:minor` of the mounted device. */
  readonly device: string;
}

/** Every mount of this process's mount namespace, from /proc/self/mountinfo. */
export async function mounts(): Promise<MountEntry[]> {
  const text = await readFile('/proc/self/mountinfo', 'utf8');
  const entries: MountEntry[] = [];
  for (const line of text.split('\n')) {
    const fields = line.split(' ');
    const device = fields[2];
    const mountPoint = fields[4];
    if (device === undefined || mountPoint === undefined) continue;
    entries.push({
      device,
      mountPoint: mountPoint.replace(/\\([0-7]{3})/g, (_, octal: string) =>
        String.fromCharCode(parseInt(octal, 8)),
      ),
    });
  }
  return entries;
}

/** Mount points from /proc/self/mountinfo (field 5, octal escapes decoded). */
export async function mountPoints(): Promise<string[]> {
  return (await mounts()).map((m) => m.mountPoint);
}

/** Unmounts every mount the predicate selects, deepest first (lazy as a last resort). */
async function unmountWhere(select: (mount: MountEntry) => boolean): Promise<void> {
  const chosen = (await mounts())
    .filter(select)
    .map((m) => m.mountPoint)
    .sort((a, b) => b.length - a.length);
  for (const mountPoint of chosen) {
    const result = await sh(['umount', mountPoint]);
    if (result.exitCode !== 0) await shOk(['umount', '-l', mountPoint]);
  }
}

/** Unmounts everything mounted at or under the given dirs, deepest first (lazy as a last resort). */
export async function unmountUnder(dirs: readonly string[]): Promise<void> {
  await unmountWhere((m) =>
    dirs.some((d) => m.mountPoint === d || m.mountPoint.startsWith(d + sep)),
  );
}
