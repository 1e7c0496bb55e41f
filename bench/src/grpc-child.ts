// What the benchmarks need of a gRPC server run as a child process on a unix socket (the lvstamp
// driver, TopoLVM's lvmd): its clients from a proto file, unary calls with a deadline, its output read
// line by line, and a stop that waits for its exit.
import { spawn, type ChildProcess } from 'node:child_process';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

type UnaryMethod = (
  request: object,
  metadata: grpc.Metadata,
  options: grpc.CallOptions,
  callback: (error: grpc.ServiceError | null, response?: unknown) => void,
) => grpc.ClientUnaryCall;

/**
 * One client per service of `protoPath`'s package `packageName` (dotted,
 * e.g. `csi.v1`), all on `address` without TLS.
 * @throws Error when the package or a service is not in the proto.
 */
export function loadClients<S extends string>(
  protoPath: string,
  packageName: string,
  services: readonly S[],
  address: string,
): Record<S, grpc.Client> {
  const definition = protoLoader.loadSync(protoPath, {
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  let pkg: unknown = grpc.loadPackageDefinition(definition);
  for (const part of packageName.split('.')) pkg = (pkg as Record<string, unknown>)[part];
  const constructors = pkg as Record<string, grpc.ServiceClientConstructor | undefined>;
  const clients = {} as Record<S, grpc.Client>;
  for (const service of services) {
    const Client = constructors[service];
    if (Client === undefined)
      throw new Error(`${protoPath} has no service ${packageName}.${service}`);
    clients[service] = new Client(address, grpc.credentials.createInsecure());
  }
  return clients;
}

/**
 * `client.method(request)` with a deadline `timeoutMs` from now; rejects with
 * the grpc ServiceError.
 * @throws Error (synchronously) when the client has no such method; `label` names the service.
 */
export function unaryCall(
  client: grpc.Client,
  label: string,
  method: string,
  request: object,
  timeoutMs: number,
): Promise<unknown> {
  const fn = (client as unknown as Record<string, UnaryMethod | undefined>)[method];
  if (fn === undefined) throw new Error(`${label} has no method ${method}`);
  return new Promise((resolve, reject) => {
    fn.call(client, request, new grpc.Metadata(), { deadline: Date.now() + timeoutMs }, (e, r) => {
      if (e) reject(e);
      else resolve(r);
    });
  });
}

/** A spawned server process whose stdout and stderr are read as lines. */
export class ServerProcess {
  readonly child: ChildProcess;
  /** Resolves to the exit code once the process has exited. */
  readonly exited: Promise<number | null>;
  /** The exit code, undefined while the process runs. */
  exitCode: number | null | undefined;
  /** The signal that ended the process, null when it exited by itself or still runs. */
  exitSignal: NodeJS.Signals | null = null;
  /** Why the process could not be started (spawn's `error`: ENOENT, EACCES), else null. */
  startError: Error | null = null;

  /**
   * Spawns `program` with `args` (LC_ALL=C, stdin closed) and hands every
   * complete line of its stdout and stderr to `onLine`.
   */
  constructor(
    program: string,
    args: readonly string[],
    onLine: (line: string, stream: 'stdout' | 'stderr') => void,
  ) {
    this.child = spawn(program, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, LC_ALL: 'C' },
    });
    this.exited = new Promise((resolve) => {
      this.child.on('exit', (code, signal) => {
        this.exitCode = code;
        this.exitSignal = signal;
        resolve(code);
      });
      // A program that cannot be started emits `error` and no `exit`: it ended before it began.
      this.child.on('error', (error) => {
        if (this.exitCode !== undefined) return;
        this.startError = error;
        this.exitCode = null;
        resolve(null);
      });
    });
    for (const name of ['stdout', 'stderr'] as const) {
      let partial = '';
      this.child[name]?.on('data', (data: Buffer) => {
        const lines = (partial + data.toString('utf8')).split('\n');
        partial = lines.pop() ?? '';
        for (const line of lines) onLine(line, name);
      });
      this.child[name]?.on('end', () => {
        if (partial !== '') onLine(partial, name);
        partial = '';
      });
    }
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  /** SIGTERM, SIGKILL after 30 s; resolves to the exit code. */
  async stop(): Promise<number | null> {
    if (this.exitCode !== undefined) return this.exitCode;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 30_000);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }
}

/**
 * Polls `ready` every 20 ms until it is true; `name` and `output` make the
 * error messages.
 * @throws Error when the process exits first, or after `deadlineMs` (the process is then stopped).
 */
export async function waitUntilReady(
  server: ServerProcess,
  name: string,
  ready: () => Promise<boolean>,
  output: () => string,
  deadlineMs = 180_000,
): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    if (server.startError !== null) {
      throw new Error(`${name} could not be started: ${server.startError.message}`);
    }
    if (server.exitCode !== undefined) {
      throw new Error(
        `${name} exited ${String(server.exitCode)} before it was ready:\n${output()}`,
      );
    }
    if (await ready()) return;
    if (Date.now() > deadline) {
      await server.stop();
      throw new Error(`${name} not ready after ${deadlineMs / 1000} s:\n${output()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A server process and one gRPC client per service: calls, pid, stop. */
export class GrpcServer<S extends string> {
  readonly #process: ServerProcess;
  readonly #clients: Record<S, grpc.Client>;
  readonly #label: (service: S) => string;

  /** `label` names a service in errors, e.g. `csi.v1.Node`. */
  protected constructor(
    server: ServerProcess,
    clients: Record<S, grpc.Client>,
    label: (service: S) => string,
  ) {
    this.#process = server;
    this.#clients = clients;
    this.#label = label;
  }

  get pid(): number {
    return this.#process.pid;
  }

  /** `running`, or how the process ended: `exit <code>` or `signal <name>`. */
  get state(): string {
    const p = this.#process;
    if (p.exitCode === undefined) return 'running';
    return p.exitSignal !== null ? `signal ${p.exitSignal}` : `exit ${String(p.exitCode)}`;
  }

  /** `service.method(request)`; rejects with the grpc ServiceError. */
  call(service: S, method: string, request: object, timeoutMs = 600_000): Promise<unknown> {
    return unaryCall(this.#clients[service], this.#label(service), method, request, timeoutMs);
  }

  /** SIGTERM, SIGKILL after 30 s; resolves to the exit code. */
  stop(): Promise<number | null> {
    this.closeClients();
    return this.#process.stop();
  }

  protected closeClients(): void {
    for (const client of Object.values<grpc.Client>(this.#clients)) client.close();
  }
}
