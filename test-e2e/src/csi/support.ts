// Helpers of the CSI conformance suite: the BUILT driver (apps/csi-driver/dist/lvstamp-csi.mjs) as a child
// process on a unix socket, and a gRPC client made from the driver's own proto exactly as a
// container orchestrator makes one. Builds on the harness (test-e2e/src/harness), never changes it.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { open, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import {
  REPO_ROOT,
  cleanups,
  createTempDir,
  shOk,
  type CleanupRegistry,
} from '../harness/index.js';

export const MiB = 1024 * 1024;
export const GiB = 1024 * MiB;
/** Data area offset of header v1 (DESIGN.md §4), in bytes. */
export const DATA_OFFSET = MiB;
/** The built driver entrypoint. */
export const DRIVER_MAIN = `${REPO_ROOT}apps/csi-driver/dist/lvstamp-csi.mjs`;
/** The driver's own declaration of the CSI wire interface (package csi.v1). */
export const CSI_PROTO = `${REPO_ROOT}apps/csi-driver/proto/csi.proto`;
/** `--node-id` of every driver the suite starts. */
export const NODE_ID = 'e2e-node';
/** Topology key of lvstamp volumes (DESIGN.md §7). */
export const TOPOLOGY_KEY = 'topology.lvstamp.io/node';
/** Name of the one device class the suite configures (the default). */
export const DEVICE_CLASS = 'e2e';
/** Prefix of every console line the suite prints for quoting. */
export const TAG = '[csi-e2e]';

/** A gRPC failure as the client sees it: status code and details. */
export interface RpcError {
  readonly code: grpc.status;
  readonly details: string;
}

type Callback = (error: grpc.ServiceError | null, response?: unknown) => void;
type UnaryMethod = (
  request: object,
  metadata: grpc.Metadata,
  options: grpc.CallOptions,
  callback: Callback,
) => grpc.ClientUnaryCall;

/** The CSI services a client talks to. */
export type CsiService = 'Identity' | 'Controller' | 'Node';

/**
 * A CSI client over the driver's unix socket: proto-loader with the options
 * a Node.js CO would use (snake_case names, int64 as decimal strings, enums
 * by name, defaults filled in, the oneof member's name).
 */
export class CsiClient {
  readonly #clients: Record<CsiService, grpc.Client>;

  constructor(address: string) {
    const definition = protoLoader.loadSync(CSI_PROTO, {
      keepCase: true,
      longs: String,
      enums: String,
      defaults: true,
      oneofs: true,
    });
    const root = grpc.loadPackageDefinition(definition) as unknown as {
      csi: { v1: Record<CsiService, grpc.ServiceClientConstructor> };
    };
    const make = (service: CsiService): grpc.Client =>
      new root.csi.v1[service](address, grpc.credentials.createInsecure());
    this.#clients = {
      Identity: make('Identity'),
      Controller: make('Controller'),
      Node: make('Node'),
    };
  }

  /** Calls `service.method(request)`; rejects with the ServiceError (code, details). */
  raw(service: CsiService, method: string, request: object, timeoutMs = 300_000): Promise<unknown> {
    const client = this.#clients[service];
    const fn = (client as unknown as Record<string, UnaryMethod | undefined>)[method];
    if (fn === undefined) throw new Error(`csi.v1.${service} has no method ${method}`);
    return new Promise((resolve, reject) => {
      fn.call(
        client,
        request,
        new grpc.Metadata(),
        { deadline: Date.now() + timeoutMs },
        (error, response) => {
          if (error) reject(error);
          else resolve(response);
        },
      );
    });
  }

  /** A call that must succeed; the response shaped as T (the CSI message, snake_case). */
  async ok<T>(service: CsiService, method: string, request: object = {}): Promise<T> {
    try {
      return (await this.raw(service, method, request)) as T;
    } catch (error) {
      const e = error as grpc.ServiceError;
      throw new Error(
        `${service}.${method} failed: ${grpc.status[e.code]} ${e.details} (request ${JSON.stringify(request)})`,
      );
    }
  }

  /** A call that must fail with `code`; returns the failure. */
  async fails(
    code: grpc.status,
    service: CsiService,
    method: string,
    request: object = {},
  ): Promise<RpcError> {
    const outcome = await this.outcome(service, method, request);
    expect(
      outcome.code === grpc.status.OK ? 'OK' : grpc.status[outcome.code],
      `${service}.${method}(${JSON.stringify(request)}): ${outcome.details}`,
    ).toBe(grpc.status[code]);
    return outcome;
  }

  /** The status of a call: OK with the response, or the failure's code and details. */
  async outcome(
    service: CsiService,
    method: string,
    request: object = {},
  ): Promise<RpcError & { readonly response?: unknown }> {
    try {
      const response = await this.raw(service, method, request);
      return { code: grpc.status.OK, details: '', response };
    } catch (error) {
      const e = error as grpc.ServiceError;
      return { code: e.code, details: e.details };
    }
  }

  close(): void {
    for (const client of Object.values(this.#clients)) client.close();
  }
}

/** Options of {@link startDriver}. */
export interface DriverOptions {
  /** Directory of the socket, config, lock file and (for tests) mount points. */
  readonly dir: string;
  /** The volume group of the default device class. */
  readonly vgName: string;
  /** Owner ID written into headers (32 hex digits). */
  readonly ownerId: string;
  /** The driver's whole config file instead of driverConfigYaml(vgName). */
  readonly configYaml?: string;
  /** `--log-level` (default info); at debug every external command is one `command` line. */
  readonly logLevel?: 'debug' | 'info';
}

/** A running driver and a client connected to it. */
export interface RunningDriver {
  readonly socket: string;
  readonly client: CsiClient;
  /** stdout + stderr of the process so far (pino JSON lines). */
  output(): string;
  /** SIGTERM, then waits (SIGKILL after 30 s); resolves to the exit code (null: killed). */
  stop(): Promise<number | null>;
}

/**
 * The configuration file the suite gives the driver: one default device
 * class on the test VG, no wipe (zeroing a volume is minutes under emulation).
 */
export function driverConfigYaml(vgName: string): string {
  return `deviceClasses:\n  ${DEVICE_CLASS}: { volumeGroup: ${vgName}, wipe: none, default: true }\ndefaultCapacityBytes: ${16 * MiB}\n`;
}

/**
 * Starts `node apps/csi-driver/dist/lvstamp-csi.mjs` as a CO's plugin supervisor
 * would: `--endpoint unix://<dir>/csi.sock --node-id e2e-node --config
 * <dir>/config.yaml --lock-file <dir>/host.lock --log-level info|debug`, and waits until the socket
 * exists and Identity.Probe answers ready (deadline 120 s). Registers its stop
 * with the cleanup registry before spawning, so a failing test never leaves
 * it running.
 * @throws Error with the driver's output when it exits or is not ready in time.
 */
export async function startDriver(
  options: DriverOptions,
  registry: CleanupRegistry = cleanups,
): Promise<RunningDriver> {
  if (!existsSync(DRIVER_MAIN)) throw new Error(`${DRIVER_MAIN} is missing: build the driver`);
  const socket = join(options.dir, 'csi.sock');
  const config = join(options.dir, 'config.yaml');
  await writeFile(config, options.configYaml ?? driverConfigYaml(options.vgName));
  const chunks: string[] = [];
  const state: { exited: boolean; code: number | null; child: ChildProcess | null } = {
    exited: false,
    code: null,
    child: null,
  };
  let markExited: (code: number | null) => void = () => undefined;
  const exited = new Promise<number | null>((resolve) => {
    markExited = resolve;
  });
  registry.add('stop the CSI driver', async () => {
    if (state.child !== null && !state.exited) await stopChild(state.child, exited);
  });
  const child = spawn(
    process.execPath,
    [
      DRIVER_MAIN,
      '--endpoint',
      `unix://${socket}`,
      '--node-id',
      NODE_ID,
      '--config',
      config,
      '--lock-file',
      join(options.dir, 'host.lock'),
      '--owner-id',
      options.ownerId,
      '--log-level',
      options.logLevel ?? 'info',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LC_ALL: 'C' } },
  );
  state.child = child;
  child.stdout.on('data', (data: Buffer) => chunks.push(data.toString('utf8')));
  child.stderr.on('data', (data: Buffer) => chunks.push(data.toString('utf8')));
  child.on('exit', (code) => {
    state.exited = true;
    state.code = code;
    markExited(code);
  });
  const client = new CsiClient(`unix://${socket}`);
  const output = (): string => chunks.join('');
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (state.exited) {
      client.close();
      throw new Error(`lvstamp-csi exited ${String(state.code)} before it was ready:\n${output()}`);
    }
    if (existsSync(socket)) {
      const probe = await client.outcome('Identity', 'Probe', {});
      const ready = (probe.response as { ready?: { value: boolean } } | undefined)?.ready?.value;
      if (probe.code === grpc.status.OK && ready === true) break;
    }
    if (Date.now() > deadline) {
      client.close();
      throw new Error(`lvstamp-csi not ready after 120 s:\n${output()}`);
    }
    await sleep(100);
  }
  return {
    socket,
    client,
    output,
    stop: async () => {
      client.close();
      return state.exited ? state.code : stopChild(child, exited);
    },
  };
}

async function stopChild(
  child: ChildProcess,
  exited: Promise<number | null>,
): Promise<number | null> {
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  try {
    return await exited;
  } finally {
    clearTimeout(timer);
  }
}

/** A temp dir (unmounted and removed at cleanup) for the driver's socket, config and mounts. */
export async function driverDir(): Promise<string> {
  return createTempDir();
}

/** A mount capability (`access_type: mount`) for CSI requests. */
export function mountCapability(fsType = 'ext4', mode = 'SINGLE_NODE_WRITER'): object {
  return { mount: { fs_type: fsType, mount_flags: [] }, access_mode: { mode } };
}

/** A raw block capability (`access_type: block`) for CSI requests. */
export function blockCapability(mode = 'SINGLE_NODE_WRITER'): object {
  return { block: {}, access_mode: { mode } };
}

/** CreateVolumeResponse.volume as proto-loader returns it (int64 as a decimal string). */
export interface VolumeMsg {
  readonly volume_id: string;
  readonly capacity_bytes: string;
  readonly volume_context: Record<string, string>;
  readonly accessible_topology: { segments: Record<string, string> }[];
}

/** One row of `lvs` for assertions: every value is lvm's string, sizes in bytes. */
export interface LvRow {
  readonly lv_name: string;
  readonly lv_uuid: string;
  readonly lv_size: string;
  readonly lv_dm_path: string;
}

/** Every LV of `vgName` from one `lvs` JSON report, sizes in bytes. */
export async function lvRows(vgName: string): Promise<LvRow[]> {
  const result = await shOk([
    'lvs',
    '--reportformat',
    'json',
    '--units',
    'b',
    '--nosuffix',
    '-o',
    'lv_name,lv_uuid,lv_size,lv_dm_path',
    vgName,
  ]);
  const report = JSON.parse(result.stdout) as { report: { lv: LvRow[] }[] };
  return report.report[0]?.lv ?? [];
}

/** Free bytes of `vgName` (`vgs -o vg_free`). */
export async function vgFreeBytes(vgName: string): Promise<number> {
  const result = await shOk([
    'vgs',
    '--noheadings',
    '--units',
    'b',
    '--nosuffix',
    '-o',
    'vg_free',
    vgName,
  ]);
  return Number(result.stdout.trim());
}

/** The header fields this suite checks, decoded from sector 0 by the DESIGN.md §4 table. */
export interface HeaderOnDisk {
  readonly volumeId: string;
  readonly ownerId: string;
  readonly createdAtMs: number;
  readonly requestedBytes: number;
  readonly name: string;
}

/**
 * Reads sector 0 of an LV (its `/dev/mapper` path from lvs) and decodes it
 * here, independently of the core: magic, version 1, CRC-32 of bytes 0–507.
 * @throws Error when the header is not valid.
 */
export async function headerOf(lvDevice: string): Promise<HeaderOnDisk> {
  const handle = await open(lvDevice, 'r');
  const b = Buffer.alloc(512);
  try {
    await handle.read(b, 0, 512, 0);
  } finally {
    await handle.close();
  }
  const { crc32 } = await import('node:zlib');
  if (b.subarray(0, 8).toString('latin1') !== 'LVSTAMP\0') throw new Error(`${lvDevice}: no magic`);
  if (crc32(b.subarray(0, 508)) !== b.readUInt32LE(508))
    throw new Error(`${lvDevice}: bad checksum`);
  const nameLength = b.readUInt16LE(72);
  return {
    volumeId: b.subarray(16, 32).toString('hex'),
    ownerId: b.subarray(32, 48).toString('hex'),
    createdAtMs: Number(b.readBigUInt64LE(48)),
    requestedBytes: Number(b.readBigUInt64LE(64)),
    name: b.subarray(74, 74 + nameLength).toString('utf8'),
  };
}

/** Mount entries (mountinfo fields) whose mount point is exactly `path`. */
export async function mountsAt(path: string): Promise<{ root: string; device: string }[]> {
  const text = await readFile('/proc/self/mountinfo', 'utf8');
  return text
    .split('\n')
    .map((line) => line.split(' '))
    .filter((f) => f[4] === path)
    .map((f) => ({ root: f[3] ?? '', device: f[2] ?? '' }));
}

/** Runs `fn` and records its wall time in `into` (milliseconds). */
export async function timed<T>(into: number[], fn: () => Promise<T>): Promise<T> {
  const started = performance.now();
  try {
    return await fn();
  } finally {
    into.push(performance.now() - started);
  }
}

/** The median of `values` (milliseconds), rounded to 1 ms; NaN for none. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = Math.floor(sorted.length / 2);
  const value =
    sorted.length % 2 === 1
      ? (sorted[mid] ?? 0)
      : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
  return Math.round(value);
}

/** Prints `[csi-e2e] median <what> <ms> ms over <n> calls` for quoting. */
export function reportMedian(what: string, values: readonly number[]): void {
  console.log(
    `${TAG} median ${what} ${median(values)} ms over ${values.length} calls (VM wall time)`,
  );
}

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The volume ID rule (DESIGN.md §3), computed by the tests, not by the code under test. */
export { idOf } from '../scenarios/support.js';

/** A fresh volume name: `<prefix>-<6 hex digits>`. */
export const unique = (prefix: string): string => `${prefix}-${randomBytes(3).toString('hex')}`;
