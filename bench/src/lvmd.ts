// TopoLVM's lvmd (github.com/topolvm/topolvm, cmd/lvmd) as a child process on a unix socket, driven
// over its own gRPC API (pkg/lvmd/proto/lvmd.proto, package `proto`). Neither the binary nor the proto
// is part of this repository: the peer comparison is given their paths (bench/README.md "Peer group").
// lvmd logs every lvm command it starts ("invoking command", with its argv) at verbosity 1 for
// changes and 4 for reports; at `--zap-log-level=4` the log counts its processes, as the driver's
// debug log counts lvstamp's.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { processRssMiB } from './driver.js';
import { isLvmCommand, type ProcessCount } from './exec.js';
import { sleep } from './stats.js';

/** Name of lvmd's one device class in the peer comparison. */
export const LVMD_DEVICE_CLASS = 'bench';

export type LvmdService = 'LVService' | 'VGService';

/**
 * lvmd's config file (cmd/lvmd/app/config.go): its socket, one thick
 * default device class on `vgName` with no spare (lvmd's default spares
 * 10 GiB), and `lvmPath` as the whole lvm command prefix, so that lvmd runs
 * lvm directly instead of through `nsenter -t 1` (its container default).
 */
export function lvmdConfigYaml(socket: string, vgName: string, lvmPath: string): string {
  return [
    `socket-name: ${socket}`,
    `lvm-command-prefix: [${lvmPath}]`,
    'device-classes:',
    `  - { name: ${LVMD_DEVICE_CLASS}, volume-group: ${vgName}, default: true, spare-gb: 0 }`,
    '',
  ].join('\n');
}

/** What lvmd's log gave so far. */
export interface LvmdLog {
  /** The argv of every lvm command lvmd started, in log order. */
  readonly commands: (readonly string[])[];
  /** CreateLV and RemoveLV calls that finished ("created a new LV", "removed a LV"). */
  changes: number;
  /** Lines that are not JSON or not one of the above (the first 200, for error messages). */
  readonly text: string[];
}

/** Reads one line of lvmd's JSON log (controller-runtime's zap) into `log`. */
export function readLvmdLogLine(line: string, log: LvmdLog): void {
  if (line.trim() === '') return;
  let entry: { msg?: unknown; args?: unknown };
  try {
    entry = JSON.parse(line) as typeof entry;
  } catch {
    if (log.text.length < 200) log.text.push(`${line}\n`);
    return;
  }
  if (entry.msg === 'invoking command' && Array.isArray(entry.args)) {
    log.commands.push(entry.args.map(String));
  } else if (entry.msg === 'created a new LV' || entry.msg === 'removed a LV') {
    log.changes += 1;
  } else if (log.text.length < 200) {
    log.text.push(`${line}\n`);
  }
}

type UnaryMethod = (
  request: object,
  metadata: grpc.Metadata,
  options: grpc.CallOptions,
  callback: (error: grpc.ServiceError | null, response?: unknown) => void,
) => grpc.ClientUnaryCall;

/** A running lvmd: its clients, its log and its process. */
export class LvmdPeer {
  readonly pid: number;
  readonly #child: ChildProcess;
  readonly #clients: Record<LvmdService, grpc.Client>;
  readonly #log: LvmdLog;
  readonly #exited: Promise<number | null>;

  private constructor(args: {
    child: ChildProcess;
    clients: Record<LvmdService, grpc.Client>;
    log: LvmdLog;
    exited: Promise<number | null>;
  }) {
    this.#child = args.child;
    this.pid = args.child.pid ?? -1;
    this.#clients = args.clients;
    this.#log = args.log;
    this.#exited = args.exited;
  }

  /**
   * Starts `binary` with {@link lvmdConfigYaml} in `dir` (metrics off) and
   * waits until it answers: GetFreeBytes of an unknown device class must
   * come back NOT_FOUND, which lvmd decides before running lvm (deadline
   * 180 s).
   * @throws Error with lvmd's output when it exits or does not answer.
   */
  static async start(options: {
    binary: string;
    proto: string;
    dir: string;
    vgName: string;
    lvmPath: string;
  }): Promise<LvmdPeer> {
    for (const path of [options.binary, options.proto]) {
      if (!existsSync(path)) throw new Error(`${path} is missing`);
    }
    const socket = join(options.dir, 'lvmd.sock');
    const config = join(options.dir, 'lvmd.yaml');
    await writeFile(config, lvmdConfigYaml(socket, options.vgName, options.lvmPath));
    const log: LvmdLog = { commands: [], changes: 0, text: [] };
    const child = spawn(
      options.binary,
      [`--config=${config}`, '--metrics-bind-address=', '--zap-log-level=4'],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LC_ALL: 'C' } },
    );
    let exitCode: number | null | undefined;
    const exited = new Promise<number | null>((resolve) => {
      child.on('exit', (code) => {
        exitCode = code;
        resolve(code);
      });
    });
    // zap writes to stderr; stdout carries lvm's own output that lvmd logs line by line.
    for (const stream of [child.stdout, child.stderr]) {
      let partial = '';
      stream.on('data', (data: Buffer) => {
        const lines = (partial + data.toString('utf8')).split('\n');
        partial = lines.pop() ?? '';
        for (const line of lines) readLvmdLogLine(line, log);
      });
    }
    const definition = protoLoader.loadSync(options.proto, {
      keepCase: true,
      longs: String,
      enums: String,
      defaults: true,
      oneofs: true,
    });
    const root = grpc.loadPackageDefinition(definition) as unknown as {
      proto: Record<LvmdService, grpc.ServiceClientConstructor>;
    };
    const make = (s: LvmdService): grpc.Client =>
      new root.proto[s](`unix://${socket}`, grpc.credentials.createInsecure());
    const peer = new LvmdPeer({
      child,
      clients: { LVService: make('LVService'), VGService: make('VGService') },
      log,
      exited,
    });
    const deadline = Date.now() + 180_000;
    for (;;) {
      if (exitCode !== undefined) {
        peer.#closeClients();
        throw new Error(
          `lvmd exited ${String(exitCode)} before it answered:\n${log.text.join('')}`,
        );
      }
      if (existsSync(socket)) {
        const code = await peer
          .call('VGService', 'GetFreeBytes', { device_class: 'no-such-class' }, 5_000)
          .then(
            () => grpc.status.OK,
            (e: unknown) => (e as grpc.ServiceError).code,
          );
        if (code === grpc.status.NOT_FOUND) break;
      }
      if (Date.now() > deadline) {
        await peer.stop();
        throw new Error(`lvmd did not answer after 180 s:\n${log.text.join('')}`);
      }
      await sleep(20);
    }
    return peer;
  }

  /** `service.method(request)`; rejects with the grpc ServiceError. */
  call(
    service: LvmdService,
    method: string,
    request: object,
    timeoutMs = 600_000,
  ): Promise<unknown> {
    const client = this.#clients[service];
    const fn = (client as unknown as Record<string, UnaryMethod | undefined>)[method];
    if (fn === undefined) throw new Error(`lvmd ${service} has no method ${method}`);
    return new Promise((resolve, reject) => {
      fn.call(
        client,
        request,
        new grpc.Metadata(),
        { deadline: Date.now() + timeoutMs },
        (e, r) => {
          if (e) reject(e);
          else resolve(r);
        },
      );
    });
  }

  /**
   * One CreateLV or RemoveLV that must succeed, timed, with the lvm
   * processes lvmd logged for it (read once its own "created"/"removed"
   * line is there).
   * @throws Error naming the call and the gRPC status when it fails.
   */
  async measureChange(
    method: 'CreateLV' | 'RemoveLV',
    request: object,
  ): Promise<{ ms: number; processes: ProcessCount }> {
    const mark = this.#log.commands.length;
    const changes = this.#log.changes;
    const start = performance.now();
    try {
      await this.call('LVService', method, request);
    } catch (error) {
      const e = error as grpc.ServiceError;
      throw new Error(`lvmd ${method} failed: ${grpc.status[e.code]} ${e.details}`);
    }
    const ms = performance.now() - start;
    await this.waitForChanges(changes + 1);
    return { ms, processes: this.commandsSince(mark) };
  }

  /** Number of commands logged so far (a mark for {@link commandsSince}). */
  get commandMark(): number {
    return this.#log.commands.length;
  }

  /** Number of CreateLV/RemoveLV completions logged so far. */
  get changes(): number {
    return this.#log.changes;
  }

  /**
   * Processes logged since `mark`, lvm ones counted as lvm processes and
   * named by their subcommand (`/usr/sbin/lvm vgs …` is `vgs`), so that both
   * drivers' sequences read alike. lvmd does not log durations: `ms` is 0.
   */
  commandsSince(mark: number): ProcessCount {
    return countLvmdCommands(this.#log.commands.slice(mark));
  }

  /** Waits until the log holds `count` completions (deadline 30 s). */
  async waitForChanges(count: number): Promise<void> {
    const deadline = Date.now() + 30_000;
    while (this.#log.changes < count) {
      if (Date.now() > deadline)
        throw new Error(`lvmd logged ${this.#log.changes} completions, expected ${count}`);
      await sleep(2);
    }
  }

  /** Resident set size of lvmd in MiB. */
  rssMiB(): Promise<number> {
    return processRssMiB(this.pid);
  }

  /** SIGTERM, SIGKILL after 30 s; resolves to the exit code. */
  async stop(): Promise<number | null> {
    this.#closeClients();
    this.#child.kill('SIGTERM');
    const timer = setTimeout(() => this.#child.kill('SIGKILL'), 30_000);
    try {
      return await this.#exited;
    } finally {
      clearTimeout(timer);
    }
  }

  #closeClients(): void {
    for (const client of Object.values(this.#clients)) client.close();
  }
}

/** {@link LvmdPeer.commandsSince} for a list of logged argvs. */
export function countLvmdCommands(commands: readonly (readonly string[])[]): ProcessCount {
  const named = commands.map((argv) => {
    const program = (argv[0] ?? '').split('/').pop() ?? '';
    return program === 'lvm'
      ? { lvm: true, name: argv[1] ?? 'lvm' }
      : { lvm: isLvmCommand(argv), name: program };
  });
  const lvm = named.filter((c) => c.lvm).length;
  return {
    lvm,
    other: named.length - lvm,
    sequence: named.map((c) => c.name).join(' '),
    ms: 0,
  };
}
