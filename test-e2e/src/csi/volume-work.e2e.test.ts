// CSI volume work on real LVM (DESIGN.md §2.3 "The host lock", ARCHITECTURE.md "Locks"): thick
// CreateVolume and DeleteVolume of different volumes overlap inside the driver (the host lock is
// shared by volume work within one process), yet at most DEFAULT_LVM_CONCURRENCY (4) lvm processes
// of the driver run at once; and another process that takes the same host lock file (the lvstamp
// CLI) never changes lvm beside the driver's volume work. What ran when is read from the driver's
// debug log (one `command` line per external command) and, for the CLI, from wrappers of the lvm
// programs put first on its PATH.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { status, type ServiceError } from '@grpc/grpc-js';
import { beforeAll, describe, expect, it } from 'vitest';
import { createLoopVg, createTempDir, installCleanupHooks, runCli } from '../harness/index.js';
import {
  GiB,
  MiB,
  TAG,
  blockCapability,
  driverDir,
  headerOf,
  idOf,
  lvRows,
  sleep,
  startDriver,
  unique,
  type RunningDriver,
  type VolumeMsg,
} from './support.js';

installCleanupHooks();

const OWNER_ID = randomBytes(16).toString('hex');
/** Volumes per burst: three times the lvm bound, so that the bound, not the burst, limits. */
const BURST = 12;
/** core DEFAULT_LVM_CONCURRENCY: lvm processes one driver process runs at once. */
const LVM_LIMIT = 4;
/**
 * Deadline of one RPC or CLI run, and of each test. The emulated VM is 10–40× slower than a host
 * and varies with the machine's load; a burst's last call waits for all the others.
 */
const LONG_MS = 900_000;
/**
 * Clock tolerance of the interval computation, in milliseconds, taken off both ends of every
 * interval: see {@link overlapStats}.
 */
const TOLERANCE_MS = 25;
/** lvm2's programs (lvm, lvs, lvcreate, vgs, pvs, …): the processes the bound counts. */
const LVM_PROGRAM = /^(?:lvm|lv[a-z]+|vg[a-z]+|pv[a-z]+)$/;
/** The lvm programs that change metadata or activation: `LvmCommand.change`, under the host lock. */
const CHANGES = new Set([
  'lvcreate',
  'lvrename',
  'lvremove',
  'lvchange',
  'lvextend',
  'vgcreate',
  'vgremove',
  'pvcreate',
  'pvremove',
]);
/** What the CLI's lvm wrappers (see {@link lvmWrappers}) stand in for. */
const WRAPPED = [
  'lvm',
  'lvs',
  'vgs',
  'pvs',
  'lvcreate',
  'lvrename',
  'lvremove',
  'lvchange',
  'lvextend',
];

let vgName = '';
let dir = '';
let driver: RunningDriver;

beforeAll(async () => {
  const vg = await createLoopVg({ sizeBytes: 2 * GiB });
  vgName = vg.vgName;
  dir = await driverDir();
  driver = await startDriver({ dir, vgName, ownerId: OWNER_ID, logLevel: 'debug' });
});

/** One finished lvm process: its program and wall-clock interval (ms since the epoch). */
interface LvmRun {
  readonly program: string;
  readonly argv: readonly string[];
  readonly start: number;
  readonly end: number;
}

/** A unary Controller call that must succeed, with the long deadline. */
async function controller<T>(method: string, request: object): Promise<T> {
  try {
    return (await driver.client.raw('Controller', method, request, LONG_MS)) as T;
  } catch (error) {
    const e = error as ServiceError;
    throw new Error(
      `Controller.${method} failed: ${status[e.code]} ${e.details} (request ${JSON.stringify(request)})`,
      { cause: error },
    );
  }
}

async function create(name: string): Promise<VolumeMsg> {
  const response = await controller<{ volume: VolumeMsg }>('CreateVolume', {
    name,
    capacity_range: { required_bytes: String(16 * MiB) },
    volume_capabilities: [blockCapability()],
  });
  return response.volume;
}

async function remove(volumeId: string): Promise<void> {
  await controller('DeleteVolume', { volume_id: volumeId });
}

/** The complete JSON lines of the driver's output from character `from` on. */
function logLines(from: number): Record<string, unknown>[] {
  const text = driver.output().slice(from);
  const complete = text.slice(0, text.lastIndexOf('\n') + 1);
  return complete
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/**
 * The driver's log from character `from` on, once it holds `rpcs` `rpc` lines (the driver writes
 * an RPC's line after its handler ended, so every command line of those RPCs is there by then).
 */
async function driverLogAfter(from: number, rpcs: number): Promise<Record<string, unknown>[]> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const lines = logLines(from);
    if (lines.filter((l) => l.msg === 'rpc').length >= rpcs) return lines;
    if (Date.now() > deadline)
      throw new Error(`fewer than ${rpcs} rpc lines in the driver's log after 60 s`);
    await sleep(100);
  }
}

/**
 * The driver's lvm processes from its debug `command` lines. pino stamps a line (`time`, ISO,
 * milliseconds) when the command has ended, and `durationMs` is its wall time measured around the
 * runner's call, which lies inside the LvmCommand slot it held: the interval is
 * [time − durationMs, time].
 */
function driverLvmRuns(lines: readonly Record<string, unknown>[]): LvmRun[] {
  return lines
    .filter((l) => l.msg === 'command')
    .map((l) => {
      const argv = l.argv as string[];
      const end = Date.parse(l.time as string);
      return { program: basename(argv[0] ?? ''), argv, start: end - Number(l.durationMs), end };
    })
    .filter((run) => LVM_PROGRAM.test(run.program));
}

/**
 * The most lvm processes that ran at once, and how many pairs of them overlapped, over `runs`.
 *
 * Each interval is first shrunk by TOLERANCE_MS at both ends, so only overlaps longer than twice
 * that count. The log's intervals are slightly off: `time` has whole milliseconds and is taken a
 * moment after the command ended, `durationMs` is rounded, and the next queued lvm process of the
 * bound starts right after the previous one's line was written; these errors are a few
 * milliseconds, while an lvm process in the VM runs 200 ms or more. Then a sweep over the start
 * and end points (ends before starts at one instant) counts the processes running at each point;
 * its maximum is the most that ran at once. Shrinking can only lower that count, so "at most 4"
 * is judged without measurement noise, and an overlap found after shrinking is a real one.
 */
function overlapStats(runs: readonly LvmRun[]): { max: number; pairs: number } {
  const shrunk = runs
    .map((r) => ({ start: r.start + TOLERANCE_MS, end: r.end - TOLERANCE_MS }))
    .filter((r) => r.end > r.start);
  const points = shrunk
    .flatMap((r) => [
      { at: r.start, delta: 1 },
      { at: r.end, delta: -1 },
    ])
    .sort((a, b) => a.at - b.at || a.delta - b.delta);
  let running = 0;
  let max = 0;
  for (const point of points) {
    running += point.delta;
    max = Math.max(max, running);
  }
  let pairs = 0;
  for (const [i, a] of shrunk.entries())
    for (const b of shrunk.slice(i + 1)) if (a.start < b.end && b.start < a.end) pairs += 1;
  return { max, pairs };
}

/** Pairs of `a` × `b` that overlap by more than twice TOLERANCE_MS. */
function overlapping(a: readonly LvmRun[], b: readonly LvmRun[]): [LvmRun, LvmRun][] {
  const found: [LvmRun, LvmRun][] = [];
  for (const x of a)
    for (const y of b)
      if (Math.max(x.start, y.start) + TOLERANCE_MS < Math.min(x.end, y.end) - TOLERANCE_MS)
        found.push([x, y]);
  return found;
}

function describeRuns(label: string, runs: readonly LvmRun[]): string {
  const all = overlapStats(runs);
  const changes = overlapStats(runs.filter((r) => CHANGES.has(r.program)));
  return (
    `${TAG} ${label}: ${runs.length} lvm processes, at most ${all.max} at once, ` +
    `${all.pairs} overlapping pairs; changes at most ${changes.max} at once, ${changes.pairs} overlapping pairs`
  );
}

/**
 * A directory of shell wrappers, one per lvm program in WRAPPED, each running the real program
 * and then appending `<start ms> <end ms> <exit code> <program>` (the wall clock, as the driver's
 * log) to `log`. Put first on a process's PATH, they time its lvm processes.
 */
async function lvmWrappers(): Promise<{ bin: string; log: string }> {
  const bin = await createTempDir();
  const log = join(bin, 'lvm-runs.log');
  await writeFile(log, '');
  for (const program of WRAPPED) {
    const real = ['/usr/sbin', '/sbin', '/usr/bin', '/bin']
      .map((d) => join(d, program))
      .find((p) => existsSync(p));
    if (real === undefined)
      throw new Error(`${program} not found in /usr/sbin, /sbin, /usr/bin, /bin`);
    const script =
      '#!/bin/sh\n' +
      's=$(date +%s%3N)\n' +
      `${real} "$@"\n` +
      'rc=$?\n' +
      `echo "$s $(date +%s%3N) $rc ${program}" >> ${log}\n` +
      'exit $rc\n';
    await writeFile(join(bin, program), script);
    await chmod(join(bin, program), 0o755);
  }
  return { bin, log };
}

async function wrappedRuns(log: string): Promise<LvmRun[]> {
  return (await readFile(log, 'utf8'))
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const [start, end, , program] = line.split(' ');
      return {
        program: program ?? '',
        argv: [program ?? ''],
        start: Number(start),
        end: Number(end),
      };
    });
}

/** The VG's LV names, sorted. */
async function lvNames(): Promise<string[]> {
  return (await lvRows(vgName)).map((r) => r.lv_name).sort();
}

const lvNameOf = (name: string): string => `lvstamp_${idOf(name)}`;

describe('volume work of different volumes in one driver', () => {
  it(
    `${BURST} CreateVolume, then ${BURST} DeleteVolume, each all at once: all succeed, lvm changes overlap, never more than ${LVM_LIMIT} lvm processes at once`,
    async () => {
      const names = Array.from({ length: BURST }, (_, i) => unique(`work${i}`));
      const from = driver.output().length;

      let started = performance.now();
      const created = await Promise.all(names.map(create));
      const createS = (performance.now() - started) / 1000;
      expect(created.map((v) => v.volume_id)).toEqual(names.map(idOf));
      const rows = await lvRows(vgName);
      expect(rows.map((r) => r.lv_name).sort()).toEqual(names.map(lvNameOf).sort());
      for (const row of rows) {
        const header = await headerOf(row.lv_dm_path);
        expect(row.lv_name).toBe(`lvstamp_${header.volumeId}`);
        expect(lvNameOf(header.name)).toBe(row.lv_name);
        expect(header.ownerId).toBe(OWNER_ID);
      }
      const createRuns = driverLvmRuns(await driverLogAfter(from, BURST));

      const fromDelete = driver.output().length;
      started = performance.now();
      await Promise.all(created.map((v) => remove(v.volume_id)));
      const deleteS = (performance.now() - started) / 1000;
      expect(await lvNames()).toEqual([]);
      const deleteRuns = driverLvmRuns(await driverLogAfter(fromDelete, BURST));

      console.log(describeRuns(`${BURST} creates at once, ${createS.toFixed(1)} s`, createRuns));
      console.log(describeRuns(`${BURST} deletes at once, ${deleteS.toFixed(1)} s`, deleteRuns));
      const runs = [...createRuns, ...deleteRuns];
      expect(createRuns.map((r) => r.program)).toContain('lvcreate');
      expect(deleteRuns.map((r) => r.program)).toContain('lvremove');
      // The bound: never more than LVM_LIMIT lvm processes of the driver at once.
      expect(overlapStats(createRuns).max).toBeLessThanOrEqual(LVM_LIMIT);
      expect(overlapStats(deleteRuns).max).toBeLessThanOrEqual(LVM_LIMIT);
      // The overlap is real: lvm processes ran together, and so did changes (lvcreate, lvrename,
      // lvremove …), which run under the host lock: with it exclusive they never could.
      expect(overlapStats(runs).max).toBeGreaterThanOrEqual(2);
      expect(overlapStats(runs.filter((r) => CHANGES.has(r.program))).max).toBeGreaterThanOrEqual(
        2,
      );
    },
    LONG_MS,
  );
});

describe('another process on the same host lock', () => {
  it(
    'lvstamp delete during a burst of volume work succeeds and never changes lvm beside the driver',
    async () => {
      const victim = unique('cli-victim');
      const olds = Array.from({ length: BURST }, (_, i) => unique(`old${i}`));
      const news = Array.from({ length: BURST }, (_, i) => unique(`new${i}`));
      await Promise.all([victim, ...olds].map(create));
      expect(await lvNames()).toEqual([victim, ...olds].map(lvNameOf).sort());
      const wrappers = await lvmWrappers();

      const from = driver.output().length;
      const started = Date.now();
      const burst = Promise.allSettled([
        ...news.map(create),
        ...olds.map((name) => remove(idOf(name))),
      ]);
      // Start the CLI once the driver's first change of the burst has ended: the burst is under
      // way and holds the host lock file.
      const deadline = Date.now() + LONG_MS;
      while (!driverLvmRuns(logLines(from)).some((r) => CHANGES.has(r.program))) {
        if (Date.now() > deadline) throw new Error('no lvm change of the burst in the driver log');
        await sleep(50);
      }
      const cliStart = Date.now();
      const cli = await runCli(
        [
          '--owner-id',
          OWNER_ID,
          '--lock-file',
          join(dir, 'host.lock'),
          'delete',
          victim,
          '--vg',
          vgName,
        ],
        { env: { PATH: `${wrappers.bin}:${process.env.PATH ?? ''}` }, timeoutMs: LONG_MS },
      );
      const cliEnd = Date.now();
      const outcomes = await burst;
      const burstEnd = Date.now();
      expect(outcomes.flatMap((o) => (o.status === 'rejected' ? [String(o.reason)] : []))).toEqual(
        [],
      );
      expect(cli.exitCode, `lvstamp delete: ${cli.stdout}\n${cli.stderr}`).toBe(0);
      expect(await lvNames()).toEqual(news.map(lvNameOf).sort());

      const driverRuns = driverLvmRuns(await driverLogAfter(from, 2 * BURST));
      const cliRuns = await wrappedRuns(wrappers.log);
      const driverChanges = driverRuns.filter((r) => CHANGES.has(r.program));
      const cliChanges = cliRuns.filter((r) => CHANGES.has(r.program));
      const lastDriverChange = Math.max(...driverChanges.map((r) => r.end));
      console.log(
        describeRuns(`burst of ${2 * BURST} (${BURST} creates, ${BURST} deletes)`, driverRuns),
      );
      console.log(
        `${TAG} lvstamp delete beside it: started ${((cliStart - started) / 1000).toFixed(1)} s into the burst, ` +
          `ran ${((cliEnd - cliStart) / 1000).toFixed(1)} s; its changes ${cliChanges.map((r) => r.program).join(', ')} ` +
          `began ${((Math.min(...cliChanges.map((r) => r.start)) - started) / 1000).toFixed(1)} s into the burst, ` +
          `the driver's last change ended at ${((lastDriverChange - started) / 1000).toFixed(1)} s, the burst's calls at ${((burstEnd - started) / 1000).toFixed(1)} s`,
      );
      expect(cliChanges.map((r) => r.program)).toContain('lvremove');
      // The CLI ran while the driver was still changing lvm: it had to wait for the lock.
      expect(driverChanges.filter((r) => r.end > cliStart).length).toBeGreaterThan(0);
      // Across processes the host lock is one mutual exclusion: no change of the CLI ran beside
      // one of the driver (both clocks are the VM's wall clock).
      expect(
        overlapping(cliChanges, driverChanges).map(
          ([c, d]) => `${c.program} × ${d.argv.join(' ')}`,
        ),
      ).toEqual([]);
    },
    LONG_MS,
  );
});
