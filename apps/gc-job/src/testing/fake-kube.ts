import { KubeApiError } from '../errors.js';
import type {
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
  VolumeSnapshotContentInfo,
} from '../kube/api.js';

type Method = keyof KubeApi;

/**
 * An in-memory KubeApi for unit tests: paginated lists (continue token =
 * the next index), Jobs, Events, and injected failures per method and
 * call number. Every call is recorded.
 */
export class FakeKube implements KubeApi {
  pvs: PersistentVolumeInfo[] = [];
  pvcs: PersistentVolumeClaimInfo[] = [];
  csiNodes: CsiNodeInfo[] = [];
  /** VolumeSnapshotContents; null: the CRD is not installed (every list answers 404). */
  snapshotContents: VolumeSnapshotContentInfo[] | null = [];
  /** Pods by namespace; `listPods` matches `key=value` label selectors (comma = and). */
  pods: (PodInfo & { namespace: string })[] = [];
  /** Warning events to list, by namespace. */
  warnings: (EventInfo & { namespace: string })[] = [];
  readonly jobs = new Map<string, { manifest: Record<string, unknown>; status: JobStatusInfo }>();
  readonly events: EventSpec[] = [];
  readonly calls: { method: Method; args: unknown[] }[] = [];
  /** Failures to inject: method → (1-based call number of that method → error). */
  readonly failures = new Map<Method, Map<number, KubeApiError>>();

  failOn(method: Method, callNumber: number, status: number | null, detail: string): void {
    const byCall = this.failures.get(method) ?? new Map<number, KubeApiError>();
    byCall.set(callNumber, new KubeApiError(`fake ${method}`, status, detail));
    this.failures.set(method, byCall);
  }

  #enter(method: Method, args: unknown[]): void {
    this.calls.push({ method, args });
    const n = this.calls.filter((c) => c.method === method).length;
    const failure = this.failures.get(method)?.get(n);
    if (failure) throw failure;
  }

  #page<T>(items: readonly T[], page: PageRequest): Page<T> {
    const start = page.continueToken ? Number(page.continueToken) : 0;
    const end = start + page.limit;
    return {
      items: items.slice(start, end),
      continueToken: end < items.length ? String(end) : undefined,
    };
  }

  listPersistentVolumes(page: PageRequest): Promise<Page<PersistentVolumeInfo>> {
    return this.#run('listPersistentVolumes', [page], () => this.#page(this.pvs, page));
  }
  listPersistentVolumeClaims(page: PageRequest): Promise<Page<PersistentVolumeClaimInfo>> {
    return this.#run('listPersistentVolumeClaims', [page], () => this.#page(this.pvcs, page));
  }
  listVolumeSnapshotContents(page: PageRequest): Promise<Page<VolumeSnapshotContentInfo>> {
    return this.#run('listVolumeSnapshotContents', [page], () => {
      if (this.snapshotContents === null) {
        throw new KubeApiError(
          'list volumesnapshotcontents',
          404,
          'the server could not find the requested resource',
        );
      }
      return this.#page(this.snapshotContents, page);
    });
  }
  listCsiNodes(page: PageRequest): Promise<Page<CsiNodeInfo>> {
    return this.#run('listCsiNodes', [page], () => this.#page(this.csiNodes, page));
  }
  createJob(
    namespace: string,
    job: Readonly<Record<string, unknown>>,
  ): Promise<{ name: string; uid: string }> {
    return this.#run('createJob', [namespace, job], () => {
      const name = (job.metadata as { name: string }).name;
      if (this.jobs.has(name)) throw new KubeApiError('create job', 409, 'exists');
      const uid = `uid-${name}`;
      this.jobs.set(name, {
        manifest: { ...job },
        status: { name, uid, complete: false, failed: false, failureReason: null, annotations: {} },
      });
      return { name, uid };
    });
  }
  readJob(namespace: string, name: string): Promise<JobStatusInfo> {
    return this.#run('readJob', [namespace, name], () => {
      const job = this.jobs.get(name);
      if (!job) throw new KubeApiError('get job', 404, 'not found');
      return job.status;
    });
  }
  annotateJob(
    namespace: string,
    name: string,
    annotations: Readonly<Record<string, string>>,
  ): Promise<void> {
    return this.#run('annotateJob', [namespace, name, annotations], () => {
      const job = this.jobs.get(name);
      if (!job) throw new KubeApiError('patch job', 404, 'not found');
      job.status = { ...job.status, annotations: { ...job.status.annotations, ...annotations } };
    });
  }
  createEvent(event: EventSpec): Promise<void> {
    return this.#run('createEvent', [event], () => {
      this.events.push(event);
    });
  }

  listPods(namespace: string, labelSelector: string, page: PageRequest): Promise<Page<PodInfo>> {
    return this.#run('listPods', [namespace, labelSelector, page], () => {
      const wanted = labelSelector.split(',').map((term) => term.split('='));
      const pods = this.pods.filter(
        (p) => p.namespace === namespace && wanted.every(([k = '', v]) => p.labels[k] === v),
      );
      return this.#page(pods, page);
    });
  }
  listWarningEvents(namespace: string, page: PageRequest): Promise<Page<EventInfo>> {
    return this.#run('listWarningEvents', [namespace, page], () =>
      this.#page(
        this.warnings.filter((e) => e.namespace === namespace),
        page,
      ),
    );
  }

  #run<T>(method: Method, args: unknown[], fn: () => T): Promise<T> {
    try {
      this.#enter(method, args);
      return Promise.resolve(fn());
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }

  /** Marks a Job finished, as the Job controller would. */
  finishJob(name: string, outcome: 'complete' | 'failed', reason: string | null = null): void {
    const job = this.jobs.get(name);
    if (!job) throw new Error(`no job ${name}`);
    job.status = {
      ...job.status,
      complete: outcome === 'complete',
      failed: outcome === 'failed',
      failureReason: reason,
    };
  }
}
