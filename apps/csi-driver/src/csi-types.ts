// The CSI messages (csi.proto, package csi.v1) as proto-loader hands them to
// handlers: snake_case names, int64 as decimal strings, enums as names,
// oneofs with the name of the member set. Only what lvstamp reads is typed.

export type AccessModeName =
  | 'UNKNOWN'
  | 'SINGLE_NODE_WRITER'
  | 'SINGLE_NODE_READER_ONLY'
  | 'MULTI_NODE_READER_ONLY'
  | 'MULTI_NODE_SINGLE_WRITER'
  | 'MULTI_NODE_MULTI_WRITER'
  | 'SINGLE_NODE_SINGLE_WRITER'
  | 'SINGLE_NODE_MULTI_WRITER';

export interface VolumeCapabilityMsg {
  readonly block?: object | null;
  readonly mount?: {
    readonly fs_type: string;
    readonly mount_flags: readonly string[];
    readonly volume_mount_group: string;
  } | null;
  readonly access_mode?: { readonly mode: AccessModeName } | null;
  readonly access_type?: 'block' | 'mount';
}

/** int64 fields arrive as decimal strings (proto-loader `longs: String`). */
export type Int64 = string;

export interface CapacityRangeMsg {
  readonly required_bytes: Int64;
  readonly limit_bytes: Int64;
}

export interface TopologyMsg {
  readonly segments: Readonly<Record<string, string>>;
}

export type StringMap = Readonly<Record<string, string>>;

export interface CreateVolumeRequest {
  readonly name: string;
  readonly capacity_range?: CapacityRangeMsg | null;
  readonly volume_capabilities: readonly VolumeCapabilityMsg[];
  readonly parameters: StringMap;
  readonly secrets: StringMap;
  readonly volume_content_source?: VolumeContentSourceMsg | null;
  readonly accessibility_requirements?: {
    readonly requisite: readonly TopologyMsg[];
    readonly preferred: readonly TopologyMsg[];
  } | null;
  readonly mutable_parameters: StringMap;
}

/** CSI VolumeContentSource: a oneof, `type` names the member set. */
export interface VolumeContentSourceMsg {
  readonly type?: 'snapshot' | 'volume';
  readonly snapshot?: { readonly snapshot_id: string } | null;
  readonly volume?: { readonly volume_id: string } | null;
}

export interface VolumeMsg {
  readonly capacity_bytes: Int64;
  readonly volume_id: string;
  readonly volume_context: StringMap;
  readonly content_source?: VolumeContentSourceMsg | null;
  readonly accessible_topology: readonly TopologyMsg[];
}

/** google.protobuf.Timestamp: seconds as a decimal string, nanoseconds. */
export interface TimestampMsg {
  readonly seconds: Int64;
  readonly nanos: number;
}

export interface SnapshotMsg {
  readonly size_bytes: Int64;
  readonly snapshot_id: string;
  readonly source_volume_id: string;
  readonly creation_time: TimestampMsg;
  readonly ready_to_use: boolean;
  readonly group_snapshot_id: string;
}

export interface CreateSnapshotRequest {
  readonly source_volume_id: string;
  readonly name: string;
  readonly secrets: StringMap;
  readonly parameters: StringMap;
}

export interface DeleteSnapshotRequest {
  readonly snapshot_id: string;
  readonly secrets: StringMap;
}

export interface ListSnapshotsRequest {
  readonly max_entries: number;
  readonly starting_token: string;
  readonly source_volume_id: string;
  readonly snapshot_id: string;
}

export interface DeleteVolumeRequest {
  readonly volume_id: string;
  readonly secrets: StringMap;
}

export interface ValidateVolumeCapabilitiesRequest {
  readonly volume_id: string;
  readonly volume_context: StringMap;
  readonly volume_capabilities: readonly VolumeCapabilityMsg[];
  readonly parameters: StringMap;
  readonly mutable_parameters: StringMap;
}

export interface ListVolumesRequest {
  readonly max_entries: number;
  readonly starting_token: string;
}

export interface GetCapacityRequest {
  readonly volume_capabilities: readonly VolumeCapabilityMsg[];
  readonly parameters: StringMap;
  readonly accessible_topology?: TopologyMsg | null;
}

export interface NodeStageVolumeRequest {
  readonly volume_id: string;
  readonly publish_context: StringMap;
  readonly staging_target_path: string;
  readonly volume_capability?: VolumeCapabilityMsg | null;
  readonly volume_context: StringMap;
}

export interface NodeUnstageVolumeRequest {
  readonly volume_id: string;
  readonly staging_target_path: string;
}

export interface NodePublishVolumeRequest {
  readonly volume_id: string;
  readonly staging_target_path: string;
  readonly target_path: string;
  readonly volume_capability?: VolumeCapabilityMsg | null;
  readonly readonly: boolean;
  readonly volume_context: StringMap;
}

export interface NodeUnpublishVolumeRequest {
  readonly volume_id: string;
  readonly target_path: string;
}

export interface NodeGetVolumeStatsRequest {
  readonly volume_id: string;
  readonly volume_path: string;
  readonly staging_target_path: string;
}

export interface NodeExpandVolumeRequest {
  readonly volume_id: string;
  readonly volume_path: string;
  readonly capacity_range?: CapacityRangeMsg | null;
  readonly staging_target_path: string;
  readonly volume_capability?: VolumeCapabilityMsg | null;
}

/** A unary handler: request in, response out; throws to fail the call. */
export type Handler<Req = never, Res = unknown> = (request: Req) => Promise<Res>;

/** One CSI service's handlers, by RPC name as in csi.proto. */
export type ServiceHandlers = Readonly<Record<string, Handler>>;
