// Test helpers: a fake core at the DriverCore interface and a real gRPC
// server + client pair on 127.0.0.1 (excluded from the build).
import { Writable } from 'node:stream';
import * as grpc from '@grpc/grpc-js';
import {
  AlreadyExistsError,
  FailedPreconditionError,
  NotFoundError,
  maximumCapacity,
  OutOfRangeError,
  snapshotIdForName,
  ThickVolumeError,
  volumeIdForName,
  volumeSize,
  type DataDevice,
  type Snapshot,
  type DeviceNumber,
  type MountInfoEntry,
  type ThinPoolCapacity,
  type Volume,
  type VolumeGroup,
  type VolumeStatus,
} from '@lvstamp/core';
import type { DriverMetrics } from '../metrics.js';
import { parseConfig, type DriverConfig } from '../config.js';
import { createLogger } from '../log.js';
import type { DriverCore, NodePaths, PathKind } from '../ports.js';
import { loadCsiServices } from '../proto.js';
import { createServer, type DriverServer } from '../server.js';

export const MIB = 1024 * 1024;
export const GIB = 1024 * MIB;
export const NODE_ID = 'node-a';
export const OWNER_ID = 'ab'.repeat(16);

export const CONFIG_YAML = `
deviceClasses:
  fast: { volumeGroup: vg0, wipe: discard, default: true }
  secure: { volumeGroup: vg1, wipe: zero, fsTypes: [xfs] }
`;

export function testConfig(): DriverConfig {
  return parseConfig(CONFIG_YAML);
}

export function makeVolume(
  name: string,
  capacityBytes: number,
  vgName = 'vg0',
): Volume & { readonly capacityBytes: number } {
  const volumeId = volumeIdForName(name);
  return {
    vgName,
    lvName: `lvstamp_${volumeId}`,
    lvUuid: 'uuid-1',
    sizeBytes: volumeSize({ requiredBytes: capacityBytes, extentSizeBytes: 4 * MIB }).lvSizeBytes,
    attr: '-wi-a-----',
    active: true,
    open: false,
    kernelMajor: 253,
    kernelMinor: 1,
    dmPath: `/dev/mapper/${vgName}-lvstamp_${volumeId}`,
    createdAtMs: 0,
    tags: ['lvstamp'],
    volumeId,
    creating: false,
    capacityBytes,
  };
}

type Call = readonly [string, ...unknown[]];

/** An in-memory core: volumes, volume groups, data devices, a mount table. */
export class FakeCore implements DriverCore {
  groups: VolumeGroup[] = [
    {
      name: 'vg0',
      uuid: 'g0',
      sizeBytes: 10 * GIB,
      freeBytes: 8 * GIB,
      extentSizeBytes: 4 * MIB,
      tags: [],
      attr: 'wz--n-',
    },
    {
      name: 'vg1',
      uuid: 'g1',
      sizeBytes: 4 * GIB,
      freeBytes: 4 * GIB,
      extentSizeBytes: 4 * MIB,
      tags: [],
      attr: 'wz--n-',
    },
  ];
  readonly store = new Map<string, { volume: Volume; name: string }>();
  /** Volume IDs whose capacity was read from the header (withCapacities), in order. */
  readonly capacityReads: string[] = [];
  readonly devices = new Map<string, DataDevice>();
  mountTable: MountInfoEntry[] = [];
  readonly calls: Call[] = [];
  /** When set, `create` waits for it (to hold the per-RPC lock). */
  createGate: Promise<void> | null = null;
  /** When set, createSnapshot waits for it after recording the call (to hold the RPC lock). */
  snapshotGate: Promise<void> | null = null;
  /** What thinPoolCapacity answers, by `vg/pool`; an absent key is NotFoundError. */
  readonly thinPools = new Map<string, ThinPoolCapacity>();
  /** Thrown by the next call of the named method. */
  failNext = new Map<string, Error>();
  /** The scope (volume groups and owner) each call that takes one received, in order. */
  readonly scopes: unknown[] = [];

  #maybeFail(method: string): void {
    const error = this.failNext.get(method);
    if (error !== undefined) {
      this.failNext.delete(method);
      throw error;
    }
  }

  #status(volume: Volume): VolumeStatus {
    const device = this.devices.get(volume.volumeId) ?? null;
    return {
      volume,
      header: { status: 'unreadable', reason: 'fake' },
      name: this.store.get(volume.volumeId)?.name ?? null,
      dataDevice: device === null ? null : { ...device, openCount: 0 },
      mountPoints: [],
    };
  }

  add(name: string, capacityBytes: number, vgName = 'vg0'): Volume & { capacityBytes: number } {
    const volume = makeVolume(name, capacityBytes, vgName);
    this.store.set(volume.volumeId, { volume, name });
    return volume;
  }

  readonly volumes: DriverCore['volumes'] = {
    status: (volumeId, scope) => {
      this.scopes.push(scope);
      const entry = this.store.get(volumeId);
      if (entry === undefined)
        return Promise.reject(new NotFoundError(`volume ${volumeId} does not exist`));
      return Promise.resolve(this.#status(entry.volume));
    },
    attach: (volumeId, scope) => {
      this.scopes.push(scope);
      this.#maybeFail('attach');
      // as the core: the volume is looked up first, an unknown one is NotFoundError
      if (!this.store.has(volumeId))
        return Promise.reject(new NotFoundError(`volume ${volumeId} does not exist`));
      this.calls.push(['attach', volumeId]);
      const device = { path: `/dev/mapper/lvstamp-${volumeId}`, major: 253, minor: 7 };
      this.devices.set(volumeId, device);
      return Promise.resolve(device);
    },
    detach: (volumeId) => {
      this.calls.push(['detach', volumeId]);
      return Promise.resolve({ removed: this.devices.delete(volumeId) });
    },
    expand: (volumeId, requiredBytes, scope, options) => {
      this.scopes.push(scope);
      this.calls.push(['expand', volumeId, requiredBytes, options]);
      this.#maybeFail('expand');
      const entry = this.store.get(volumeId);
      if (entry === undefined)
        return Promise.reject(new NotFoundError(`volume ${volumeId} does not exist`));
      // as the core: the one size rule, never shrinking
      const limitBytes = options?.limitBytes;
      const current = entry.volume.capacityBytes ?? 0;
      if (limitBytes !== undefined && current > limitBytes) {
        return Promise.reject(
          new OutOfRangeError(
            `volume ${volumeId} has ${current} bytes, above limitBytes ${limitBytes}`,
          ),
        );
      }
      if (current < requiredBytes) {
        const size = volumeSize({ requiredBytes, limitBytes, extentSizeBytes: 4 * MIB });
        entry.volume = {
          ...entry.volume,
          capacityBytes: size.capacityBytes,
          sizeBytes: size.lvSizeBytes,
        };
      }
      return Promise.resolve({ status: this.#status(entry.volume), filesystemGrown: null });
    },
    delete: (volumeId, scope, options) => {
      this.scopes.push(scope);
      this.calls.push(['delete', volumeId, options]);
      this.#maybeFail('delete');
      const existed = this.store.delete(volumeId);
      return Promise.resolve({ existed, removed: [] });
    },
    createVolume: async (request) => {
      this.calls.push(['create', request]);
      if (this.createGate !== null) await this.createGate;
      this.#maybeFail('create');
      // as the core: the VG must exist; the limit is checked after the existing-volume look-up
      if (!this.groups.some((g) => g.name === request.vgName)) {
        throw new NotFoundError(`volume group ${request.vgName} does not exist`);
      }
      // as the core: the one size rule, then the existing-volume look-up
      const { capacityBytes } = volumeSize({ ...request, extentSizeBytes: 4 * MIB });
      const id = volumeIdForName(request.name);
      const existing = this.store.get(id);
      if (existing !== undefined) {
        const v = existing.volume;
        const capacity = v.capacityBytes ?? 0;
        if (
          v.vgName !== request.vgName ||
          capacity < request.requiredBytes ||
          (request.limitBytes !== undefined && capacity > request.limitBytes)
        ) {
          throw new AlreadyExistsError(`volume "${request.name}" exists with a different size`);
        }
        return { ...v, capacityBytes: capacity };
      }
      return this.add(request.name, capacityBytes, request.vgName);
    },
    listVolumeGroups: () => {
      this.#maybeFail('listVolumeGroups');
      return Promise.resolve(this.groups);
    },
    capacity: (vgName) => {
      this.#maybeFail('capacity');
      const vg = this.groups.find((g) => g.name === vgName);
      if (vg === undefined)
        return Promise.reject(new NotFoundError(`volume group ${vgName} does not exist`));
      return Promise.resolve({
        vgName,
        totalBytes: vg.sizeBytes,
        freeBytes: vg.freeBytes,
        maximumVolumeBytes: maximumCapacity(vg),
      });
    },
    thinPoolCapacity: (vgName, thin) => {
      this.calls.push(['thinPoolCapacity', vgName, thin.thinPool]);
      this.#maybeFail('thinPoolCapacity');
      const pool = this.thinPools.get(`${vgName}/${thin.thinPool}`);
      if (pool === undefined)
        return Promise.reject(new NotFoundError(`volume group ${vgName} does not exist`));
      return Promise.resolve(pool);
    },
    // As the core: only the scope's volume groups are searched.
    findVolume: (volumeId, scope) => {
      this.#maybeFail('findVolume');
      const volume = this.store.get(volumeId)?.volume;
      return Promise.resolve(
        volume !== undefined && scope.vgNames.includes(volume.vgName) ? volume : null,
      );
    },
    listLogicalVolumes: (scope) =>
      Promise.resolve({
        volumes: [...this.store.values()]
          .map((e) => ({ ...e.volume, capacityBytes: null }))
          .filter((v) => scope.vgNames.includes(v.vgName)),
        snapshots: [],
        quarantined: [],
        unusableGroups: [],
      }),
    withCapacities: (volumes) => {
      this.capacityReads.push(...volumes.map((v) => v.volumeId));
      return Promise.resolve(
        volumes.map((v) => this.store.get(v.volumeId)?.volume ?? { ...v, capacityBytes: null }),
      );
    },
  };

  /** Snapshots by ID, as the core keeps them: ID, source, size, time. */
  readonly snapshotStore = new Map<string, Snapshot>();
  /** The source IDs the fake treats as thick volumes (ThickVolumeError). */
  readonly thickVolumes = new Set<string>();
  /** Unix ms given to each new snapshot. */
  now = 1_732_900_000_123;

  readonly snapshots: DriverCore['snapshots'] = {
    createSnapshot: (request) => {
      const run = (): Promise<Snapshot> => {
        this.calls.push(['createSnapshot', request.name, request.sourceVolumeId]);
        this.scopes.push(request.scope);
        const snapshotId = snapshotIdForName(request.name);
        const existing = this.snapshotStore.get(snapshotId);
        if (existing !== undefined) {
          if (existing.sourceVolumeId !== request.sourceVolumeId) {
            return Promise.reject(new AlreadyExistsError(`snapshot ${snapshotId} exists`));
          }
          return Promise.resolve(existing);
        }
        const source = this.store.get(request.sourceVolumeId)?.volume;
        if (source === undefined) {
          return Promise.reject(
            new NotFoundError(`volume ${request.sourceVolumeId} does not exist`),
          );
        }
        if (this.thickVolumes.has(source.volumeId)) {
          return Promise.reject(new ThickVolumeError(`volume ${source.volumeId}`, source));
        }
        const snapshot: Snapshot = {
          snapshotId,
          vgName: source.vgName,
          lvName: `lvstamp_snap_${snapshotId}`,
          sourceVolumeId: source.volumeId,
          sizeBytes: source.capacityBytes ?? 0,
          createdMs: this.now,
        };
        this.snapshotStore.set(snapshotId, snapshot);
        return Promise.resolve(snapshot);
      };
      return this.snapshotGate === null ? run() : this.snapshotGate.then(run);
    },
    deleteSnapshot: (snapshotId, scope) => {
      this.calls.push(['deleteSnapshot', snapshotId]);
      this.scopes.push(scope);
      this.#maybeFail('deleteSnapshot');
      return Promise.resolve({ existed: this.snapshotStore.delete(snapshotId) });
    },
    listSnapshots: (scope) => {
      this.scopes.push(scope);
      return Promise.resolve(
        [...this.snapshotStore.values()]
          .filter((s) => scope.vgNames.includes(s.vgName))
          .sort((a, b) => (a.snapshotId < b.snapshotId ? -1 : 1)),
      );
    },
    createVolumeFrom: (request) => {
      this.calls.push(['createVolumeFrom', request]);
      const source =
        request.source.kind === 'snapshot'
          ? this.snapshotStore.get(request.source.id)
          : this.store.get(request.source.id)?.volume;
      if (source === undefined) {
        return Promise.reject(
          new NotFoundError(`${request.source.kind} ${request.source.id} does not exist`),
        );
      }
      const sourceCapacity =
        'snapshotId' in source ? source.sizeBytes : (source.capacityBytes ?? 0);
      if (request.requiredBytes !== 0 && request.requiredBytes < sourceCapacity) {
        return Promise.reject(new OutOfRangeError('below the source'));
      }
      const capacity = Math.max(request.requiredBytes, sourceCapacity);
      const volume = this.add(request.name, capacity, request.vgName);
      return Promise.resolve({ ...volume, capacityBytes: capacity });
    },
    thawDataDeviceMounts: () => {
      this.calls.push(['thawDataDeviceMounts']);
      return Promise.resolve([]);
    },
  };

  readonly filesystems: DriverCore['filesystems'] = {
    format: (device, fsType) => {
      this.calls.push(['format', device, fsType]);
      this.#maybeFail('format');
      return Promise.resolve({ changed: true });
    },
    mount: (device, target, options) => {
      this.calls.push(['mount', device, target, options]);
      this.mountTable.push(mountEntry(target, 253, 7, false));
      return Promise.resolve({ changed: true });
    },
    bindMount: (source, target, options) => {
      this.calls.push(['bindMount', source, target, options]);
      this.#maybeFail('bindMount');
      return Promise.resolve({ changed: true });
    },
    unmount: (target) => {
      this.calls.push(['unmount', target]);
      this.#maybeFail('unmount');
      this.mountTable = this.mountTable.filter((m) => m.mountPoint !== target);
      return Promise.resolve({ changed: true });
    },
    usage: (path) => {
      this.calls.push(['usage', path]);
      return Promise.resolve({
        totalBytes: 2 ** 40,
        availableBytes: 2 ** 39,
        usedBytes: 2 ** 39,
        totalInodes: 1000,
        freeInodes: 900,
      });
    },
    mounts: () => Promise.resolve(this.mountTable),
    grow: (mountPath, fsType) => {
      this.calls.push(['grow', mountPath, fsType]);
      return Promise.resolve();
    },
  };
}

export function mountEntry(
  mountPoint: string,
  major: number,
  minor: number,
  ro: boolean,
): MountInfoEntry {
  return {
    mountId: 100,
    parentId: 1,
    major,
    minor,
    root: '/',
    mountPoint,
    mountOptions: [ro ? 'ro' : 'rw'],
    optionalFields: [],
    fsType: 'ext4',
    source: '/dev/mapper/x',
    superOptions: ['rw'],
  };
}

/** NodePaths over a map of path → kind, recording what was made and removed. */
export class FakePaths implements NodePaths {
  readonly kinds = new Map<string, PathKind>();
  /** st_rdev of block device nodes, by path. */
  readonly devices = new Map<string, DeviceNumber>();
  /** Symlinks: path → what realpath(3) makes of it. */
  readonly links = new Map<string, string>();
  readonly log: string[] = [];
  kind(path: string): Promise<PathKind> {
    return Promise.resolve(this.kinds.get(path) ?? 'missing');
  }
  canonical(path: string): Promise<string> {
    return Promise.resolve(this.links.get(path) ?? path);
  }
  blockDeviceNumber(path: string): Promise<DeviceNumber | null> {
    return Promise.resolve(this.devices.get(path) ?? null);
  }
  ensureDirectory(path: string): Promise<void> {
    this.log.push(`mkdir ${path}`);
    this.kinds.set(path, 'directory');
    return Promise.resolve();
  }
  ensureFile(path: string): Promise<void> {
    this.log.push(`touch ${path}`);
    this.kinds.set(path, 'file');
    return Promise.resolve();
  }
  remove(path: string): Promise<void> {
    this.log.push(`remove ${path}`);
    this.kinds.delete(path);
    return Promise.resolve();
  }
}

/** Collects log lines written by pino. */
export class LogSink extends Writable {
  readonly lines: Record<string, unknown>[] = [];
  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: () => void): void {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (line.trim() !== '') this.lines.push(JSON.parse(line) as Record<string, unknown>);
    }
    callback();
  }
}

type Client = grpc.Client & Record<string, unknown>;

/** A running driver with its core (by default a FakeCore), and clients for its three services. */
export interface Harness<C extends DriverCore = FakeCore> {
  readonly core: C;
  readonly paths: FakePaths;
  readonly logs: LogSink;
  readonly server: DriverServer;
  readonly address: string;
  call(
    service: 'Identity' | 'Controller' | 'Node',
    method: string,
    request: object,
  ): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

export async function startHarness<C extends DriverCore = FakeCore>(
  options: {
    endpoint?: string;
    /** The core the driver calls: a FakeCore, or the real one over a ReplayRunner. */
    core?: C;
    config?: DriverConfig;
    metrics?: DriverMetrics;
  } = {},
): Promise<Harness<C>> {
  // without a core the type parameter is its default, FakeCore
  const core = options.core ?? (new FakeCore() as DriverCore as C);
  const paths = new FakePaths();
  const logs = new LogSink();
  const server = createServer({
    endpoint: options.endpoint ?? 'tcp://127.0.0.1:0',
    driverName: 'lvstamp.io',
    version: '0.1.0',
    nodeId: NODE_ID,
    ownerId: OWNER_ID,
    config: options.config ?? testConfig(),
    core,
    paths,
    logger: createLogger('info', logs),
    ...(options.metrics ? { metrics: options.metrics } : {}),
  });
  const address = await server.start();
  const services = loadCsiServices();
  const clients = {
    Identity: new services.Identity(address, grpc.credentials.createInsecure()) as Client,
    Controller: new services.Controller(address, grpc.credentials.createInsecure()) as Client,
    Node: new services.Node(address, grpc.credentials.createInsecure()) as Client,
  };
  return {
    core,
    paths,
    logs,
    server,
    address,
    call: (service, method, request) =>
      new Promise((resolve, reject) => {
        const fn = clients[service][method] as (
          req: object,
          cb: (error: grpc.ServiceError | null, response: Record<string, unknown>) => void,
        ) => void;
        fn.call(clients[service], request, (error, response) => {
          if (error) reject(error);
          else resolve(response);
        });
      }),
    close: async () => {
      for (const client of Object.values(clients)) client.close();
      await server.stop(1000);
    },
  };
}

/** The gRPC code name a call failed with (or "OK"). */
export async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'OK';
  } catch (error) {
    return grpc.status[(error as grpc.ServiceError).code];
  }
}

/** The failure of a call: its code name and details. */
export async function failureOf(
  promise: Promise<unknown>,
): Promise<{ code: string; details: string }> {
  try {
    await promise;
  } catch (error) {
    const e = error as grpc.ServiceError;
    return { code: grpc.status[e.code], details: e.details };
  }
  throw new Error('the call succeeded');
}

export { FailedPreconditionError };
