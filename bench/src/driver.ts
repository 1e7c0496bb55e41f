// The built CSI driver (apps/csi-driver/dist/lvstamp-csi.mjs) as a child process on a unix socket, as a
// CO's plugin supervisor starts it, at log level debug so that every command it runs is one log line
// (`msg: "command"`, see apps/csi-driver/src/production.ts): that is how the benchmarks count the lvm
// processes behind a call without touching the driver's code path.
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { countCommands, type CommandSpan, type ProcessCount } from './exec.js';
import { GrpcServer, loadClients, ServerProcess, waitUntilReady } from './grpc-child.js';
import { BENCH_OWNER_ID } from './fixture.js';
import { sleep } from './stats.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The built driver entrypoint (one bundled file, as the image runs it). */
export const DRIVER_MAIN = join(REPO_ROOT, 'apps/csi-driver/dist/lvstamp-csi.mjs');
/** The driver's own csi.proto (package csi.v1). */
export const CSI_PROTO = join(REPO_ROOT, 'apps/csi-driver/proto/csi.proto');
/** Name of the one device class the benchmarks configure. */
export const DEVICE_CLASS = 'bench';
/** The volume capability the benchmarks ask for: an ext4 filesystem, one node writing. */
export const MOUNT_CAPABILITY = {
  mount: { fs_type: 'ext4', mount_flags: [] },
  access_mode: { mode: 'SINGLE_NODE_WRITER' },
};

export type CsiService = 'Identity' | 'Controller' | 'Node';

/** A thin device class (docs/DESIGN.md §4 "Thin device classes"). */
export interface ThinClassOptions {
  /** The thin pool's LV name in the class's volume group. */
  readonly pool: string;
  /** Size the driver creates the pool with when it is absent, in bytes. */
  readonly poolSizeBytes: number;
  /** How far the class may promise beyond the pool's size (a positive number). */
  readonly overprovisionRatio: number;
}

/**
 * The driver's config file: one default device class {@link DEVICE_CLASS} on
 * `vgName` with `wipe: none`, thick, or thin when `thin` is given
 * (docs/DESIGN.md §4). YAML flow mappings, one line per class.
 */
export function driverConfigYaml(vgName: string, thin?: ThinClassOptions): string {
  const thinKeys =
    thin === undefined
      ? ''
      : ` type: thin, thinPool: ${thin.pool}, thinPoolSize: ${thin.poolSizeBytes}, overprovisionRatio: ${thin.overprovisionRatio},`;
  return `deviceClasses:\n  ${DEVICE_CLASS}: { volumeGroup: ${vgName},${thinKeys} wipe: none, default: true }\n`;
}

/** One `command` line of the driver's log. */
interface CommandLine {
  readonly argv: readonly string[];
  /** Wall time the driver measured, in milliseconds. */
  readonly durationMs: number;
  /** When it ended (the log line's `time`, epoch milliseconds), when the line has one. */
  readonly endMs: number | null;
}

/**
 * Epoch milliseconds of a log line's `time`: an ISO 8601 instant, the shape
 * of every lvstamp log line (docs/logging.md), or epoch milliseconds (pino's
 * default); null for anything else.
 */
export function logLineTimeMs(time: unknown): number | null {
  if (typeof time === 'number' && Number.isFinite(time)) return time;
  if (typeof time !== 'string') return null;
  const ms = Date.parse(time);
  return Number.isNaN(ms) ? null : ms;
}

/** A running driver: its client, its log and its process. */
export class BenchDriver extends GrpcServer<CsiService> {
  /** Milliseconds from spawn until Identity.Probe answered ready. */
  startupMs = 0;
  readonly #log: { commands: CommandLine[]; rpcs: number; text: string[] };

  private constructor(
    server: ServerProcess,
    clients: Record<CsiService, grpc.Client>,
    log: { commands: CommandLine[]; rpcs: number; text: string[] },
  ) {
    super(server, clients, (s) => `csi.v1.${s}`);
    this.#log = log;
  }

  /**
   * Starts the driver with one default device class on `vgName` (wipe
   * none; thin when `thin` is given, {@link driverConfigYaml}), its socket, config and host lock in `dir`, and waits until
   * Identity.Probe answers ready (deadline 180 s).
   * @throws Error with the driver's output when it exits or is not ready.
   */
  static async start(options: {
    dir: string;
    vgName: string;
    thin?: ThinClassOptions;
  }): Promise<BenchDriver> {
    if (!existsSync(DRIVER_MAIN)) throw new Error(`${DRIVER_MAIN} is missing: pnpm build`);
    const socket = join(options.dir, 'csi.sock');
    const config = join(options.dir, 'config.yaml');
    await writeFile(config, driverConfigYaml(options.vgName, options.thin));
    const log = { commands: [] as CommandLine[], rpcs: 0, text: [] as string[] };
    const started = performance.now();
    const server = new ServerProcess(
      process.execPath,
      [
        DRIVER_MAIN,
        '--endpoint',
        `unix://${socket}`,
        '--node-id',
        'bench-node',
        '--config',
        config,
        '--lock-file',
        join(options.dir, 'host.lock'),
        '--owner-id',
        BENCH_OWNER_ID,
        '--log-level',
        'debug',
      ],
      (line, stream) => {
        if (stream === 'stdout') readLogLine(line, log);
        else log.text.push(`${line}\n`);
      },
    );
    const clients = loadClients(
      CSI_PROTO,
      'csi.v1',
      ['Identity', 'Controller', 'Node'],
      `unix://${socket}`,
    );
    const driver = new BenchDriver(server, clients, log);
    try {
      await waitUntilReady(
        server,
        'lvstamp-csi',
        async () =>
          existsSync(socket) &&
          (await driver
            .call('Identity', 'Probe', {}, 5_000)
            .then((r) => (r as { ready?: { value?: boolean } }).ready?.value === true)
            .catch(() => false)),
        () => log.text.join(''),
      );
    } catch (error) {
      driver.closeClients();
      throw error;
    }
    driver.startupMs = performance.now() - started;
    return driver;
  }

  /**
   * One call that must succeed, timed, with the processes the driver started
   * for it (read from its log once the call's own `rpc` line is there).
   * @throws Error naming the call and the gRPC status when it fails.
   */
  async measure(
    service: CsiService,
    method: string,
    request: object,
  ): Promise<{ ms: number; processes: ProcessCount; response: unknown }> {
    const commandMark = this.#log.commands.length;
    const rpcMark = this.#log.rpcs;
    const start = performance.now();
    let response: unknown;
    try {
      response = await this.call(service, method, request);
    } catch (error) {
      const e = error as grpc.ServiceError;
      throw new Error(`${service}.${method} failed: ${grpc.status[e.code]} ${e.details}`);
    }
    const ms = performance.now() - start;
    await this.waitForRpcLines(rpcMark + 1);
    return { ms, processes: countCommands(this.#log.commands.slice(commandMark)), response };
  }

  /** Number of command lines logged so far (a mark for {@link commandsSince}). */
  get commandMark(): number {
    return this.#log.commands.length;
  }

  /** Processes logged since `mark`. */
  commandsSince(mark: number): ProcessCount {
    return countCommands(this.#log.commands.slice(mark));
  }

  /**
   * The commands logged from `mark` (up to `end`, exclusive) as time spans (epoch ms; start = end −
   * duration), for telling how many ran at once. Lines without a time are left out.
   */
  spansSince(mark: number, end?: number): CommandSpan[] {
    return this.#log.commands
      .slice(mark, end)
      .flatMap((c) =>
        c.endMs === null ? [] : [{ argv: c.argv, startMs: c.endMs - c.durationMs, endMs: c.endMs }],
      );
  }

  /** The last `lines` lines of what the driver logged besides commands and rpc lines. */
  outputTail(lines: number): string {
    return this.#log.text.slice(-lines).join('');
  }

  /** Number of `rpc` lines logged so far. */
  get rpcLines(): number {
    return this.#log.rpcs;
  }

  /** Waits until the log holds `count` rpc lines (deadline 300 s: a loaded, emulated host). */
  async waitForRpcLines(count: number): Promise<void> {
    const deadline = Date.now() + 300_000;
    while (this.#log.rpcs < count) {
      if (Date.now() > deadline)
        throw new Error(`the driver logged ${this.#log.rpcs} rpc lines, expected ${count}`);
      await sleep(2);
    }
  }

  /** Resident set size of the driver process in MiB (/proc/<pid>/status VmRSS). */
  rssMiB(): Promise<number> {
    return processRssMiB(this.pid);
  }
}

/**
 * Resident set size of process `pid` in MiB (/proc/<pid>/status VmRSS).
 * @throws Error when the process is gone or the file has no VmRSS.
 */
export async function processRssMiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1];
  if (kib === undefined) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(kib) / 1024;
}

function readLogLine(
  line: string,
  log: { commands: CommandLine[]; rpcs: number; text: string[] },
): void {
  if (line.trim() === '') return;
  let entry: { msg?: unknown; argv?: unknown; durationMs?: unknown; time?: unknown };
  try {
    entry = JSON.parse(line) as typeof entry;
  } catch {
    log.text.push(`${line}\n`);
    return;
  }
  if (entry.msg === 'command' && Array.isArray(entry.argv)) {
    log.commands.push({
      argv: entry.argv.map(String),
      durationMs: typeof entry.durationMs === 'number' ? entry.durationMs : 0,
      endMs: logLineTimeMs(entry.time),
    });
  } else if (entry.msg === 'rpc') {
    log.rpcs += 1;
  } else if (log.text.length < 200) {
    log.text.push(`${line}\n`);
  }
}
