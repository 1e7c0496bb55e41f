import type {
  GcService,
  InspectService,
  QuarantineService,
  SnapshotService,
  VolumeGroupAdmin,
  VolumeService,
  ProbeResult,
} from '@lvstamp/core';

/** Options every command sees, from flags or the environment. */
export interface GlobalOptions {
  /** 32 hex digits. */
  readonly ownerId: string;
  readonly lockFile: string;
  readonly json: boolean;
}

/** The core services the commands call. Production wires the real ones. */
export interface CliServices {
  readonly volumes: Pick<
    VolumeService,
    | 'resolve'
    | 'list'
    | 'status'
    | 'create'
    | 'attach'
    | 'detach'
    | 'expand'
    | 'delete'
    | 'defaultVolumeGroup'
    | 'discoverVolumeGroups'
    | 'requireVolumeGroups'
    | 'findVolume'
  >;
  readonly snapshots: Pick<
    SnapshotService,
    | 'createSnapshot'
    | 'listSnapshots'
    | 'deleteSnapshot'
    | 'resolveSnapshot'
    | 'findSnapshot'
    | 'createVolumeFrom'
  >;
  readonly volumeGroups: Pick<
    VolumeGroupAdmin,
    'list' | 'isLvstampGroup' | 'createOnLoop' | 'create' | 'remove'
  >;
  readonly gc: Pick<GcService, 'plan' | 'apply' | 'planPurge'>;
  /** Quarantined volumes and snapshots (DESIGN.md §6 "Quarantine"). */
  readonly quarantine: Pick<QuarantineService, 'list' | 'inspect' | 'restore'>;
  readonly inspector: Pick<InspectService, 'inspect'>;
  /** Filesystem helpers of the core, used by `lvstamp demo` and `lvstamp quarantine restore`. */
  readonly filesystems: {
    /** What blkid finds on a device, from `offsetBytes` on (FilesystemManager.probe). */
    probe(device: string, options: { offsetBytes: number }): Promise<ProbeResult>;
    format(device: string, fsType: 'ext4' | 'xfs'): Promise<unknown>;
    mount(device: string, target: string, options: { fsType: 'ext4' | 'xfs' }): Promise<unknown>;
    unmount(target: string): Promise<unknown>;
    usage(path: string): Promise<{ totalBytes: number; availableBytes: number; usedBytes: number }>;
  };
  /** True when this host can run real volumes: root and device-mapper. */
  readonly canActivate: () => Promise<{ ok: true } | { ok: false; reason: string }>;
}
