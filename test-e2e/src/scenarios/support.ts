// Helpers shared by the e2e scenarios: CLI calls with exact exit codes, plain
// lvm / dmsetup / stat look-ups, raw sector reads. They build on the harness
// (test-e2e/src/harness) and never change it.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, open, readFile, readdir, stat, statfs } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { lvDmName } from '@lvstamp/core';
import { execa, type ResultPromise } from 'execa';
import { expect } from 'vitest';
import { CLI_MAIN, runCli, shOk, sh, type CliOptions, type CliResult } from '../harness/index.js';

export const MiB = 1024 * 1024;
/** Data area offset of header v1 (DESIGN.md §4), in bytes. */
export const DATA_OFFSET = MiB;

/** The volume ID of a name, computed here from the rule (DESIGN.md §3), not by the code under test. */
export function idOf(name: string): string {
  return createHash('sha256').update(name, 'utf8').digest('hex').slice(0, 32);
}

/** A fresh random owner ID (32 hex digits), so a GC run only ever removes this test's volumes. */
export function newOwnerId(): string {
  return randomBytes(16).toString('hex');
}

/** A short random suffix for volume names. */
export function suffix(): string {
  return randomBytes(3).toString('hex');
}

/**
 * `lvstamp ...args`, asserting the exit code; the message shows stdout and
 * stderr on mismatch. Both come without their final newline (execa strips it).
 */
export async function cli(
  args: readonly string[],
  exitCode: number,
  options: CliOptions = {},
): Promise<CliResult> {
  const result = await runCli(args, options);
  expect(
    result.exitCode,
    `lvstamp ${args.join(' ')}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`,
  ).toBe(exitCode);
  return result;
}

/** `lvstamp ...args --json`, asserting exit 0, parsed as T (the shape is the CLI's contract). */
export async function cliJson<T>(args: readonly string[], options: CliOptions = {}): Promise<T> {
  const result = await cli([...args, '--json'], 0, options);
  return JSON.parse(result.stdout) as T;
}

/** Starts `lvstamp ...args` without waiting, so a test can kill it (scenario: interrupted create). */
export function startCli(args: readonly string[], env: Readonly<Record<string, string>> = {}) {
  return execa(process.execPath, [CLI_MAIN, ...args], {
    reject: false,
    env: { LC_ALL: 'C', ...env },
    stdin: 'ignore',
    timeout: 300_000,
    killSignal: 'SIGKILL',
  });
}

/** A running CLI process as {@link startCli} returns it. */
export type RunningCli = ResultPromise<{ reject: false }>;

/** What `lvstamp gc --json` prints, as far as the scenarios read it (the plan and the outcomes). */
export interface GcJson {
  readonly plan: {
    readonly entries: readonly {
      readonly device: string;
      readonly action: string;
      readonly rule: number;
      readonly severity: string;
      readonly reason: string;
    }[];
  };
  readonly outcomes: readonly {
    readonly entry: { readonly device: string; readonly action: string };
    readonly outcome: string;
    readonly detail: string;
  }[];
}

/** `lvstamp inspect --json` (InspectReport of the core). */
export interface InspectJson {
  readonly target: string;
  readonly devicePath: string;
  readonly decode:
    | {
        readonly status: 'ok';
        readonly version: number;
        readonly header: {
          readonly volumeId: string;
          readonly ownerId: string;
          readonly createdAtMs: number;
          readonly dataOffsetBytes: number;
          readonly requestedBytes: number;
          readonly name: string;
        };
      }
    | { readonly status: 'not-stamped' | 'corrupt' | 'unsupported' | 'unreadable'; reason: string };
  readonly explanation: string;
}

/** One element of `lvstamp list --json` / the output of `create --json`. */
export interface VolumeJson {
  readonly name: string | null;
  readonly volumeId: string;
  readonly vg: string;
  readonly lv: string;
  readonly lvSizeBytes: number;
  readonly capacityBytes: number;
  readonly creating: boolean;
  readonly active: boolean;
  readonly header: string;
  readonly ownerId: string | null;
  readonly createdAt: string | null;
  readonly dataDevice: string | null;
  readonly mountPoints: readonly string[];
}

/** One row of {@link lvsRows}; every value is lvm's string (sizes in bytes). */
export interface LvRow {
  readonly lv_name: string;
  readonly lv_uuid: string;
  readonly lv_size: string;
  readonly lv_attr: string;
  readonly lv_time: string;
  readonly lv_tags: string;
  readonly lv_kernel_major: string;
  readonly lv_kernel_minor: string;
  readonly lv_dm_path: string;
}

/** Every LV of a VG from one `lvs` JSON report, sizes in bytes, lv_time as Unix seconds. */
export async function lvsRows(vgName: string): Promise<LvRow[]> {
  const result = await shOk([
    'lvs',
    '--reportformat',
    'json',
    '--units',
    'b',
    '--nosuffix',
    '--config',
    'report/time_format="%s"',
    '-o',
    'lv_name,lv_uuid,lv_size,lv_attr,lv_time,lv_tags,lv_kernel_major,lv_kernel_minor,lv_dm_path',
    vgName,
  ]);
  const report = JSON.parse(result.stdout) as { report: { lv: LvRow[] }[] };
  return report.report[0]?.lv ?? [];
}

/** Names of every LV of a VG, sorted. */
export async function lvNames(vgName: string): Promise<string[]> {
  return (await lvsRows(vgName)).map((r) => r.lv_name).sort();
}

/** The one row of `lvName`. */
export async function lvRow(vgName: string, lvName: string): Promise<LvRow> {
  const rows = (await lvsRows(vgName)).filter((r) => r.lv_name === lvName);
  expect(rows.map((r) => r.lv_name)).toEqual([lvName]);
  return rows[0] as LvRow;
}

/** `major:minor` of a device-mapper map from `dmsetup info`, or null when it does not exist. */
export async function dmInfo(
  name: string,
): Promise<{ device: string; open: number; uuid: string } | null> {
  const result = await sh([
    'dmsetup',
    'info',
    '-c',
    '--noheadings',
    '--separator',
    '|',
    '-o',
    'major,minor,open,uuid',
    name,
  ]);
  if (result.exitCode !== 0) {
    expect(result.stderr).toMatch(/not exist|No such device/i);
    return null;
  }
  const [major, minor, openCount, uuid] = result.stdout.trim().split('|');
  return { device: `${major}:${minor}`, open: Number(openCount), uuid: uuid ?? '' };
}

/** `major:minor` (decimal) of the block device node at `path`, from stat(1). */
export async function nodeDevice(path: string): Promise<string> {
  return (await shOk(['stat', '-L', '-c', '%Hr:%Lr', path])).stdout.trim();
}

/** Size of a block device in bytes (`blockdev --getsize64`). */
export async function deviceBytes(path: string): Promise<number> {
  return Number((await shOk(['blockdev', '--getsize64', path])).stdout.trim());
}

/**
 * Reads `length` bytes at byte `position` of a file or device. A block
 * device's page cache is dropped first (`blockdev --flushbufs`): the LV and
 * the map over it are separate devices with separate caches, so a buffered
 * read of one can return stale pages after a direct write through the other.
 */
export async function readBytes(path: string, position: number, length: number): Promise<Buffer> {
  if ((await stat(path)).isBlockDevice()) await shOk(['blockdev', '--flushbufs', path]);
  const handle = await open(path, 'r');
  try {
    const buffer = Buffer.alloc(length);
    const { bytesRead } = await handle.read(buffer, 0, length, position);
    expect(bytesRead).toBe(length);
    return buffer;
  } finally {
    await handle.close();
  }
}

/** `bytes` bytes of `label` repeated: a pattern a read can find again. */
export function pattern(label: string, bytes: number): Buffer {
  return Buffer.alloc(bytes, label);
}

/** Writes `data` at byte `position` of a device and syncs it to the device. */
export async function writeAt(device: string, position: number, data: Buffer): Promise<void> {
  const handle = await open(device, 'r+');
  try {
    await handle.write(data, 0, data.length, position);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** The physical extents of an LV in lvcreate's form (`/dev/loop3:10-12`), one per segment. */
export async function peRanges(vgName: string, lvName: string): Promise<string[]> {
  const result = await shOk(['lvs', '--noheadings', '-o', 'seg_pe_ranges', `${vgName}/${lvName}`]);
  return result.stdout.split(/\s+/).filter((r) => r !== '');
}

/**
 * What the next LV made on exactly these physical extents reads: an LV on
 * `ranges` (`lvcreate` with neither zeroing nor signature wiping, so it shows
 * the extents as they are), read whole, then removed.
 */
export async function readExtents(vgName: string, ranges: readonly string[]): Promise<Buffer> {
  const extents = ranges
    .map((r) => /:(\d+)-(\d+)$/.exec(r))
    .reduce((sum, m) => sum + Number(m?.[2]) - Number(m?.[1]) + 1, 0);
  expect(extents).toBeGreaterThan(0);
  const probe = `probe_${suffix()}`;
  await shOk([
    'lvcreate',
    '--yes',
    '--zero',
    'n',
    '--wipesignatures',
    'n',
    '-n',
    probe,
    '-l',
    String(extents),
    vgName,
    ...ranges,
  ]);
  try {
    const row = await lvRow(vgName, probe);
    return await readBytes(row.lv_dm_path, 0, Number(row.lv_size));
  } finally {
    await shOk(['lvremove', '--yes', `${vgName}/${probe}`]);
  }
}

/** How many bytes of `data` are not zero. */
export function nonZeroBytes(data: Buffer): number {
  let count = 0;
  for (const byte of data) if (byte !== 0) count += 1;
  return count;
}

/** Makes a filesystem on `device` and mounts it on `<dir>/<name>`; returns the mount point. */
export async function formatAndMount(
  device: string,
  fsType: 'ext4' | 'xfs',
  dir: string,
  name = `mnt-${fsType}`,
): Promise<string> {
  await shOk(fsType === 'ext4' ? ['mkfs.ext4', '-q', device] : ['mkfs.xfs', '-q', device]);
  const mountPoint = join(dir, name);
  await mkdir(mountPoint, { recursive: true });
  await shOk(['mount', '-t', fsType, device, mountPoint]);
  return mountPoint;
}

/** Total size of the filesystem mounted at `path` in bytes (statfs: blocks × block size). */
export async function filesystemBytes(path: string): Promise<number> {
  const stats = await statfs(path);
  return stats.blocks * stats.bsize;
}

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Waits until Unix time `epochMs` (plus nothing); returns at once when it
 * has passed.
 */
export async function sleepUntil(epochMs: number): Promise<void> {
  const wait = epochMs - Date.now();
  if (wait > 0) await sleep(wait);
}

/** The header fields `inspect --json` reports for a volume; fails the test unless the status is ok. */
export async function headerOf(ref: string): Promise<InspectJson['decode'] & { status: 'ok' }> {
  const report = await cliJson<InspectJson>(['inspect', ref]);
  expect(report.decode.status, report.explanation).toBe('ok');
  return report.decode as InspectJson['decode'] & { status: 'ok' };
}

/** Command lines of every running process (from /proc/<pid>/cmdline, NULs as spaces). */
async function processCommandLines(): Promise<string[]> {
  const lines: string[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const text = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if (text !== '') lines.push(text.replaceAll('\0', ' '));
  }
  return lines;
}

/**
 * Waits until no process has `text` in its command line (e.g. an lvcreate
 * or lvrename that a killed CLI left running: lvm finishes on its own).
 * @throws Error after `timeoutMs` milliseconds.
 */
export async function waitForNoProcessMentioning(text: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const running = (await processCommandLines()).filter((line) => line.includes(text));
    if (running.length === 0) return;
    if (Date.now() > deadline)
      throw new Error(`still running after ${timeoutMs} ms: ${running.join('; ')}`);
    await sleep(100);
  }
}

/** What {@link killCreateAfterLvcreate} left behind. */
export interface InterruptedCreate {
  readonly name: string;
  readonly id: string;
  /** Unix milliseconds when SIGKILL was sent. */
  readonly killedAtMs: number;
  /** How many creates were started until one was killed in the window. */
  readonly attempts: number;
}

/**
 * Starts `lvstamp create NAME` and SIGKILLs it as soon as the LV
 * `lvstamp_new_<id>` shows up in /dev/mapper (polled every 2 ms), i.e. after
 * lvcreate and before the rename (DESIGN.md §5). When the kill lands too
 * late (the final `lvstamp_<id>` exists, or the CLI had already exited), the
 * volume is deleted and the whole thing is retried with a new name, up to
 * `maxAttempts` times; never passes without a kill that landed.
 * @param args global options and create options besides the name, e.g.
 *   `['--owner-id', X, '--lock-file', L, 'create']` + `['--size', '16Mi', '--vg', vg]`.
 * @throws Error when no attempt landed in the window.
 */
export async function killCreateAfterLvcreate(options: {
  readonly vgName: string;
  readonly namePrefix: string;
  readonly globalArgs: readonly string[];
  readonly createArgs: readonly string[];
  readonly maxAttempts?: number;
}): Promise<InterruptedCreate> {
  const maxAttempts = options.maxAttempts ?? 6;
  const outcomes: string[] = [];
  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    const name = `${options.namePrefix}-${suffix()}`;
    const id = idOf(name);
    const newNode = `/dev/mapper/${lvDmName(options.vgName, `lvstamp_new_${id}`)}`;
    const child = startCli([...options.globalArgs, 'create', name, ...options.createArgs]);
    const state = { exited: false };
    const done = child.then((result) => {
      state.exited = true;
      return result;
    });
    while (!state.exited && !existsSync(newNode)) await sleep(2);
    const killedAtMs = Date.now();
    if (!state.exited) child.kill('SIGKILL');
    const result = await done;
    // lvm commands the CLI had started run on after it died; let them finish
    await sleep(200);
    await waitForNoProcessMentioning(id);
    const lvs = await lvNames(options.vgName);
    const landed =
      result.signal === 'SIGKILL' &&
      lvs.includes(`lvstamp_new_${id}`) &&
      !lvs.includes(`lvstamp_${id}`);
    if (landed) return { name, id, killedAtMs, attempts: attempt };
    outcomes.push(
      `attempt ${attempt}: signal ${result.signal ?? 'none'}, exit ${result.exitCode ?? '-'}, LVs ${lvs.join(' ')}`,
    );
    // too late: remove whatever the create made and try again with another name
    await cli([...options.globalArgs, 'delete', name], 0);
  }
  throw new Error(
    `the kill never landed between lvcreate and lvrename in ${maxAttempts} attempts:\n${outcomes.join('\n')}`,
  );
}

/** Header v1/v2 fields as DESIGN.md §4 lays them out (same shape as `inspect --json`'s `decode.header`). */
export interface OnDiskHeader {
  readonly volumeId: string;
  readonly ownerId: string;
  readonly createdAtMs: number;
  readonly dataOffsetBytes: number;
  readonly requestedBytes: number;
  readonly name: string;
}

/**
 * Decodes sector 0 of `device` by the DESIGN.md §4 table, written here
 * independently of the core's codec: `ok` with the fields, or the first
 * rule that fails (`not-stamped` without the magic, else `corrupt`).
 */
export async function headerOnDisk(
  device: string,
): Promise<
  { status: 'ok'; header: OnDiskHeader } | { status: 'not-stamped' | 'corrupt'; why: string }
> {
  const b = await readBytes(device, 0, 512);
  if (b.subarray(0, 8).toString('latin1') !== 'LVSTAMP\0')
    return { status: 'not-stamped', why: 'no magic' };
  if (crc32(b.subarray(0, 508)) !== b.readUInt32LE(508))
    return { status: 'corrupt', why: 'checksum' };
  const version = b.readUInt16LE(8);
  if ((version !== 1 && version !== 2) || b.readUInt16LE(10) !== 512 || b.readUInt32LE(12) !== 0)
    return { status: 'corrupt', why: 'version, size or flags' };
  const nameLength = b.readUInt16LE(72);
  if (nameLength < 1 || nameLength > 256) return { status: 'corrupt', why: 'name length' };
  return {
    status: 'ok',
    header: {
      volumeId: b.subarray(16, 32).toString('hex'),
      ownerId: b.subarray(32, 48).toString('hex'),
      createdAtMs: Number(b.readBigUInt64LE(48)),
      dataOffsetBytes: Number(b.readBigUInt64LE(56)),
      requestedBytes: Number(b.readBigUInt64LE(64)),
      name: b.subarray(74, 74 + nameLength).toString('utf8'),
    },
  };
}

/** The header on disk, failing the test unless it decodes `ok`. */
export async function okHeaderOnDisk(device: string): Promise<OnDiskHeader> {
  const decoded = await headerOnDisk(device);
  if (decoded.status !== 'ok')
    throw new Error(`${device}: header ${decoded.status} (${decoded.why})`);
  return decoded.header;
}
