/* eslint-disable @typescript-eslint/no-unsafe-class-instance-assignment --
   @kubernetes/client-node's models are plain data classes; the API serializes object literals. */
// lvstamp-gc against a real kube-apiserver + etcd on 127.0.0.1 (test/kube/start.sh, at the
// versions of test-e2e/parts/versions.env), one server for this file. The node's core is a fake (no device-mapper here); everything
// Kubernetes is real: validation, RBAC with the deploy/ manifests, pagination, Jobs, Events.
import {
  ApiextensionsV1Api,
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubernetesObjectApi,
  PatchStrategy,
  setHeaderOptions,
  StorageV1Api,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { snapshotIdForName, volumeIdForName } from '@lvstamp/core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createKubeApi } from './kube/client.js';
import type { KubeApi } from './kube/api.js';
import { loadGcManifests } from './testing/manifests.js';
import { REPORT_ANNOTATION, type NodeReport } from './node-run.js';
import type { ClusterReport } from './cluster-run.js';
import { runGc } from './program.js';
import { testDeps } from './testing/deps.js';
import { FakeNode } from './testing/fake-node.js';
import { startKubeServer, type KubeServer } from './testing/kube-server.js';

const OWNER = 'ab'.repeat(16);
const HOUR = 3_600_000;
const NS = 'lvstamp-system';
const AUDIENCE = 'https://kubernetes.default.svc.cluster.local';

let kapi: KubeServer;
let core: CoreV1Api;
let storage: StorageV1Api;
let batch: BatchV1Api;

beforeAll(async () => {
  kapi = await startKubeServer(inject('kubeParts'));
  process.stderr.write(`kube-apiserver started in ${kapi.startSeconds.toFixed(1)} s\n`);
  core = kapi.admin.makeApiClient(CoreV1Api);
  storage = kapi.admin.makeApiClient(StorageV1Api);
  batch = kapi.admin.makeApiClient(BatchV1Api);
  await core.createNamespace({ body: { metadata: { name: NS } } });
  const objects = kapi.admin.makeApiClient(KubernetesObjectApi);
  for (const o of await loadGcManifests()) {
    if (o.kind !== 'CronJob') await objects.create(o);
  }
}, 300_000);

afterAll(async () => {
  await kapi.stop();
});

function api(kc = kapi.admin): KubeApi {
  return createKubeApi(kc, { requestTimeoutMs: 30_000 });
}

async function createPv(name: string, phase: string | null, driver = 'lvstamp.io') {
  await core.createPersistentVolume({
    body: {
      metadata: { name },
      spec: {
        capacity: { storage: '1Gi' },
        accessModes: ['ReadWriteOnce'],
        persistentVolumeReclaimPolicy: 'Retain',
        csi: { driver, volumeHandle: volumeIdForName(name), fsType: 'ext4' },
      },
    },
  });
  if (phase !== null) {
    const pv = await core.readPersistentVolume({ name });
    pv.status = { phase };
    await core.replacePersistentVolumeStatus({ name, body: pv });
  }
}

async function saToken(name: string): Promise<string> {
  const request = await core.createNamespacedServiceAccountToken({
    name,
    namespace: NS,
    body: { spec: { audiences: [AUDIENCE], expirationSeconds: 3600 } },
  });
  return request.status?.token ?? '';
}

async function runNodeJson(kube: KubeApi, node: FakeNode, nowMs: number, args: string[]) {
  const deps = testDeps(kube, node, { nowMs });
  const code = await runGc(
    // Direct removal, as before quarantine (the fake node has no quarantine port).
    ['node', '--owner-id', OWNER, '--node-name', 'node-1', '--json', '--quarantine', '0', ...args],
    deps,
  );
  return {
    code,
    err: deps.err(),
    report: code === 0 ? (JSON.parse(deps.out()) as NodeReport) : null,
  };
}

describe('lvstamp-gc node against kube-apiserver', () => {
  const now = Date.now();
  const live = [
    'pvc-available',
    'pvc-bound',
    'pvc-released',
    'pvc-failed',
    'pvc-pending',
    'pvc-deleting',
  ];

  it('live set: PVs of the driver in every phase (and being deleted) plus pending PVCs; removes only the orphans', async () => {
    await createPv('pvc-available', 'Available');
    await createPv('pvc-bound', 'Bound');
    await createPv('pvc-released', 'Released');
    await createPv('pvc-failed', 'Failed');
    await createPv('pvc-pending', null);
    await createPv('pvc-deleting', 'Bound');
    await core.deletePersistentVolume({ name: 'pvc-deleting' }); // kept by the pv-protection finalizer
    await createPv('pvc-other-driver', 'Bound', 'other.csi.io');
    const claim = await core.createNamespacedPersistentVolumeClaim({
      namespace: 'default',
      body: {
        metadata: { name: 'in-flight' },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
      },
    });
    const deleting = await core.readPersistentVolume({ name: 'pvc-deleting' });
    expect(deleting.metadata?.deletionTimestamp).toBeDefined();

    const node = new FakeNode();
    for (const name of live) node.add({ name, ownerId: OWNER, createdAtMs: now - 5 * HOUR });
    const inflight = node.add({
      name: `pvc-${claim.metadata?.uid ?? ''}`,
      ownerId: OWNER,
      createdAtMs: now - 5 * HOUR,
    });
    const otherDriver = node.add({
      name: 'pvc-other-driver',
      ownerId: OWNER,
      createdAtMs: now - 5 * HOUR,
    });
    const orphan = node.add({ name: 'pvc-orphan', ownerId: OWNER, createdAtMs: now - 5 * HOUR });

    const { code, report, err } = await runNodeJson(api(), node, now, [
      '--apply',
      '--max-delete-percent',
      '100',
    ]);
    expect(err).toBe('');
    expect(code).toBe(0);
    expect(report?.liveSet).toMatchObject({ driverPvs: 6, pvcs: 1 });
    expect(node.removed.sort()).toEqual([orphan, otherDriver].sort());
    expect(node.ids()).toContain(inflight);
    for (const name of live) expect(node.ids()).toContain(volumeIdForName(name));

    // `lvstamp-gc live-set` (the README's recipe for `lvstamp gc --live`) as the ServiceAccount:
    // the same IDs, the in-flight claim's included, the other driver's PV not
    const sa = api(kapi.kubeConfigForToken(await saToken('lvstamp-gc')));
    const deps = testDeps(sa, new FakeNode(), { nowMs: now });
    expect(await runGc(['live-set', '--page-size', '2'], deps)).toBe(0);
    const printed = deps.out().trim().split('\n');
    expect(printed.sort()).toEqual(
      [
        ...live.map((n) => volumeIdForName(n)),
        volumeIdForName(`pvc-${claim.metadata?.uid ?? ''}`),
      ].sort(),
    );
    expect(deps.err()).toBe(
      'live set: 7 volume IDs from 6 PV(s) of lvstamp.io and 1 PVC(s), 5 page(s)\n',
    );
  });

  it('reads every page: 7 more PVs with --page-size 2', async () => {
    for (let i = 0; i < 7; i++) await createPv(`pvc-page-${i}`, 'Bound');
    const node = new FakeNode();
    const { report } = await runNodeJson(api(), node, now, ['--page-size', '2']);
    // 6 + 7 = 13 PVs of this driver and 1 other: 14 PVs in 7 pages, 1 PVC in 1 page
    expect(report?.liveSet).toMatchObject({ driverPvs: 13, pvcs: 1, pages: 8 });
    expect(report?.liveSet.ids).toBe(13 + 1);
  });

  it('records Events about the Node and about a PV', async () => {
    const node = new FakeNode();
    node.add({ name: 'pvc-bound', ownerId: OWNER, createdAtMs: now - 5 * HOUR, header: 'corrupt' });
    const orphan = node.add({
      name: 'pvc-event-orphan',
      ownerId: OWNER,
      createdAtMs: now - 5 * HOUR,
    });
    const { code } = await runNodeJson(api(), node, now, [
      '--apply',
      '--max-delete-percent',
      '100',
    ]);
    expect(code).toBe(0);
    expect(node.removed).toEqual([orphan]);
    const events = (await core.listNamespacedEvent({ namespace: 'default' })).items.filter(
      (e) => e.source?.component === 'lvstamp-gc',
    );
    const seen = events.map((e) => [
      e.reason,
      e.type,
      e.involvedObject.kind,
      e.involvedObject.name,
    ]);
    expect(seen).toContainEqual(['LeakedVolumeRemoved', 'Normal', 'Node', 'node-1']);
    expect(seen).toContainEqual([
      'SuspiciousVolumeKept',
      'Warning',
      'PersistentVolume',
      'pvc-bound',
    ]);
  });

  it('RBAC: the ServiceAccount with the deploy/ roles can do its calls', async () => {
    const token = await saToken('lvstamp-gc');
    const node = new FakeNode();
    const orphan = node.add({
      name: 'pvc-rbac-orphan',
      ownerId: OWNER,
      createdAtMs: now - 5 * HOUR,
    });
    const { code, err } = await runNodeJson(api(kapi.kubeConfigForToken(token)), node, now, [
      '--apply',
      '--max-delete-percent',
      '100',
    ]);
    expect(err).toBe('');
    expect(code).toBe(0);
    expect(node.removed).toEqual([orphan]);
  });

  it('RBAC: a missing permission aborts the run with a clear message, nothing deleted', async () => {
    await core.createNamespacedServiceAccount({
      namespace: NS,
      body: { metadata: { name: 'no-pvc-list' } },
    });
    const rbac = kapi.admin.makeApiClient(KubernetesObjectApi);
    await rbac.create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'pv-only' },
      rules: [{ apiGroups: [''], resources: ['persistentvolumes'], verbs: ['list'] }],
    } as KubernetesObject);
    await rbac.create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'pv-only' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'pv-only' },
      subjects: [{ kind: 'ServiceAccount', name: 'no-pvc-list', namespace: NS }],
    } as KubernetesObject);
    const token = await saToken('no-pvc-list');
    const node = new FakeNode();
    const orphan = node.add({
      name: 'pvc-rbac-orphan-2',
      ownerId: OWNER,
      createdAtMs: now - 5 * HOUR,
    });
    // RBAC changes reach the authorizer's cache within moments; wait for the allowed PV list.
    const { code, err } = await runNodeJson(api(kapi.kubeConfigForToken(token)), node, now, [
      '--apply',
      '--max-delete-percent',
      '100',
    ]);
    expect(code).toBe(1);
    expect(err).toMatch(
      /^lvstamp-gc: cannot list persistentvolumeclaims in all namespaces: forbidden \(HTTP 403\); the ServiceAccount lacks this permission \(see deploy\/kubernetes\/gc\/rbac\.yaml\): persistentvolumeclaims is forbidden: User "system:serviceaccount:lvstamp-system:no-pvc-list" cannot list resource "persistentvolumeclaims"/,
    );
    expect(node.removed).toEqual([]);
    expect(node.ids()).toEqual([orphan]);
  });
});

describe('lvstamp-gc cluster against kube-apiserver', () => {
  it('creates one Job per driver node (affinity, tolerations, owner), waits, and summarises', async () => {
    const now = Date.now();
    for (const [name, drivers] of [
      ['node-a', ['lvstamp.io']],
      ['node-b', ['other.csi.io']],
      ['node-c', ['other.csi.io', 'lvstamp.io']],
    ] as const) {
      // node-c's hostname label differs from its name (kubelet --hostname-override, AWS)
      const hostname = name === 'node-c' ? 'ip-10-0-0-3' : name;
      await core.createNode({
        body: { metadata: { name, labels: { 'kubernetes.io/hostname': hostname } } },
      });
      await storage.createCSINode({
        body: {
          metadata: { name },
          spec: { drivers: drivers.map((d) => ({ name: d, nodeID: name, topologyKeys: [] })) },
        },
      });
    }
    const parent = await batch.createNamespacedJob({
      namespace: NS,
      body: {
        metadata: { name: 'lvstamp-gc-manual' },
        spec: {
          template: {
            spec: { restartPolicy: 'Never', containers: [{ name: 'gc', image: 'lvstamp:test' }] },
          },
        },
      },
    });
    const token = await saToken('lvstamp-gc');
    const saApi = api(kapi.kubeConfigForToken(token));
    const node = new FakeNode();
    const base = testDeps(saApi, node, { nowMs: now });
    // The "cluster" pod waits; meanwhile play kubelet + Job controller: run each node Job's
    // program (as the ServiceAccount) and mark the Job complete.
    const realSleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
    const finished = new Set<string>();
    const sleep = async (ms: number) => {
      await realSleep(Math.min(ms, 200));
      const jobs = (
        await batch.listNamespacedJob({
          namespace: NS,
          labelSelector: 'app.kubernetes.io/component=lvstamp-gc-node',
        })
      ).items;
      for (const job of jobs) {
        const name = job.metadata?.name ?? '';
        if (finished.has(name)) continue;
        finished.add(name);
        const args = job.spec?.template.spec?.containers[0]?.args ?? [];
        const nodeName =
          job.spec?.template.spec?.affinity?.nodeAffinity
            ?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms[0]?.matchFields?.[0]
            ?.values?.[0] ?? '';
        const nodeDeps = testDeps(saApi, new FakeNode(), {
          nowMs: now,
          env: { LVSTAMP_OWNER_ID: OWNER, NODE_NAME: nodeName },
        });
        expect(await runGc(args, nodeDeps)).toBe(0);
        const fresh = await batch.readNamespacedJob({ name, namespace: NS });
        // What the Job controller writes on success; the API server refuses a finished Job
        // without its start and completion times and the SuccessCriteriaMet condition.
        const startTime = fresh.metadata?.creationTimestamp ?? new Date();
        fresh.status = {
          succeeded: 1,
          startTime,
          completionTime: new Date(),
          conditions: [
            { type: 'SuccessCriteriaMet', status: 'True' },
            { type: 'Complete', status: 'True' },
          ],
        };
        await batch.replaceNamespacedJobStatus({ name, namespace: NS, body: fresh });
      }
    };
    const deps = { ...base, sleep };
    const code = await runGc(
      [
        'cluster',
        '--json',
        '--namespace',
        NS,
        '--image',
        'lvstamp:test',
        '--owner-id',
        OWNER,
        '--owner-job-name',
        'lvstamp-gc-manual',
        '--owner-job-uid',
        parent.metadata?.uid ?? '',
        '--poll-interval',
        '1s',
        '--wait-timeout',
        '2m',
      ],
      deps,
    );
    expect(deps.err()).toBe('');
    expect(code).toBe(0);
    const report = JSON.parse(deps.out()) as ClusterReport;
    expect(report.nodes.map((n) => [n.node, n.status])).toEqual([
      ['node-a', 'ok'],
      ['node-c', 'ok'],
    ]);
    expect(report.nodes[0]?.summary).toMatchObject({ node: 'node-a', status: 'ok', dryRun: true });

    const jobs = (
      await batch.listNamespacedJob({
        namespace: NS,
        labelSelector: 'app.kubernetes.io/component=lvstamp-gc-node',
      })
    ).items;
    expect(jobs).toHaveLength(2);
    for (const job of jobs) {
      const spec = job.spec?.template.spec;
      const target =
        spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution
          ?.nodeSelectorTerms;
      // pinned by the node's name, as the API server stored it
      expect(['node-a', 'node-c']).toContain(target?.[0]?.matchFields?.[0]?.values?.[0]);
      expect(target?.[0]).toEqual({
        matchFields: [
          {
            key: 'metadata.name',
            operator: 'In',
            values: [target?.[0]?.matchFields?.[0]?.values?.[0]],
          },
        ],
      });
      expect(spec?.tolerations).toEqual([{ operator: 'Exists' }]);
      expect(spec?.serviceAccountName).toBe('lvstamp-gc');
      expect(spec?.containers[0]?.securityContext?.privileged).toBe(true);
      expect(job.metadata?.ownerReferences).toEqual([
        {
          apiVersion: 'batch/v1',
          kind: 'Job',
          name: 'lvstamp-gc-manual',
          uid: parent.metadata?.uid,
        },
      ]);
      expect(JSON.parse(job.metadata?.annotations?.[REPORT_ANNOTATION] ?? '{}')).toMatchObject({
        status: 'ok',
      });
    }
  });
});

describe('lvstamp-gc cluster: a node that never runs its Job', () => {
  it('is reported not-started with the pod’s scheduling condition and its FailedScheduling event (RBAC of deploy/), exit 3', async () => {
    await core.createNode({ body: { metadata: { name: 'node-full' } } });
    await storage.createCSINode({
      body: {
        metadata: { name: 'node-full' },
        spec: { drivers: [{ name: 'lvstamp.io', nodeID: 'node-full', topologyKeys: [] }] },
      },
    });
    const ns = NS;
    const token = await saToken('lvstamp-gc');
    const saApi = api(kapi.kubeConfigForToken(token));
    const base = testDeps(saApi, new FakeNode(), { nowMs: Date.now() });
    const realSleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
    let played = false;
    // Play scheduler + Job controller: the Job's pod cannot be scheduled; later the
    // Job hits its activeDeadlineSeconds.
    const sleep = async (ms: number) => {
      await base.sleep(ms); // the run's clock
      await realSleep(Math.min(ms, 200));
      if (played) return;
      const job = (
        await batch.listNamespacedJob({
          namespace: ns,
          labelSelector: 'lvstamp.io/gc-node=node-full',
        })
      ).items[0];
      if (job === undefined) return;
      played = true;
      const name = job.metadata?.name ?? '';
      const template = job.spec?.template;
      const spec = template?.spec ?? { containers: [] };
      // no token controller runs here: the ServiceAccount admission needs no token then
      spec.automountServiceAccountToken = false;
      const pod = await core.createNamespacedPod({
        namespace: ns,
        body: {
          metadata: { name: `${name}-abcde`, labels: template?.metadata?.labels ?? {} },
          spec,
        },
      });
      pod.status = {
        phase: 'Pending',
        conditions: [
          {
            type: 'PodScheduled',
            status: 'False',
            reason: 'Unschedulable',
            message: '0/1 nodes are available: 1 Insufficient memory.',
          },
        ],
      };
      await core.replaceNamespacedPodStatus({ name: `${name}-abcde`, namespace: ns, body: pod });
      await core.createNamespacedEvent({
        namespace: ns,
        body: {
          metadata: { name: `${name}-abcde.1`, namespace: ns },
          involvedObject: { kind: 'Pod', name: `${name}-abcde`, namespace: ns, apiVersion: 'v1' },
          reason: 'FailedScheduling',
          message: '0/1 nodes are available: 1 Insufficient memory.',
          type: 'Warning',
          count: 3,
          source: { component: 'default-scheduler' },
        },
      });
      await realSleep(1500); // let one poll see the pod
      const fresh = await batch.readNamespacedJob({ name, namespace: ns });
      // What the Job controller writes at the deadline: the API server refuses a Failed
      // condition without the FailureTarget condition before it and the Job's start time.
      fresh.status = {
        failed: 0,
        startTime: fresh.metadata?.creationTimestamp ?? new Date(),
        conditions: [
          {
            type: 'FailureTarget',
            status: 'True',
            reason: 'DeadlineExceeded',
            message: 'Job was active longer than specified deadline',
          },
          {
            type: 'Failed',
            status: 'True',
            reason: 'DeadlineExceeded',
            message: 'Job was active longer than specified deadline',
          },
        ],
      };
      await batch.replaceNamespacedJobStatus({ name, namespace: ns, body: fresh });
    };
    const deps = { ...base, sleep };
    const code = await runGc(
      [
        'cluster',
        '--json',
        '--namespace',
        ns,
        '--image',
        'lvstamp:test',
        '--owner-id',
        OWNER,
        '--poll-interval',
        '1s',
        '--wait-timeout',
        '20s',
      ],
      deps,
    );
    expect(deps.out(), deps.err()).not.toBe('');
    const report = JSON.parse(deps.out()) as ClusterReport;
    const full = report.nodes.find((n) => n.node === 'node-full');
    const job = full?.job ?? '';
    expect(full).toEqual({
      node: 'node-full',
      job,
      status: 'not-started',
      summary: null,
      error:
        'job failed before it ran: DeadlineExceeded: Job was active longer than specified deadline; ' +
        `pod ${job}-abcde Pending: not scheduled: Unschedulable: 0/1 nodes are available: 1 Insufficient memory.; ` +
        'events: FailedScheduling (x3): 0/1 nodes are available: 1 Insufficient memory.',
    });
    // node-a and node-c of the test above get no pod here at all
    const other = report.nodes.find((n) => n.node === 'node-a');
    expect(other).toMatchObject({
      status: 'not-started',
      error: `job ${other?.job ?? ''} did not start within 20 s: no pod created`,
    });
    expect(code).toBe(3);
    expect(deps.err()).toBe(
      'lvstamp-gc: 3 node(s) never ran their Job (not-started: node-a, node-c, node-full); see the report above\n',
    );
  }, 300_000);
});

describe('VolumeSnapshotContents against kube-apiserver', () => {
  const GROUP = 'snapshot.storage.k8s.io';
  const now = Date.now();
  const bound = snapshotIdForName('snap-bound');
  const imported = snapshotIdForName('snap-imported');

  it('the CRD absent is a 404; installed, the snapshot handles of the driver keep their snapshot LVs (ServiceAccount of deploy/)', async () => {
    await expect(api().listVolumeSnapshotContents({ limit: 10 })).rejects.toMatchObject({
      status: 404,
    });
    // The v1 CRD's names and scope (external-snapshotter client/config/crd), schema left open.
    await kapi.admin.makeApiClient(ApiextensionsV1Api).createCustomResourceDefinition({
      body: {
        metadata: {
          name: `volumesnapshotcontents.${GROUP}`,
          annotations: {
            'api-approved.kubernetes.io':
              'https://github.com/kubernetes-csi/external-snapshotter/pull/419',
          },
        },
        spec: {
          group: GROUP,
          scope: 'Cluster',
          names: {
            plural: 'volumesnapshotcontents',
            singular: 'volumesnapshotcontent',
            kind: 'VolumeSnapshotContent',
            listKind: 'VolumeSnapshotContentList',
          },
          versions: [
            {
              name: 'v1',
              served: true,
              storage: true,
              subresources: { status: {} },
              schema: {
                openAPIV3Schema: { type: 'object', x_kubernetes_preserve_unknown_fields: true },
              },
            },
          ],
        },
      },
    });
    const custom = kapi.admin.makeApiClient(CustomObjectsApi);
    const content = (name: string, driver: string, source: Record<string, string>) => ({
      apiVersion: `${GROUP}/v1`,
      kind: 'VolumeSnapshotContent',
      metadata: { name },
      spec: {
        driver,
        deletionPolicy: 'Delete',
        source,
        volumeSnapshotRef: { name, namespace: 'default' },
      },
    });
    const create = async (body: ReturnType<typeof content>) => {
      for (let i = 0; ; i += 1) {
        try {
          return (await custom.createClusterCustomObject({
            group: GROUP,
            version: 'v1',
            plural: 'volumesnapshotcontents',
            body,
          })) as unknown;
        } catch (error) {
          if (i >= 60) throw error; // the CRD takes a moment to be served
          await new Promise((resolve) => setTimeout(resolve, 500));
        }
      }
    };
    await create(content('snapcontent-bound', 'lvstamp.io', { volumeHandle: 'a'.repeat(32) }));
    await custom.patchClusterCustomObjectStatus(
      {
        group: GROUP,
        version: 'v1',
        plural: 'volumesnapshotcontents',
        name: 'snapcontent-bound',
        body: { status: { snapshotHandle: bound, readyToUse: true } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await create(content('snapcontent-imported', 'lvstamp.io', { snapshotHandle: imported }));
    await create(
      content('snapcontent-other', 'other.csi.io', {
        snapshotHandle: snapshotIdForName('snap-orphan'),
      }),
    );

    const node = new FakeNode();
    for (const name of ['snap-bound', 'snap-imported', 'snap-orphan']) {
      node.addSnapshot({ name, source: 'pvc-gone', ownerId: OWNER, createdAtMs: now - 5 * HOUR });
    }
    const token = await saToken('lvstamp-gc');
    const { code, err, report } = await runNodeJson(
      api(kapi.kubeConfigForToken(token)),
      node,
      now,
      ['--apply', '--max-delete-percent', '100', '--page-size', '1'],
    );
    expect(err).toBe('');
    expect(code).toBe(0);
    expect(report?.liveSet).toMatchObject({ snapshotIds: 2, snapshotContents: 2 });
    expect(node.removed).toEqual([`lvstamp_snap_${snapshotIdForName('snap-orphan')}`]);
    expect(node.snapshots.map((s) => s.lvName).sort()).toEqual(
      [`lvstamp_snap_${bound}`, `lvstamp_snap_${imported}`].sort(),
    );
  });
});

describe('an API server that stops mid-run', () => {
  it('aborts the node run; nothing is deleted', async () => {
    const now = Date.now();
    const real = api();
    let pages = 0;
    const stopping: KubeApi = {
      ...real,
      listPersistentVolumes: async (page) => {
        pages += 1;
        const result = await real.listPersistentVolumes(page);
        if (pages === 1) await kapi.stop(false);
        return result;
      },
    };
    const node = new FakeNode();
    const orphan = node.add({
      name: 'pvc-stop-orphan',
      ownerId: OWNER,
      createdAtMs: now - 5 * HOUR,
    });
    const { code, err } = await runNodeJson(stopping, node, now, [
      '--apply',
      '--page-size',
      '2',
      '--max-delete-percent',
      '100',
      '--allow-empty-live-set',
    ]);
    expect(code).toBe(1);
    expect(err).toMatch(
      /^lvstamp-gc: cannot list persistentvolumes: API server unreachable or unavailable: .*ECONNREFUSED/,
    );
    expect(pages).toBe(2);
    expect(node.removed).toEqual([]);
    expect(node.ids()).toEqual([orphan]);
  });
});
