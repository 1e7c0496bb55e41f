// Loop-backed volume groups for the benchmarks, and a fast way to fill one with N stamped volumes.
// Every VG made here is named `lvsbench` + 8 hex digits; nothing here acts on any other VG.
import { randomBytes } from 'node:crypto';
import { mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { messageOf } from '@lvstamp/app-kit';
import {
  BlockHeaderIo,
  DATA_OFFSET_BYTES,
  DEFAULT_NAMING,
  dmNameFor,
  dmUuidFor,
  lvNameFor,
  ownerTagFor,
  volumeIdForName,
  type CommandRunner,
} from '@lvstamp/core';
import { sh } from './exec.js';

/** Prefix of every benchmark VG: the guard against touching anything else. */
export const BENCH_VG_PREFIX = 'lvsbench';
/** Owner ID the benchmarks stamp and the driver runs with (32 hex digits). */
export const BENCH_OWNER_ID = 'be'.repeat(16);

/** A volume group on one loop device over a sparse file. */
export interface BenchVg {
  readonly name: string;
  readonly loopDevice: string;
  readonly dir: string;
  /** Physical extent size in bytes. */
  readonly extentBytes: number;
}

function assertBenchVg(name: string): void {
  if (!new RegExp(`^${BENCH_VG_PREFIX}[0-9a-f]{8}$`).test(name)) {
    throw new Error(`refusing to touch volume group "${name}": not a benchmark VG`);
  }
}

/**
 * Makes `lvsbench<8 hex>` on a loop device over a sparse file of `sizeBytes`
 * in a new temp dir: `pvcreate --metadatasize` (large enough for 1,000 LVs:
 * lvm keeps the metadata text twice in its circular area), `vgcreate -s`.
 */
export async function createBenchVg(
  runner: CommandRunner,
  options: { sizeBytes: number; extentBytes?: number; metadataBytes?: number },
): Promise<BenchVg> {
  const name = BENCH_VG_PREFIX + randomBytes(4).toString('hex');
  const extentBytes = options.extentBytes ?? 4 * 1024 * 1024;
  const dir = await mkdtemp(join(tmpdir(), `${BENCH_VG_PREFIX}-`));
  const file = join(dir, 'pv.img');
  const handle = await open(file, 'wx');
  await handle.truncate(options.sizeBytes);
  await handle.close();
  let loopDevice: string | null = null;
  try {
    loopDevice = (await sh(runner, ['losetup', '--find', '--show', file])).trim();
    await runner.run([
      'pvcreate',
      '--yes',
      '--metadatasize',
      `${options.metadataBytes ?? 16 * 1024 * 1024}b`,
      loopDevice,
    ]);
    await runner.run([
      'vgcreate',
      '--addtag',
      DEFAULT_NAMING.tag,
      '-s',
      `${extentBytes}b`,
      name,
      loopDevice,
    ]);
    const extents = Number(
      (await sh(runner, ['vgs', '--noheadings', '-o', 'vg_extent_count', name])).trim(),
    );
    if (!(extents > 0)) throw new Error(`volume group ${name} has no extents (file too small)`);
    return { name, loopDevice, dir, extentBytes };
  } catch (error) {
    // Undo what was done: a failed set-up leaves no VG, PV, loop device or file behind.
    if (loopDevice !== null) {
      await runner.run(['vgremove', '-ff', name]).catch(() => undefined);
      await runner.run(['pvremove', '--yes', loopDevice]).catch(() => undefined);
      await runner.run(['losetup', '--detach', loopDevice]).catch(() => undefined);
    }
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}

/**
 * Removes a benchmark VG and everything in it: data maps over its LVs
 * (`dmsetup remove` of the given volume IDs' maps, missing ones ignored;
 * the IDs come from names that start with the VG's own unique name, so no
 * other volume's map can have them), `vgremove -ff`, `pvremove`, the loop
 * device, and the temp dir unless something failed (it holds the loop
 * file). Failures are recorded in `context.cleanupProblems` (the run then
 * fails), never thrown: the group's own error, if any, stays the one shown.
 */
export async function cleanUp(
  context: { readonly runner: CommandRunner; readonly cleanupProblems: string[] },
  vg: BenchVg,
  volumeIdsWithMaps: readonly string[] = [],
): Promise<void> {
  const problems = await removeBenchVg(context.runner, vg, volumeIdsWithMaps);
  for (const problem of problems) context.cleanupProblems.push(`${vg.name}: ${problem}`);
}

async function removeBenchVg(
  runner: CommandRunner,
  vg: BenchVg,
  volumeIdsWithMaps: readonly string[],
): Promise<string[]> {
  assertBenchVg(vg.name);
  const problems: string[] = [];
  const attempt = async (argv: string[]): Promise<void> => {
    try {
      await runner.run(argv);
    } catch (error) {
      problems.push(messageOf(error));
    }
  };
  for (const id of volumeIdsWithMaps) {
    await runner.run(['dmsetup', 'remove', dmNameFor(id)]).catch(() => undefined);
  }
  await attempt(['vgremove', '-ff', vg.name]);
  await attempt(['pvremove', '--yes', vg.loopDevice]);
  await attempt(['losetup', '--detach', vg.loopDevice]);
  if (problems.length === 0) await rm(vg.dir, { recursive: true, force: true });
  else problems.push(`left ${vg.dir} (the loop file) for inspection`);
  return problems;
}

/** One volume put in place by {@link populate}: named `<vg>-<i>`. */
export interface PlacedVolume {
  readonly name: string;
  readonly volumeId: string;
  readonly lvName: string;
  /** `/dev/mapper/...` of the LV, from lvs. */
  readonly lvPath: string;
  readonly major: number;
  readonly minor: number;
}

/**
 * Puts `count` stamped volumes (`<vg>-<i>`, each `extentsPerVolume`
 * extents) into an empty benchmark VG with one metadata commit instead of
 * `count` lvcreate runs: vgcfgbackup, append the LVs to the metadata text
 * (vgcfgbackup(8) format, tags and creation time as lvcreate writes them),
 * vgcfgrestore, `vgchange -ay`, then write each header in-process exactly
 * as a create does. The headers say they were made `ageMs` ago.
 */
export async function populate(
  runner: CommandRunner,
  vg: BenchVg,
  options: { count: number; extentsPerVolume: number; ageMs: number },
): Promise<PlacedVolume[]> {
  assertBenchVg(vg.name);
  const backup = join(vg.dir, 'metadata.vg');
  await runner.run(['vgcfgbackup', '-f', backup, vg.name]);
  const text = await readFile(backup, 'utf8');
  const createdAtMs = Date.now() - options.ageMs;
  // Names start with the VG's unique name: their volume IDs cannot be another volume's.
  const names = Array.from({ length: options.count }, (_, i) => `${vg.name}-${i}`);
  const lvs = names.map((name, i) => {
    const lvName = lvNameFor(volumeIdForName(name));
    return `
\t\t${lvName} {
\t\t\tid = "${lvUuid()}"
\t\t\tstatus = ["READ", "WRITE", "VISIBLE"]
\t\t\tflags = []
\t\t\ttags = ["${DEFAULT_NAMING.tag}", "${ownerTagFor(BENCH_OWNER_ID)}"]
\t\t\tcreation_time = ${Math.floor(createdAtMs / 1000)}
\t\t\tcreation_host = "lvstamp-bench"
\t\t\tsegment_count = 1

\t\t\tsegment1 {
\t\t\t\tstart_extent = 0
\t\t\t\textent_count = ${options.extentsPerVolume}
\t\t\t\ttype = "striped"
\t\t\t\tstripe_count = 1
\t\t\t\tstripes = [
\t\t\t\t\t"pv0", ${i * options.extentsPerVolume}
\t\t\t\t]
\t\t\t}
\t\t}`;
  });
  // The VG section ends with "\n}\n" after physical_volumes; the LVs go before it.
  const end = text.lastIndexOf('\n}');
  if (end < 0 || !text.includes('physical_volumes')) {
    throw new Error(`unexpected vgcfgbackup output in ${backup}`);
  }
  const restored = `${text.slice(0, end)}\n\n\tlogical_volumes {\n${lvs.join('\n')}\n\t}${text.slice(end)}`;
  await writeFile(
    backup,
    restored.replace(/\bseqno = (\d+)/, (_, n: string) => `seqno = ${Number(n) + 1}`),
  );
  await runner.run(['vgcfgrestore', '-f', backup, vg.name]);
  await runner.run(['vgchange', '-ay', vg.name]);

  const report = JSON.parse(
    await sh(runner, [
      'lvs',
      '--reportformat',
      'json',
      '-o',
      'lv_name,lv_dm_path,lv_kernel_major,lv_kernel_minor',
      vg.name,
    ]),
  ) as { report: { lv: Record<string, string>[] }[] };
  const rows = new Map((report.report[0]?.lv ?? []).map((r) => [r.lv_name ?? '', r]));
  const headers = new BlockHeaderIo();
  const placed: PlacedVolume[] = [];
  for (const name of names) {
    const volumeId = volumeIdForName(name);
    const lvName = lvNameFor(volumeId);
    const row = rows.get(lvName);
    if (row?.lv_dm_path === undefined || row.lv_dm_path === '') {
      throw new Error(`${vg.name}/${lvName} is not active after vgchange -ay`);
    }
    await headers.writeHeader(row.lv_dm_path, {
      volumeId,
      ownerId: BENCH_OWNER_ID,
      createdAtMs,
      dataOffsetBytes: DATA_OFFSET_BYTES,
      requestedBytes: options.extentsPerVolume * vg.extentBytes - DATA_OFFSET_BYTES,
      name,
    });
    placed.push({
      name,
      volumeId,
      lvName,
      lvPath: row.lv_dm_path,
      major: Number(row.lv_kernel_major),
      minor: Number(row.lv_kernel_minor),
    });
  }
  return placed;
}

/**
 * Data maps (DESIGN.md §4: `0 <dataSectors> linear <major:minor> 2048`,
 * named and tagged as the node's attach makes them) for `volumes`, with one
 * `dmsetup create --concise` for all of them (dmsetup(8)).
 */
export async function createDataMaps(
  runner: CommandRunner,
  volumes: readonly PlacedVolume[],
  lvSizeBytes: number,
): Promise<void> {
  if (volumes.length === 0) return;
  const dataSectors = (lvSizeBytes - DATA_OFFSET_BYTES) / 512;
  const spec = volumes
    .map(
      (v) =>
        `${dmNameFor(v.volumeId)},${dmUuidFor(v.volumeId)},,rw,0 ${dataSectors} linear ${v.major}:${v.minor} ${DATA_OFFSET_BYTES / 512}`,
    )
    .join(';');
  await runner.run(['dmsetup', 'create', '--concise', spec]);
}

/** A random lvm uuid: 32 alphanumerics grouped 6-4-4-4-4-4-6 (lvm's id format). */
function lvUuid(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
  const bytes = randomBytes(32);
  const chars = Array.from(bytes, (b) => alphabet[b % alphabet.length]).join('');
  const groups = [6, 4, 4, 4, 4, 4, 6];
  let at = 0;
  return groups.map((n) => chars.slice(at, (at += n))).join('-');
}
