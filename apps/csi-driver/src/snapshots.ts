import { status as GrpcStatus } from '@grpc/grpc-js';
import {
  isHexId,
  requireNoControlCharacters,
  ThickVolumeError,
  validateVolumeName,
  type ContentSource,
  type Snapshot,
  type VolumeScope,
} from '@lvstamp/core';
import { requireControllerCapability, type ControllerCapability } from './capabilities.js';
import type { DriverConfig } from './config.js';
import type {
  CreateSnapshotRequest,
  DeleteSnapshotRequest,
  ListSnapshotsRequest,
  SnapshotMsg,
  VolumeContentSourceMsg,
} from './csi-types.js';
import { requireCsiStringLimit } from './args.js';
import { CsiError, invalidArgument } from './errors.js';
import type { DriverCore } from './ports.js';
import { writeBytes } from './sizes.js';

/** What the snapshot RPCs need. */
export interface SnapshotDeps {
  readonly config: DriverConfig;
  readonly core: Pick<DriverCore, 'snapshots'>;
  /** The configured volume groups and this installation's owner ID. */
  readonly scope: VolumeScope;
  /** The controller capabilities offered (controllerCapabilitiesFor). */
  readonly offered: readonly ControllerCapability[];
}

/** The CSI Snapshot message of a core snapshot (CSI spec "CreateSnapshot"): ready at once. */
export function toSnapshotMsg(snapshot: Snapshot): SnapshotMsg {
  return {
    size_bytes: writeBytes(snapshot.sizeBytes),
    snapshot_id: snapshot.snapshotId,
    source_volume_id: snapshot.sourceVolumeId,
    creation_time: {
      seconds: String(Math.floor(snapshot.createdMs / 1000)),
      nanos: (snapshot.createdMs % 1000) * 1_000_000,
    },
    ready_to_use: true,
    group_snapshot_id: '',
  };
}

/**
 * Reads CreateVolume's `volume_content_source`: null when none is set.
 * @throws CsiError INVALID_ARGUMENT for a source without an ID, or with one
 *   over 128 bytes (CSI "Size Limits").
 */
export function readContentSource(
  source: VolumeContentSourceMsg | null | undefined,
): ContentSource | null {
  if (source === null || source === undefined || source.type === undefined) return null;
  const [kind, id] =
    source.type === 'snapshot'
      ? (['snapshot', source.snapshot?.snapshot_id ?? ''] as const)
      : (['volume', source.volume?.volume_id ?? ''] as const);
  const field = `volume_content_source.${kind}.${kind}_id`;
  if (id === '') throw invalidArgument(`${field} is required`);
  requireCsiStringLimit(id, field);
  return { kind, id };
}

/**
 * Volume context key of a copy (a restore or clone): NodeStageVolume grows
 * its filesystem to the data device, which is larger when more than the
 * source's capacity was asked (docs/DESIGN.md §5 "Restore and clone").
 */
export const COPY_CONTEXT_KEY = 'lvstamp.io/copy';

/** The response's `content_source` for a source (CSI spec: "MUST be set" when the request had one). */
export function contentSourceMsg(source: ContentSource): VolumeContentSourceMsg {
  return source.kind === 'snapshot'
    ? { snapshot: { snapshot_id: source.id } }
    : { volume: { volume_id: source.id } };
}

/**
 * A core ThickVolumeError restated with the thick device class(es) of its
 * volume group (docs/DESIGN.md §5 "Restore and clone"): a group may hold a
 * thin class too, which is never the thick volume's; anything else unchanged.
 */
export function withThickClass(config: DriverConfig, error: unknown): unknown {
  if (!(error instanceof ThickVolumeError)) return error;
  const thick = [...config.deviceClasses.values()]
    .filter((c) => c.volumeGroup === error.vgName && c.provisioning.type === 'thick')
    .map((c) => `"${c.name}"`);
  const where =
    thick.length === 0
      ? `a thick logical volume (no thick device class names volume group ${error.vgName})`
      : `in the thick device class ${thick.join(' or ')}`;
  return invalidArgument(
    `${error.lv} is ${where}; snapshots and clones need a thin class (docs/DESIGN.md §5)`,
  );
}

/**
 * The CSI snapshot RPCs (CSI spec "CreateSnapshot", "DeleteSnapshot",
 * "ListSnapshots") over the core's SnapshotService, in the configured
 * volume groups only.
 */
export function createSnapshotHandlers(deps: SnapshotDeps) {
  const { config, core, scope, offered } = deps;
  return {
    /**
     * CSI spec CreateSnapshot: a read-only thin snapshot of the source
     * (docs/DESIGN.md §5 "Snapshots"), ready at once. Missing name or
     * source ID, a name or source ID over 128 bytes (CSI "Size Limits") or
     * with control characters, a thick source (naming its class) → INVALID_ARGUMENT, the
     * argument errors before any lvm command; unknown source → NOT_FOUND; the same name
     * for another source → ALREADY_EXISTS; a full pool → RESOURCE_EXHAUSTED.
     * The same name and source again → the same snapshot.
     */
    CreateSnapshot: async (request: CreateSnapshotRequest) => {
      requireControllerCapability('CREATE_DELETE_SNAPSHOT', offered);
      if (request.name === '') throw invalidArgument('name is required');
      if (request.source_volume_id === '') throw invalidArgument('source_volume_id is required');
      validateVolumeName(request.name, 'name');
      requireCsiStringLimit(request.source_volume_id, 'source_volume_id');
      requireNoControlCharacters(request.name, 'name');
      requireNoControlCharacters(request.source_volume_id, 'source_volume_id');
      const snapshot = await core.snapshots
        .createSnapshot({ name: request.name, sourceVolumeId: request.source_volume_id, scope })
        .catch((error: unknown) => {
          throw withThickClass(config, error);
        });
      return { snapshot: toSnapshotMsg(snapshot) };
    },

    /**
     * CSI spec DeleteSnapshot: missing ID, or one over 128 bytes (CSI "Size
     * Limits") → INVALID_ARGUMENT; an unknown or malformed ID is success. A snapshot failing an ownership check →
     * FAILED_PRECONDITION naming the LV and the check, left untouched.
     */
    DeleteSnapshot: async (request: DeleteSnapshotRequest) => {
      requireControllerCapability('CREATE_DELETE_SNAPSHOT', offered);
      if (request.snapshot_id === '') throw invalidArgument('snapshot_id is required');
      requireCsiStringLimit(request.snapshot_id, 'snapshot_id');
      if (!isHexId(request.snapshot_id)) return {};
      await core.snapshots.deleteSnapshot(request.snapshot_id, scope);
      return {};
    },

    /**
     * CSI spec ListSnapshots: this owner's snapshots in the configured
     * groups, ordered by snapshot ID, filtered by `snapshot_id` (a malformed
     * or unknown one gives an empty list) and `source_volume_id`.
     * `next_token` is the last ID returned and a page starts after it, so a
     * deletion between pages skips nothing; a token that is not an ID →
     * ABORTED (an over-long one too: the RPC's own code for an invalid
     * token); negative max_entries, or a filter over 128 bytes (CSI "Size
     * Limits") → INVALID_ARGUMENT.
     */
    ListSnapshots: async (request: ListSnapshotsRequest) => {
      requireControllerCapability('LIST_SNAPSHOTS', offered);
      if (request.max_entries < 0) throw invalidArgument('max_entries must not be negative');
      const token = request.starting_token;
      requireCsiStringLimit(request.snapshot_id, 'snapshot_id');
      requireCsiStringLimit(request.source_volume_id, 'source_volume_id');
      if (token !== '' && !isHexId(token)) {
        throw new CsiError(
          GrpcStatus.ABORTED,
          `starting_token "${token}" is not a token this driver issued`,
        );
      }
      const wanted = request.snapshot_id;
      if (wanted !== '' && !isHexId(wanted)) return { entries: [], next_token: '' };
      const source = request.source_volume_id;
      const snapshots = (await core.snapshots.listSnapshots(scope)).filter(
        (s) =>
          (wanted === '' || s.snapshotId === wanted) &&
          (source === '' || s.sourceVolumeId === source) &&
          (token === '' || s.snapshotId > token),
      );
      const page = request.max_entries > 0 ? snapshots.slice(0, request.max_entries) : snapshots;
      const more = page.length < snapshots.length;
      return {
        entries: page.map((s) => ({ snapshot: toSnapshotMsg(s) })),
        next_token: more ? (page.at(-1)?.snapshotId ?? '') : '',
      };
    },
  };
}
