import { readFile } from 'node:fs/promises';
import { DataDeviceManager } from './device/data-device.js';
import { ProcessRunner } from './exec/process-runner.js';
import type { CommandRunner, WarnLogger } from './exec/runner.js';
import { FilesystemManager } from './fs/filesystem.js';
import { GcService } from './gc/service.js';
import { BlockHeaderIo } from './header/block-io.js';
import { FileHostLock } from './lock/file-host-lock.js';
import type { HostLock } from './lock/host-lock.js';
import { Lvm } from './lvm/lvm.js';
import { DEFAULT_NAMING, type Naming } from './naming.js';
import { VolumeGroupAdmin } from './vg/admin.js';
import { InspectService } from './volumes/inspect.js';
import { VolumeService } from './volumes/service.js';
import { SnapshotService } from './volumes/snapshot-service.js';
import { QuarantineService } from './volumes/quarantine.js';

/** How to build the services of one node. Everything has a production default. */
export interface NodeServicesOptions {
  /** Default: an ProcessRunner (argv arrays, LC_ALL=C, stdin closed, timeout with kill). */
  readonly runner?: CommandRunner;
  /** Default: a FileHostLock at `lockFile`. */
  readonly hostLock?: HostLock;
  /** Host lock path shared by the CLI, the CSI driver and the GC job. */
  readonly lockFile?: string;
  readonly naming?: Naming;
  readonly clock?: () => number;
  /** Receives stderr that lvm printed while succeeding (warnings). */
  readonly logger?: WarnLogger;
}

/**
 * The core of one node, wired once: the facade the apps talk to
 * (docs/ARCHITECTURE.md). Every check-then-change sequence holds the host
 * lock; the CSI driver adds its per-RPC lock on top (apps/csi-driver).
 */
export interface NodeServices {
  readonly runner: CommandRunner;
  readonly hostLock: HostLock;
  /** The lvm command module (volume groups, logical volumes). */
  readonly lvm: Lvm;
  readonly headers: BlockHeaderIo;
  readonly dataDevices: DataDeviceManager;
  readonly filesystems: FilesystemManager;
  readonly volumes: VolumeService;
  /** Snapshots, restore and clone. */
  readonly snapshots: SnapshotService;
  readonly volumeGroups: VolumeGroupAdmin;
  readonly inspector: InspectService;
  readonly gc: GcService;
  /** Quarantined volumes and snapshots: list, restore (DESIGN.md §6 "Quarantine"). */
  readonly quarantine: QuarantineService;
}

/**
 * Wires the core for one node (the CLI, the CSI driver and the GC job call
 * this): one lvm module, one volume service, and the services over them.
 */
export function createNodeServices(options: NodeServicesOptions = {}): NodeServices {
  const naming = options.naming ?? DEFAULT_NAMING;
  const runner = options.runner ?? new ProcessRunner();
  const hostLock =
    options.hostLock ??
    new FileHostLock({
      ...(options.lockFile === undefined ? {} : { path: options.lockFile }),
      // "host lock compromised while held" reaches the log.
      ...(options.logger ? { logger: options.logger } : {}),
    });
  const headers = new BlockHeaderIo();
  const lvm = new Lvm({ runner, hostLock, ...(options.logger ? { logger: options.logger } : {}) });
  const dataDevices = new DataDeviceManager({ runner, naming });
  const filesystems = new FilesystemManager({ runner });
  // VolumeService and SnapshotService take the same parts.
  const parts = {
    lvm,
    runner,
    hostLock,
    headers,
    dataDevices,
    filesystems,
    naming,
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
  };
  const volumes = new VolumeService(parts);
  const snapshots = new SnapshotService(parts);
  const quarantine = new QuarantineService(parts);
  return {
    runner,
    hostLock,
    lvm,
    headers,
    dataDevices,
    filesystems,
    volumes,
    snapshots,
    volumeGroups: new VolumeGroupAdmin({ lvm, runner, hostLock, naming }),
    inspector: new InspectService({ volumes, headers }),
    quarantine,
    gc: new GcService({
      ports: { volumes, quarantine, headers, devices: dataDevices, hostLock },
      naming,
      ...(options.clock ? { clock: options.clock } : {}),
    }),
  };
}

/**
 * Whether this host can activate real volumes: running as root, and the
 * kernel has device-mapper (a `device-mapper` line in /proc/misc; the
 * /dev/mapper/control node alone proves nothing, lvm2's packaging makes it
 * even where the kernel lacks the driver).
 */
export async function checkHostCanActivate(
  procMiscPath = '/proc/misc',
): Promise<{ ok: true } | { ok: false; reason: string }> {
  if (process.getuid?.() !== 0) return { ok: false, reason: 'it must run as root' };
  let misc: string;
  try {
    misc = await readFile(procMiscPath, 'utf8');
  } catch (error) {
    return { ok: false, reason: `cannot read ${procMiscPath}: ${(error as Error).message}` };
  }
  if (!/^\s*\d+\s+device-mapper$/m.test(misc)) {
    return { ok: false, reason: 'this kernel has no device-mapper (not listed in /proc/misc)' };
  }
  return { ok: true };
}
