// Group 5: the driver's footprint. Start-up time to a ready socket, RSS when idle and after rounds of
// RPCs (no growth from round to round), and the lvm processes it starts per minute while nobody
// calls it (target zero: no polling, no cache refresh).
import * as grpc from '@grpc/grpc-js';
import type { BenchContext } from '../context.js';
import { BenchDriver, type CsiService } from '../driver.js';
import { cleanUp, createBenchVg } from '../fixture.js';
import { formatMs, median, MiB, round, sleep } from '../stats.js';
import type { Metric } from '../types.js';

/** One call of a round's mix and the status it must answer. */
export interface MixCall<S extends string> {
  readonly service: S;
  readonly method: string;
  readonly request: object;
  readonly code: grpc.status;
}

/**
 * The RPC mix of a round: calls a CO makes all the time that need no lvm
 * (identity, capabilities, node info) and malformed requests answered
 * INVALID_ARGUMENT before any work.
 */
export const MIX: readonly MixCall<CsiService>[] = [
  { service: 'Identity', method: 'Probe', request: {}, code: grpc.status.OK },
  { service: 'Identity', method: 'GetPluginInfo', request: {}, code: grpc.status.OK },
  { service: 'Identity', method: 'GetPluginCapabilities', request: {}, code: grpc.status.OK },
  {
    service: 'Controller',
    method: 'ControllerGetCapabilities',
    request: {},
    code: grpc.status.OK,
  },
  { service: 'Node', method: 'NodeGetCapabilities', request: {}, code: grpc.status.OK },
  { service: 'Node', method: 'NodeGetInfo', request: {}, code: grpc.status.OK },
  {
    service: 'Controller',
    method: 'CreateVolume',
    request: {},
    code: grpc.status.INVALID_ARGUMENT,
  },
  { service: 'Node', method: 'NodeStageVolume', request: {}, code: grpc.status.INVALID_ARGUMENT },
];
/** Calls in flight at once during a round. */
const CONCURRENCY = 8;
/** periodSeconds of the driver's liveness probe (deploy/kubernetes/daemonset.yaml), in ms. */
const LIVENESS_PERIOD_MS = 30_000;
/** Settle time after start and after a round before RSS is read, in ms. */
const SETTLE_MS = 2_000;

export async function footprint(context: BenchContext): Promise<Metric[]> {
  const { runner, scale } = context;
  const vg = await createBenchVg(runner, { sizeBytes: 256 * MiB });
  let driver: BenchDriver | null = null;
  try {
    const startups: number[] = [];
    for (let i = 0; i < scale.starts; i++) {
      driver = await BenchDriver.start({ dir: vg.dir, vgName: vg.name });
      startups.push(driver.startupMs);
      if (i < scale.starts - 1) {
        await driver.stop();
        driver = null;
      }
    }
    const d = driver as BenchDriver;
    await sleep(SETTLE_MS);
    const idleRss = await d.rssMiB();
    // Idle as deployed: nobody calls but the liveness-probe sidecar, Probe every 30 s.
    const idleMark = d.commandMark;
    const idleEnd = Date.now() + scale.idleSeconds * 1000;
    let probes = 0;
    while (Date.now() < idleEnd) {
      await d.measure('Identity', 'Probe', {});
      probes++;
      await sleep(Math.min(LIVENESS_PERIOD_MS, Math.max(idleEnd - Date.now(), 0)));
    }
    const idle = d.commandsSince(idleMark);
    const idlePerMinute = (idle.lvm * 60) / scale.idleSeconds;
    context.progress(
      `footprint: idle RSS ${idleRss.toFixed(1)} MiB, ${idle.lvm} lvm processes in ${scale.idleSeconds} s idle`,
    );

    const roundRss: number[] = [];
    const roundMark = d.commandMark;
    for (let r = 0; r < scale.rpcRounds; r++) {
      await rpcRound(
        (service, method, request) => d.call(service, method, request),
        MIX,
        scale.rpcsPerRound,
      );
      await sleep(SETTLE_MS);
      roundRss.push(await d.rssMiB());
      context.progress(
        `footprint: round ${r + 1}/${scale.rpcRounds}: ${scale.rpcsPerRound} RPCs, RSS ${roundRss.at(-1)?.toFixed(1)} MiB`,
      );
    }
    const roundProcesses = d.commandsSince(roundMark);
    // What stays: V8 returns the garbage of the rounds after some idle seconds (memory reducer).
    await sleep(scale.settleSeconds * 1000);
    const settledRss = await d.rssMiB();
    const lastRss = roundRss.at(-1) ?? idleRss;
    const firstRss = roundRss[0] ?? idleRss;
    return [
      {
        id: 'footprint.rss-idle',
        group: 'footprint',
        label: 'driver RSS, idle after start',
        value: round(idleRss, 1),
        unit: 'MiB',
        better: 'lower',
        target: { op: '<=', value: 80 },
        compared: true,
      },
      {
        id: 'footprint.rss-after-rpcs',
        group: 'footprint',
        label: `driver RSS after ${scale.rpcRounds} × ${scale.rpcsPerRound} RPCs`,
        value: round(lastRss, 1),
        unit: 'MiB',
        better: 'lower',
        target: { op: '<=', value: 80 },
        compared: true,
        note: `per round: ${roundRss.map((v) => v.toFixed(1)).join(', ')} MiB; ${roundProcesses.lvm} lvm processes`,
      },
      {
        id: 'footprint.rss-settled',
        group: 'footprint',
        label: `driver RSS ${scale.settleSeconds} s after the last round`,
        value: round(settledRss, 1),
        unit: 'MiB',
        better: 'lower',
        target: { op: '<=', value: 80 },
        compared: true,
        note: `idle after start ${idleRss.toFixed(1)} MiB`,
      },
      {
        id: 'footprint.rss-growth',
        group: 'footprint',
        label: 'RSS growth, first to last round',
        value: round(lastRss - firstRss, 1),
        unit: 'MiB',
        better: 'lower',
        // "No growth": within what V8's heap sizing moves between rounds.
        target: { op: '<=', value: 4 },
        compared: false,
      },
      {
        id: 'footprint.idle-lvm-per-minute',
        group: 'footprint',
        label: 'lvm processes per minute while idle',
        value: round(idlePerMinute, 2),
        unit: 'per-min',
        better: 'lower',
        target: { op: '<=', value: 0 },
        compared: true,
        note: `${idle.lvm} lvm + ${idle.other} other in ${scale.idleSeconds} s with ${probes} liveness Probe calls`,
      },
      {
        id: 'footprint.startup.ms',
        group: 'footprint',
        label: 'start-up to a ready socket',
        value: round(median(startups), 1),
        unit: 'ms',
        better: 'lower',
        compared: false,
        note: `median of ${scale.starts}: ${startups.map((ms) => formatMs(ms)).join(', ')}`,
      },
    ];
  } finally {
    await driver?.stop();
    await cleanUp(context, vg);
  }
}

/**
 * `count` calls of `mix` in turn through `call`, CONCURRENCY at a time.
 * @throws Error when a call answers other than its expected code.
 */
export async function rpcRound<S extends string>(
  call: (service: S, method: string, request: object) => Promise<unknown>,
  mix: readonly MixCall<S>[],
  count: number,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      const one = mix[next++ % mix.length];
      if (one === undefined) return;
      const code = await call(one.service, one.method, one.request).then(
        () => grpc.status.OK,
        (error: unknown) => (error as grpc.ServiceError).code,
      );
      if (code !== one.code) {
        throw new Error(
          `${one.service}.${one.method} answered ${grpc.status[code]}, expected ${grpc.status[one.code]}`,
        );
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}
