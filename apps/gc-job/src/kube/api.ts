/**
 * The small part of the Kubernetes API that `lvstamp-gc` uses, as plain
 * shapes. The production implementation (`client.ts`) sits on
 * @kubernetes/client-node; unit tests pass a fake. Every call either returns
 * a complete answer or throws `KubeApiError`: a failure is never an empty
 * list.
 */

/** One page of a list call (`limit` + `continue`, Kubernetes API concepts "Retrieving large results sets in chunks"). */
export interface Page<T> {
  readonly items: readonly T[];
  /** The continue token for the next page; undefined or '' on the last page. */
  readonly continueToken: string | undefined;
}

/** Options of one list call. */
export interface PageRequest {
  /** Most items per page (`limit`), ≥ 1. */
  readonly limit: number;
  /** Continue token from the previous page; undefined for the first page. */
  readonly continueToken?: string | undefined;
}

/** What the GC needs of a PersistentVolume. */
export interface PersistentVolumeInfo {
  readonly name: string;
  readonly uid: string;
  /** `spec.csi.driver`, or null when the PV is not a CSI volume. */
  readonly csiDriver: string | null;
  /** `spec.csi.volumeHandle`, or null when the PV is not a CSI volume. */
  readonly volumeHandle: string | null;
  /** `status.phase` (Pending, Available, Bound, Released, Failed), or null when unset. */
  readonly phase: string | null;
  /** True when `metadata.deletionTimestamp` is set (being deleted). */
  readonly deleting: boolean;
}

/** What the GC needs of a PersistentVolumeClaim. */
export interface PersistentVolumeClaimInfo {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  /** `status.phase` (Pending, Bound, Lost), or null when unset. */
  readonly phase: string | null;
}

/**
 * What the GC needs of a VolumeSnapshotContent (`snapshot.storage.k8s.io/v1`,
 * cluster-scoped; external-snapshotter v5 CRDs).
 */
export interface VolumeSnapshotContentInfo {
  readonly name: string;
  /** `spec.driver`, or null when unset. */
  readonly driver: string | null;
  /** `status.snapshotHandle` (set once CreateSnapshot returned), or null. */
  readonly statusHandle: string | null;
  /** `spec.source.snapshotHandle` (a pre-provisioned snapshot), or null. */
  readonly sourceHandle: string | null;
}

/** A CSINode: which CSI drivers run on the node of the same name. */
export interface CsiNodeInfo {
  readonly name: string;
  /** `spec.drivers[].name`. */
  readonly drivers: readonly string[];
}

/** The state of a Job, as far as `lvstamp-gc cluster` waits for it. */
export interface JobStatusInfo {
  readonly name: string;
  readonly uid: string;
  /** `status.succeeded` ≥ 1, or a `Complete` condition. */
  readonly complete: boolean;
  /** A `Failed` condition (backoff limit or deadline exceeded). */
  readonly failed: boolean;
  /** The Failed condition's reason and message, when failed. */
  readonly failureReason: string | null;
  readonly annotations: Readonly<Record<string, string>>;
}

/** One container's state (`status.containerStatuses[].state`): which of waiting, running, terminated is set. */
export interface ContainerStateInfo {
  readonly state: 'waiting' | 'running' | 'terminated' | 'unknown';
  /** e.g. `ErrImagePull`, `ImagePullBackOff`, `CreateContainerConfigError`; null when unset. */
  readonly reason: string | null;
  readonly message: string | null;
}

/** What `lvstamp-gc cluster` needs of a per-node Job's pod. */
export interface PodInfo {
  readonly name: string;
  readonly uid: string;
  readonly labels: Readonly<Record<string, string>>;
  /** `spec.nodeName`, or null while unscheduled. */
  readonly nodeName: string | null;
  /** `status.phase` (Pending, Running, Succeeded, Failed), or null when unset. */
  readonly phase: string | null;
  /** `status.reason` / `status.message` (e.g. the kubelet's `OutOfcpu`, `NodeAffinity` rejection). */
  readonly reason: string | null;
  readonly message: string | null;
  /** The `PodScheduled` condition when it is not `True`: its reason and message. */
  readonly unscheduled: { readonly reason: string | null; readonly message: string | null } | null;
  readonly containers: readonly ContainerStateInfo[];
}

/** What `lvstamp-gc cluster` reads of a core/v1 Event. */
export interface EventInfo {
  readonly involvedKind: string;
  readonly involvedName: string;
  readonly type: string;
  readonly reason: string;
  readonly message: string;
  readonly count: number;
}

/** A core/v1 Event to create (its name is chosen by the API implementation). */
export interface EventSpec {
  readonly namespace: string;
  readonly involvedObject: {
    readonly apiVersion: string;
    readonly kind: 'Node' | 'PersistentVolume';
    readonly name: string;
    readonly uid?: string;
  };
  /** UpperCamelCase, e.g. `VolumeRemoved`. */
  readonly reason: string;
  readonly message: string;
  readonly type: 'Normal' | 'Warning';
  /** `source.component`, e.g. `lvstamp-gc`. */
  readonly component: string;
  /** `source.host`: the node the event is about. */
  readonly host: string;
  /** Unix milliseconds. */
  readonly timeMs: number;
}

/** The Kubernetes calls of `lvstamp-gc`. */
export interface KubeApi {
  /** GET /api/v1/persistentvolumes?limit&continue. */
  listPersistentVolumes(page: PageRequest): Promise<Page<PersistentVolumeInfo>>;
  /** GET /api/v1/persistentvolumeclaims?limit&continue (all namespaces). */
  listPersistentVolumeClaims(page: PageRequest): Promise<Page<PersistentVolumeClaimInfo>>;
  /**
   * GET /apis/snapshot.storage.k8s.io/v1/volumesnapshotcontents?limit&continue.
   * @throws KubeApiError; status 404 when the CRD is not installed.
   */
  listVolumeSnapshotContents(page: PageRequest): Promise<Page<VolumeSnapshotContentInfo>>;
  /** GET /apis/storage.k8s.io/v1/csinodes?limit&continue. */
  listCsiNodes(page: PageRequest): Promise<Page<CsiNodeInfo>>;
  /**
   * POST /apis/batch/v1/namespaces/{ns}/jobs with a full Job manifest.
   * @returns the created Job's name and UID.
   * @throws KubeApiError (status 409 when a Job of that name exists).
   */
  createJob(
    namespace: string,
    job: Readonly<Record<string, unknown>>,
  ): Promise<{ name: string; uid: string }>;
  /** GET /apis/batch/v1/namespaces/{ns}/jobs/{name}. */
  readJob(namespace: string, name: string): Promise<JobStatusInfo>;
  /** PATCH (merge) the Job's `metadata.annotations`. */
  annotateJob(
    namespace: string,
    name: string,
    annotations: Readonly<Record<string, string>>,
  ): Promise<void>;
  /** POST /api/v1/namespaces/{ns}/events. */
  createEvent(event: EventSpec): Promise<void>;
  /** GET /api/v1/namespaces/{ns}/pods?labelSelector&limit&continue. */
  listPods(namespace: string, labelSelector: string, page: PageRequest): Promise<Page<PodInfo>>;
  /** GET /api/v1/namespaces/{ns}/events?fieldSelector=type=Warning&limit&continue. */
  listWarningEvents(namespace: string, page: PageRequest): Promise<Page<EventInfo>>;
}
