import {
  ApiException,
  BatchV1Api,
  CoreV1Event,
  CoreV1Api,
  createConfiguration,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  ServerConfiguration,
  setHeaderOptions,
  StorageV1Api,
  type V1Job,
  type V1JobCondition,
  type V1Pod,
} from '@kubernetes/client-node';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, KubeApiError } from '../errors.js';
import type {
  VolumeSnapshotContentInfo,
  ContainerStateInfo,
  CsiNodeInfo,
  EventInfo,
  EventSpec,
  JobStatusInfo,
  KubeApi,
  Page,
  PageRequest,
  PersistentVolumeClaimInfo,
  PersistentVolumeInfo,
  PodInfo,
} from './api.js';

/** Where the credentials come from. */
export type KubeCredentials =
  | { readonly source: 'in-cluster' }
  | { readonly source: 'kubeconfig'; readonly path: string | undefined };

/** Options of `createKubeApi`. */
export interface KubeApiOptions {
  readonly credentials: KubeCredentials;
  /** Deadline of each API request in milliseconds (the request is aborted past it). */
  readonly requestTimeoutMs: number;
}

/**
 * Loads credentials: the pod's ServiceAccount (`in-cluster`), or a
 * kubeconfig file (`path`, else `$KUBECONFIG`, else `~/.kube/config`).
 */
export function loadKubeConfig(
  credentials: KubeCredentials,
  env: Readonly<Record<string, string | undefined>> = process.env,
): KubeConfig {
  const kc = new KubeConfig();
  if (credentials.source === 'in-cluster') {
    try {
      kc.loadFromCluster();
    } catch (error) {
      throw new ConfigError(`cannot load the in-cluster credentials: ${messageOf(error)}`);
    }
    return kc;
  }
  // Never fall back to the client library's default cluster (http://localhost:8080):
  // without a kubeconfig there is nothing to talk to.
  const path =
    credentials.path ??
    (env.KUBECONFIG || undefined) ??
    join(env.HOME ?? homedir(), '.kube', 'config');
  if (credentials.path === undefined && !env.KUBECONFIG && !existsSync(path)) {
    throw new ConfigError(
      `no kubeconfig: not in a pod, KUBECONFIG is unset and ${path} does not exist; pass --kubeconfig FILE`,
    );
  }
  try {
    kc.loadFromFile(path);
  } catch (error) {
    throw new ConfigError(`cannot load the kubeconfig ${path}: ${messageOf(error)}`);
  }
  if (kc.getCurrentCluster() === null) {
    throw new ConfigError(`the kubeconfig ${path} names no current context or cluster`);
  }
  return kc;
}

function messageOf(error: unknown): string {
  return (error instanceof Error ? error.message : 'unknown error').split('\n')[0] ?? '';
}

/**
 * The production `KubeApi` on @kubernetes/client-node 1.x (Node 20 and 24;
 * 2.x needs Node ≥ 22). Every request carries an AbortSignal with
 * `requestTimeoutMs`; every failure becomes a `KubeApiError`.
 */
export function createKubeApi(kc: KubeConfig, options: { requestTimeoutMs: number }): KubeApi {
  const cluster = kc.getCurrentCluster();
  if (cluster === null)
    throw new KubeApiError('load the kubeconfig', null, 'it names no current cluster');
  const configuration = createConfiguration({
    baseServer: new ServerConfiguration(cluster.server, {}),
    authMethods: { default: kc },
    promiseMiddleware: [
      {
        pre: (context) => {
          context.setSignal(AbortSignal.timeout(options.requestTimeoutMs));
          return Promise.resolve(context);
        },
        post: (context) => Promise.resolve(context),
      },
    ],
  });
  const core = new CoreV1Api(configuration);
  const storage = new StorageV1Api(configuration);
  const batch = new BatchV1Api(configuration);
  const custom = new CustomObjectsApi(configuration);
  const timeoutMs = options.requestTimeoutMs;

  return {
    listPersistentVolumes: (page) =>
      call('list persistentvolumes', timeoutMs, async (): Promise<Page<PersistentVolumeInfo>> => {
        const list = await core.listPersistentVolume(listParams(page));
        return {
          items: list.items.map((pv) => ({
            name: pv.metadata?.name ?? '',
            uid: pv.metadata?.uid ?? '',
            csiDriver: pv.spec?.csi?.driver ?? null,
            volumeHandle: pv.spec?.csi?.volumeHandle ?? null,
            phase: pv.status?.phase ?? null,
            deleting: pv.metadata?.deletionTimestamp !== undefined,
          })),
          continueToken: list.metadata?._continue,
        };
      }),
    listVolumeSnapshotContents: (page) =>
      call(
        'list volumesnapshotcontents.snapshot.storage.k8s.io',
        timeoutMs,
        async (): Promise<Page<VolumeSnapshotContentInfo>> => {
          const list = (await custom.listClusterCustomObject({
            group: 'snapshot.storage.k8s.io',
            version: 'v1',
            plural: 'volumesnapshotcontents',
            ...listParams(page),
          })) as CustomList;
          return {
            items: (list.items ?? []).map(snapshotContentInfo),
            continueToken: list.metadata?.continue,
          };
        },
      ),
    listPersistentVolumeClaims: (page) =>
      call(
        'list persistentvolumeclaims in all namespaces',
        timeoutMs,
        async (): Promise<Page<PersistentVolumeClaimInfo>> => {
          const list = await core.listPersistentVolumeClaimForAllNamespaces(listParams(page));
          return {
            items: list.items.map((pvc) => ({
              namespace: pvc.metadata?.namespace ?? '',
              name: pvc.metadata?.name ?? '',
              uid: pvc.metadata?.uid ?? '',
              phase: pvc.status?.phase ?? null,
            })),
            continueToken: list.metadata?._continue,
          };
        },
      ),
    listCsiNodes: (page) =>
      call('list csinodes', timeoutMs, async (): Promise<Page<CsiNodeInfo>> => {
        const list = await storage.listCSINode(listParams(page));
        return {
          items: list.items.map((n) => ({
            name: n.metadata?.name ?? '',
            drivers: n.spec.drivers.map((d) => d.name),
          })),
          continueToken: list.metadata?._continue,
        };
      }),
    createJob: (namespace, job) =>
      call(`create jobs in namespace ${namespace}`, timeoutMs, async () => {
        const created = await batch.createNamespacedJob({ namespace, body: job });
        return { name: created.metadata?.name ?? '', uid: created.metadata?.uid ?? '' };
      }),
    readJob: (namespace, name) =>
      call(`get job ${namespace}/${name}`, timeoutMs, async () =>
        jobStatus(await batch.readNamespacedJob({ namespace, name })),
      ),
    annotateJob: (namespace, name, annotations) =>
      call(`patch job ${namespace}/${name}`, timeoutMs, async () => {
        await batch.patchNamespacedJob(
          { namespace, name, body: { metadata: { annotations } } },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        );
      }),
    listPods: (namespace, labelSelector, page) =>
      call(`list pods in namespace ${namespace}`, timeoutMs, async (): Promise<Page<PodInfo>> => {
        const list = await core.listNamespacedPod({
          namespace,
          labelSelector,
          ...listParams(page),
        });
        return { items: list.items.map(podInfo), continueToken: list.metadata?._continue };
      }),
    listWarningEvents: (namespace, page) =>
      call(
        `list events in namespace ${namespace}`,
        timeoutMs,
        async (): Promise<Page<EventInfo>> => {
          const list = await core.listNamespacedEvent({
            namespace,
            fieldSelector: 'type=Warning',
            ...listParams(page),
          });
          return {
            items: list.items.map((e) => ({
              involvedKind: e.involvedObject.kind ?? '',
              involvedName: e.involvedObject.name ?? '',
              type: e.type ?? '',
              reason: e.reason ?? '',
              message: e.message ?? '',
              count: e.count ?? 1,
            })),
            continueToken: list.metadata?._continue,
          };
        },
      ),
    createEvent: (event) =>
      call(`create events in namespace ${event.namespace}`, timeoutMs, async () => {
        await core.createNamespacedEvent({
          namespace: event.namespace,
          body: Object.assign(new CoreV1Event(), eventBody(event)),
        });
      }),
  };
}

/** A custom-object list as JSON (the generated client types it as `object`). */
interface CustomList {
  readonly items?: readonly unknown[];
  readonly metadata?: { readonly continue?: string };
}

function snapshotContentInfo(item: unknown): VolumeSnapshotContentInfo {
  const o = item as {
    metadata?: { name?: unknown };
    spec?: { driver?: unknown; source?: { snapshotHandle?: unknown } };
    status?: { snapshotHandle?: unknown };
  } | null;
  const text = (v: unknown): string | null => (typeof v === 'string' ? v : null);
  return {
    name: text(o?.metadata?.name) ?? '',
    driver: text(o?.spec?.driver),
    statusHandle: text(o?.status?.snapshotHandle),
    sourceHandle: text(o?.spec?.source?.snapshotHandle),
  };
}

function listParams(page: PageRequest): { limit: number; _continue?: string } {
  return page.continueToken
    ? { limit: page.limit, _continue: page.continueToken }
    : { limit: page.limit };
}

function podInfo(pod: V1Pod): PodInfo {
  const scheduled = (pod.status?.conditions ?? []).find((c) => c.type === 'PodScheduled');
  const containers = [
    ...(pod.status?.initContainerStatuses ?? []),
    ...(pod.status?.containerStatuses ?? []),
  ].map((c): ContainerStateInfo => {
    const s = c.state;
    if (s?.running) return { state: 'running', reason: null, message: null };
    if (s?.terminated) {
      return {
        state: 'terminated',
        reason: s.terminated.reason ?? null,
        message: s.terminated.message ?? null,
      };
    }
    if (s?.waiting) {
      return {
        state: 'waiting',
        reason: s.waiting.reason ?? null,
        message: s.waiting.message ?? null,
      };
    }
    return { state: 'unknown', reason: null, message: null };
  });
  return {
    name: pod.metadata?.name ?? '',
    uid: pod.metadata?.uid ?? '',
    labels: pod.metadata?.labels ?? {},
    nodeName: pod.spec?.nodeName ?? null,
    phase: pod.status?.phase ?? null,
    reason: pod.status?.reason ?? null,
    message: pod.status?.message ?? null,
    unscheduled:
      scheduled === undefined || scheduled.status === 'True'
        ? null
        : { reason: scheduled.reason ?? null, message: scheduled.message ?? null },
    containers,
  };
}

function jobStatus(job: V1Job): JobStatusInfo {
  const conditions: V1JobCondition[] = job.status?.conditions ?? [];
  const isTrue = (type: string) => conditions.find((c) => c.type === type && c.status === 'True');
  const failedCondition = isTrue('Failed');
  return {
    name: job.metadata?.name ?? '',
    uid: job.metadata?.uid ?? '',
    complete: (job.status?.succeeded ?? 0) >= 1 || isTrue('Complete') !== undefined,
    failed: failedCondition !== undefined,
    failureReason:
      failedCondition === undefined
        ? null
        : [failedCondition.reason, failedCondition.message].filter(Boolean).join(': '),
    annotations: job.metadata?.annotations ?? {},
  };
}

/** A unique event name in the style of client-go: `<object>.<hex time><random>`. */
function eventName(event: EventSpec): string {
  const suffix = Math.floor(Math.random() * 0xffff)
    .toString(16)
    .padStart(4, '0');
  return `${event.involvedObject.name}.${(event.timeMs * 1000).toString(16)}${suffix}`;
}

function eventBody(event: EventSpec) {
  const time = new Date(event.timeMs);
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: eventName(event), namespace: event.namespace },
    involvedObject: { ...event.involvedObject },
    reason: event.reason,
    message: event.message,
    type: event.type,
    source: { component: event.component, host: event.host },
    reportingComponent: event.component,
    reportingInstance: event.host,
    firstTimestamp: time,
    lastTimestamp: time,
    count: 1,
  };
}

/** Runs one API call; every failure becomes a KubeApiError naming the operation. */
async function call<T>(operation: string, timeoutMs: number, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    throw toKubeApiError(operation, timeoutMs, error);
  }
}

/**
 * Translates what @kubernetes/client-node throws: ApiException (an HTTP
 * status with a Status body), node-fetch's AbortError (our deadline) or
 * FetchError (connection refused, reset, TLS).
 */
export function toKubeApiError(operation: string, timeoutMs: number, error: unknown): KubeApiError {
  if (error instanceof KubeApiError) return error;
  if (error instanceof ApiException) {
    return new KubeApiError(operation, error.code, statusMessage(error.body), { cause: error });
  }
  const e = error as { name?: unknown; message?: unknown; code?: unknown } | null;
  const name = typeof e?.name === 'string' ? e.name : '';
  const message = typeof e?.message === 'string' ? e.message : String(error);
  if (name === 'AbortError' || name === 'TimeoutError') {
    return new KubeApiError(operation, null, `timed out after ${timeoutMs} ms`, { cause: error });
  }
  const code = typeof e?.code === 'string' ? ` (${e.code})` : '';
  return new KubeApiError(operation, null, `${message}${code}`, { cause: error });
}

/** The `message` of a Kubernetes Status body (JSON text or object), else the text itself. */
function statusMessage(body: unknown): string {
  let value: unknown = body;
  if (typeof body === 'string') {
    try {
      value = JSON.parse(body) as unknown;
    } catch {
      return body.trim().slice(0, 500);
    }
  }
  if (typeof value === 'object' && value !== null && 'message' in value) {
    const m = value.message;
    if (typeof m === 'string') return m;
  }
  return body === undefined ? '' : JSON.stringify(value).slice(0, 500);
}
