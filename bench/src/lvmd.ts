// TopoLVM's lvmd (github.com/topolvm/topolvm, cmd/lvmd) as a child process on a unix socket, driven
// over its own gRPC API (pkg/lvmd/proto/lvmd.proto, package `proto`). Neither the binary nor the proto
// is part of this repository: the peer comparison is given their paths (bench/README.md "Peer group").
// lvmd logs every lvm command it starts ("invoking command", with its argv) at verbosity 1 for
// changes and 4 for reports; at `--zap-log-level=4` the log counts its processes, as the driver's
// debug log counts lvstamp's.
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { processRssMiB } from './driver.js';
import { isLvmCommand, type ProcessCount } from './exec.js';
import { GrpcServer, loadClients, ServerProcess, waitUntilReady } from './grpc-child.js';
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

/** A running lvmd: its clients, its log and its process. */
export class LvmdPeer extends GrpcServer<LvmdService> {
  readonly #log: LvmdLog;

  private constructor(
    server: ServerProcess,
    clients: Record<LvmdService, grpc.Client>,
    log: LvmdLog,
  ) {
    super(server, clients, (s) => `lvmd ${s}`);
    this.#log = log;
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
    // zap writes to stderr; stdout carries nothing of interest, both are read alike.
    const server = new ServerProcess(
      options.binary,
      [`--config=${config}`, '--metrics-bind-address=', '--zap-log-level=4'],
      (line) => {
        readLvmdLogLine(line, log);
      },
    );
    let clients: Record<LvmdService, grpc.Client>;
    try {
      clients = loadClients(options.proto, 'proto', ['LVService', 'VGService'], `unix://${socket}`);
    } catch (error) {
      // lvmd runs already: stopped, or it would keep this process alive.
      await server.stop();
      throw new Error(`${options.proto}: not lvmd's proto: ${(error as Error).message}`, {
        cause: error,
      });
    }
    const peer = new LvmdPeer(server, clients, log);
    try {
      await waitUntilReady(
        server,
        'lvmd',
        async () =>
          existsSync(socket) &&
          (await peer
            .call('VGService', 'GetFreeBytes', { device_class: 'no-such-class' }, 5_000)
            .then(
              () => false,
              (e: unknown) => (e as grpc.ServiceError).code === grpc.status.NOT_FOUND,
            )),
        () => log.text.join(''),
      );
    } catch (error) {
      await peer.stop();
      throw error;
    }
    return peer;
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

  /** Waits until the log holds `count` completions (deadline 300 s: a loaded, emulated host). */
  async waitForChanges(count: number): Promise<void> {
    const deadline = Date.now() + 300_000;
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
