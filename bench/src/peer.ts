// Group `peer`: lvstamp-csi next to TopoLVM's lvmd on the same benchmark VG, in one run
// (bench/README.md "Peer group"). lvmd and its proto come from the `lvmd` part
// (test-e2e/parts/build.sh, from its Go module), which scripts/run-bench.sh and run-peer.sh build on
// the host and pass in as LVSTAMP_BENCH_LVMD and LVSTAMP_BENCH_LVMD_PROTO. `pnpm bench` runs it as a
// group (its metrics go to bench:check like any other); `lvstamp-bench peer` runs it alone, at any
// size, and prints a table and one `peer-results:` JSON line with every figure.
import type { BenchContext, GroupRun } from './context.js';
import { BenchDriver, MOUNT_CAPABILITY } from './driver.js';
import { collectEnvironment } from './environment.js';
import { lvmOverlap } from './exec.js';
import { cleanUp, createBenchVg } from './fixture.js';
import * as grpc from '@grpc/grpc-js';
import { settleAll } from './groups/burst.js';
import { MIX, rpcRound, type MixCall } from './groups/footprint.js';
import { LVMD_DEVICE_CLASS, LvmdPeer, type LvmdService } from './lvmd.js';
import { formatMs, MiB, sleep, timed } from './stats.js';
import { findOnPath, lvmChildSampler } from './lvm-children.js';
import {
  peerMetrics,
  render,
  SETTLE_MS,
  type PeerScale,
  type Side,
  type Sides,
} from './peer-report.js';

/** What the peer run is given: lvmd, and the run's scale. */
export interface PeerOptions extends PeerScale {
  /** The lvmd binary (TopoLVM cmd/lvmd). */
  readonly lvmd: string;
  /** Its pkg/lvmd/proto/lvmd.proto. */
  readonly proto: string;
}

/** Capacity of a cycle's volume (as group create-delete) and of a burst's (as group burst). */
const CYCLE_BYTES = 16 * MiB;
const BURST_BYTES = 8 * MiB;
/**
 * Deadline of each call of a burst, in ms: 64 creates one after another on
 * a loaded, emulated host took over the default 10 min for the last ones.
 */
const BURST_CALL_MS = 1_800_000;

/**
 * lvmd's share of the RSS round: requests for a device class it does not
 * have, answered NOT_FOUND before any lvm runs (internal/lvmd/lvservice.go,
 * vgservice.go), as lvstamp's mix answers without lvm.
 */
const LVMD_MIX: readonly MixCall<LvmdService>[] = [
  ['LVService', 'CreateLV', { name: 'x', device_class: 'none', size_bytes: '1048576' }],
  ['LVService', 'RemoveLV', { name: 'x', device_class: 'none' }],
  ['LVService', 'ResizeLV', { name: 'x', device_class: 'none', size_bytes: '1048576' }],
  ['VGService', 'GetLVList', { device_class: 'none' }],
  ['VGService', 'GetFreeBytes', { device_class: 'none' }],
].map(([service, method, request]) => ({
  service: service as LvmdService,
  method: method as string,
  request: request as object,
  code: grpc.status.NOT_FOUND,
}));

/**
 * Group `peer` of `pnpm bench`: {@link measurePeer} at the run's scale
 * (`peerCycles`, `burst`, `peerBurstRounds`, `peerRpcs`), as metrics.
 * @throws Error when LVSTAMP_BENCH_LVMD or LVSTAMP_BENCH_LVMD_PROTO is unset
 *   (scripts/run-bench.sh sets both), or when a step fails.
 */
export const peerGroup: GroupRun = async (context) => {
  const { lvmd, proto } = lvmdFromEnvironment();
  const options: PeerOptions = {
    lvmd,
    proto,
    cycles: context.scale.peerCycles,
    burst: context.scale.burst,
    burstRounds: context.scale.peerBurstRounds,
    rpcs: context.scale.peerRpcs,
  };
  return peerMetrics(await measurePeer(context, options), options);
};

/**
 * The lvmd binary and its lvmd.proto from LVSTAMP_BENCH_LVMD and
 * LVSTAMP_BENCH_LVMD_PROTO.
 * @throws Error naming what is missing and how to get it.
 */
export function lvmdFromEnvironment(env: NodeJS.ProcessEnv = process.env): {
  lvmd: string;
  proto: string;
} {
  const lvmd = env.LVSTAMP_BENCH_LVMD ?? '';
  const proto = env.LVSTAMP_BENCH_LVMD_PROTO ?? '';
  if (lvmd === '' || proto === '') {
    throw new Error(
      `the peer group needs LVSTAMP_BENCH_LVMD (an lvmd binary) and LVSTAMP_BENCH_LVMD_PROTO (its lvmd.proto): bench/scripts/run-bench.sh and run-peer.sh set both from \`test-e2e/parts/build.sh lvmd\`${env.LVSTAMP_BENCH_LVMD_ERROR ? ` (here it failed: ${env.LVSTAMP_BENCH_LVMD_ERROR})` : ''}`,
    );
  }
  return { lvmd, proto };
}

/**
 * `lvstamp-bench peer`: {@link measurePeer}, printed as a table and one
 * `peer-results:` JSON line.
 * @returns the exit code (0, or 1 when a step failed; the VG is removed either way).
 */
export async function peer(context: BenchContext, options: PeerOptions): Promise<number> {
  try {
    const sides = await measurePeer(context, options);
    process.stdout.write(render(sides, options));
    const environment = await collectEnvironment(context.runner, options.lvmd);
    process.stdout.write(`peer-results: ${JSON.stringify({ options, environment, sides })}\n`);
    // measurePeer printed what its cleanup could not undo: the run fails (fixture.ts cleanUp).
    return context.cleanupProblems.length === 0 ? 0 : 1;
  } catch {
    return 1; // measurePeer has said what failed
  }
}

/**
 * Runs the comparison: RSS idle and after `rpcs` RPCs without lvm, then
 * `cycles` create → remove pairs (one warm-up each, the first side
 * alternating), then `burstRounds` bursts of `burst` concurrent creates and
 * removes per side, on one benchmark VG that is removed afterwards.
 * @throws Error when a step fails, after printing what is known (the
 *   daemons' state, OOM kills, a `peer-results-partial:` JSON line).
 */
export async function measurePeer(context: BenchContext, options: PeerOptions): Promise<Sides> {
  const { runner } = context;
  const cleanupBefore = context.cleanupProblems.length;
  const lvmPath = findOnPath('lvm');
  const environment = await collectEnvironment(runner, options.lvmd);
  context.progress(
    `peer: ${environment.kernel}, ${environment.lvm2}, ${environment.cpus} × ${environment.cpuModel}${environment.emulated ? ' (emulated)' : ''}, Node ${process.version}, commit ${environment.commit ?? 'unknown'}`,
  );
  const vg = await createBenchVg(runner, {
    sizeBytes: (options.burst * 3 + 16) * 4 * MiB + 64 * MiB,
  });
  let driver: BenchDriver | null = null;
  let lvmd: LvmdPeer | null = null;
  let partial: Sides | null = null;
  try {
    driver = await BenchDriver.start({ dir: vg.dir, vgName: vg.name });
    lvmd = await LvmdPeer.start({
      binary: options.lvmd,
      proto: options.proto,
      dir: vg.dir,
      vgName: vg.name,
      lvmPath,
    });
    const d = driver;
    const l = lvmd;
    const sides: Sides = {
      lvstamp: { create: [], remove: [], bursts: [], rssIdle: 0, rssAfterRpcs: 0, rssAfterWork: 0 },
      lvmd: { create: [], remove: [], bursts: [], rssIdle: 0, rssAfterRpcs: 0, rssAfterWork: 0 },
    };
    partial = sides;
    await sleep(SETTLE_MS);
    sides.lvstamp.rssIdle = await d.rssMiB();
    sides.lvmd.rssIdle = await l.rssMiB();
    await rpcRound((s, m, r) => d.call(s, m, r), MIX, options.rpcs);
    await rpcRound((s, m, r) => l.call(s, m, r), LVMD_MIX, options.rpcs);
    await sleep(SETTLE_MS);
    sides.lvstamp.rssAfterRpcs = await d.rssMiB();
    sides.lvmd.rssAfterRpcs = await l.rssMiB();
    context.progress(
      `peer: RSS idle lvstamp ${sides.lvstamp.rssIdle.toFixed(1)} MiB, lvmd ${sides.lvmd.rssIdle.toFixed(1)} MiB; after ${options.rpcs} RPCs ${sides.lvstamp.rssAfterRpcs.toFixed(1)}, ${sides.lvmd.rssAfterRpcs.toFixed(1)} MiB`,
    );

    const lvstampCycle = async (name: string, record: boolean): Promise<void> => {
      const created = await d.measure('Controller', 'CreateVolume', {
        name,
        capacity_range: { required_bytes: String(CYCLE_BYTES) },
        volume_capabilities: [MOUNT_CAPABILITY],
      });
      const id = (created.response as { volume: { volume_id: string } }).volume.volume_id;
      const removed = await d.measure('Controller', 'DeleteVolume', { volume_id: id });
      if (record) {
        sides.lvstamp.create.push({ ms: created.ms, processes: created.processes });
        sides.lvstamp.remove.push({ ms: removed.ms, processes: removed.processes });
      }
    };
    const lvmdCycle = async (name: string, record: boolean): Promise<void> => {
      const created = await l.measureChange('CreateLV', {
        name,
        device_class: LVMD_DEVICE_CLASS,
        size_bytes: String(CYCLE_BYTES),
      });
      const removed = await l.measureChange('RemoveLV', { name, device_class: LVMD_DEVICE_CLASS });
      if (record) {
        sides.lvmd.create.push(created);
        sides.lvmd.remove.push(removed);
      }
    };
    await lvstampCycle(`${vg.name}-warmup`, false);
    await lvmdCycle(`${vg.name}-lvmd-warmup`, false);
    for (let i = 0; i < options.cycles; i++) {
      // Alternate the order so that drift on a noisy machine hits both sides alike.
      const pair = [
        () => lvstampCycle(`${vg.name}-cd-${i}`, true),
        () => lvmdCycle(`${vg.name}-lvmd-cd-${i}`, true),
      ];
      for (const run of i % 2 === 0 ? pair : pair.reverse()) await run();
      const cycleMs = (s: Side): string =>
        formatMs((s.create.at(-1)?.ms ?? 0) + (s.remove.at(-1)?.ms ?? 0));
      context.progress(
        `peer: cycle ${i + 1}/${options.cycles}: lvstamp ${cycleMs(sides.lvstamp)}, lvmd ${cycleMs(sides.lvmd)}`,
      );
    }

    const lvstampBurst = async (round: number): Promise<void> => {
      const names = Array.from({ length: options.burst }, (_, i) => `${vg.name}-b${round}-${i}`);
      const mark = d.commandMark;
      const rpcMark = d.rpcLines;
      const sampler = lvmChildSampler(d.pid);
      const startedMs = Date.now();
      const create = await timed(() =>
        settleAll(
          names.map((name) =>
            d.call(
              'Controller',
              'CreateVolume',
              {
                name,
                capacity_range: { required_bytes: String(BURST_BYTES) },
                volume_capabilities: [MOUNT_CAPABILITY],
              },
              BURST_CALL_MS,
            ),
          ),
          'CreateVolume',
        ),
      );
      const ids = create.value.map(
        (r) => (r as { volume: { volume_id: string } }).volume.volume_id,
      );
      await d.waitForRpcLines(rpcMark + options.burst);
      const remove = await timed(() =>
        settleAll(
          ids.map((volume_id) =>
            d.call('Controller', 'DeleteVolume', { volume_id }, BURST_CALL_MS),
          ),
          'DeleteVolume',
        ),
      );
      await d.waitForRpcLines(rpcMark + 2 * options.burst);
      const spans = d.spansSince(mark);
      const lvm = d.commandsSince(mark).lvm;
      if (spans.length < lvm) {
        throw new Error(`${spans.length} of ${lvm} command lines of the driver carry a time`);
      }
      sides.lvstamp.bursts.push({
        createMs: create.ms,
        removeMs: remove.ms,
        lvm,
        maxLvm: await sampler.stop(),
        lvmBusyMs: lvmOverlap(spans).busyMs,
        commands: spans.map((c) => [
          c.argv[0] === 'lvm' ? (c.argv[1] ?? 'lvm') : (c.argv[0] ?? ''),
          Math.round(c.startMs - startedMs),
          Math.round(c.endMs - c.startMs),
        ]),
      });
    };
    const lvmdBurst = async (round: number): Promise<void> => {
      const names = Array.from({ length: options.burst }, (_, i) => `${vg.name}-lb${round}-${i}`);
      const mark = l.commandMark;
      const changes = l.changes;
      const sampler = lvmChildSampler(l.pid);
      const create = await timed(() =>
        settleAll(
          names.map((name) =>
            l.call(
              'LVService',
              'CreateLV',
              { name, device_class: LVMD_DEVICE_CLASS, size_bytes: String(BURST_BYTES) },
              BURST_CALL_MS,
            ),
          ),
          'CreateLV',
        ),
      );
      await l.waitForChanges(changes + options.burst);
      const remove = await timed(() =>
        settleAll(
          names.map((name) =>
            l.call(
              'LVService',
              'RemoveLV',
              { name, device_class: LVMD_DEVICE_CLASS },
              BURST_CALL_MS,
            ),
          ),
          'RemoveLV',
        ),
      );
      await l.waitForChanges(changes + 2 * options.burst);
      sides.lvmd.bursts.push({
        createMs: create.ms,
        removeMs: remove.ms,
        lvm: l.commandsSince(mark).lvm,
        maxLvm: await sampler.stop(),
      });
    };
    for (let r = 0; r < options.burstRounds; r++) {
      const pair = [() => lvstampBurst(r), () => lvmdBurst(r)];
      for (const run of r % 2 === 0 ? pair : pair.reverse()) await run();
      const burstMs = (s: Side): string => {
        const b = s.bursts.at(-1);
        return b === undefined ? '-' : `${formatMs(b.createMs)} + ${formatMs(b.removeMs)}`;
      };
      context.progress(
        `peer: burst ${r + 1}/${options.burstRounds} of ${options.burst}: lvstamp ${burstMs(sides.lvstamp)}, lvmd ${burstMs(sides.lvmd)}`,
      );
    }
    await sleep(SETTLE_MS);
    sides.lvstamp.rssAfterWork = await d.rssMiB();
    sides.lvmd.rssAfterWork = await l.rssMiB();
    return sides;
  } catch (error) {
    context.progress(`peer: FAILED: ${error instanceof Error ? error.message : String(error)}`);
    if (driver !== null) {
      context.progress(
        `peer: lvstamp-csi is ${driver.state}; its last output:\n${driver.outputTail(40)}`,
      );
    }
    if (lvmd !== null) context.progress(`peer: lvmd is ${lvmd.state}`);
    const kernel = await runner.run(['dmesg']).catch(() => null);
    if (kernel !== null) {
      const oom = kernel.stdout.split('\n').filter((l) => /oom|killed process/i.test(l));
      context.progress(
        `peer: kernel: ${oom.length === 0 ? 'no OOM kill' : oom.slice(-5).join('\n')}`,
      );
    }
    // What was measured before the failure (the cycles, earlier bursts) is still worth keeping.
    if (partial !== null) {
      process.stdout.write(
        `peer-results-partial: ${JSON.stringify({ options, lvmPath, environment, sides: partial })}\n`,
      );
    }
    throw error;
  } finally {
    await lvmd?.stop();
    await driver?.stop();
    await cleanUp(context, vg);
    for (const problem of context.cleanupProblems.slice(cleanupBefore)) {
      context.progress(`peer: cleanup: ${problem}`);
    }
  }
}
