import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { FakeKube } from './testing/fake-kube.js';
import { FakeNode } from './testing/fake-node.js';
import { testDeps } from './testing/deps.js';
import { runGc } from './program.js';
import {
  buildNodeJob,
  JOB_NAME_LABEL,
  LVM_CONFIG_MAP,
  NODE_JOB_LABEL,
  NODE_JOB_LABEL_VALUE,
  nodeJobName,
} from './jobs.js';
import type { PodInfo } from './kube/api.js';
import { resolveClusterConfig, withEnvironment, type RawClusterOptions } from './config.js';
import { REPORT_ANNOTATION } from './node-run.js';
import type { ClusterReport } from './cluster-run.js';

const OWNER = 'ab'.repeat(16);
const NOW = Date.parse('2025-06-01T12:00:00Z');
const ARGS = [
  'cluster',
  '--json',
  '--namespace',
  'gc',
  '--image',
  'img:1',
  '--owner-id',
  OWNER,
  '--owner-job-name',
  'parent',
  '--owner-job-uid',
  'puid',
  '--poll-interval',
  '10s',
  '--wait-timeout',
  '1m',
];

function config() {
  return resolveClusterConfig(
    withEnvironment<RawClusterOptions>(
      {
        json: false,
        namespace: 'gc',
        image: 'img:1',
        ownerId: OWNER,
        ownerJobName: 'parent',
        ownerJobUid: 'puid',
        apply: true,
      },
      {},
    ),
    {},
  );
}

const RUNNING = { state: 'running', reason: null, message: null } as const;

/** A pod of the per-node Job of `node`, as the Job controller labels it. */
function pod(node: string, fields: Partial<PodInfo> = {}): PodInfo & { namespace: string } {
  const job = nodeJobName(config(), node);
  return {
    namespace: 'gc',
    name: `${job}-x1`,
    uid: `uid-${job}`,
    labels: {
      [NODE_JOB_LABEL]: NODE_JOB_LABEL_VALUE,
      [JOB_NAME_LABEL]: job,
    },
    nodeName: null,
    phase: 'Pending',
    reason: null,
    message: null,
    unscheduled: null,
    containers: [],
    ...fields,
  };
}

function okSummary(node: string) {
  return {
    node,
    status: 'ok',
    kept: 0,
    warnings: 0,
    planned: 0,
    removed: 0,
    skipped: 0,
    errors: 0,
  };
}

describe('per-node Job', () => {
  it('is pinned to the node, tolerates taints, is owned by the CronJob’s Job and carries the policy', () => {
    const job = buildNodeJob(config(), 'worker-1.example.com') as {
      metadata: { name: string; ownerReferences: unknown };
      spec: {
        backoffLimit: number;
        activeDeadlineSeconds: number;
        template: {
          spec: {
            affinity: unknown;
            tolerations: unknown;
            containers: { args: string[]; env: unknown }[];
          };
        };
      };
    };
    // pinned by the node's name (matchFields metadata.name), not by the kubernetes.io/hostname label
    expect(job.metadata.name).toBe(nodeJobName(config(), 'worker-1.example.com'));
    expect(job.metadata.name).toMatch(/^lvstamp-gc-worker-1-example-com-[0-9a-f]{10}$/);
    expect(job.metadata.ownerReferences).toEqual([
      { apiVersion: 'batch/v1', kind: 'Job', name: 'parent', uid: 'puid' },
    ]);
    expect(job.spec).toMatchObject({ backoffLimit: 0, activeDeadlineSeconds: 1200 });
    const pod = job.spec.template.spec;
    expect(pod.affinity).toEqual({
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [
            {
              matchFields: [
                { key: 'metadata.name', operator: 'In', values: ['worker-1.example.com'] },
              ],
            },
          ],
        },
      },
    });
    expect(pod.tolerations).toEqual([{ operator: 'Exists' }]);
    expect(pod.containers[0]?.args).toEqual([
      'node',
      '--driver-name',
      'lvstamp.io',
      '--min-age',
      '3600000ms',
      // The shipped default window: 7 days (DESIGN.md §6 "Quarantine").
      '--quarantine',
      '604800000ms',
      // The shipped default wipe (DESIGN.md §5 "Wipe").
      '--wipe',
      'discard',
      '--max-delete',
      '10',
      '--max-delete-percent',
      '50',
      '--page-size',
      '500',
      '--request-timeout',
      '30000ms',
      '--events-namespace',
      'default',
      '--report-job',
      `gc/${job.metadata.name}`,
      '--log-level',
      'info',
      '--apply',
    ]);
    expect(pod.containers[0]?.env).toEqual([
      { name: 'LVSTAMP_OWNER_ID', value: OWNER },
      { name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
    ]);
  });

  it('mounts lvm2’s lock directory and the host lock the node DaemonSet shares, beside /dev, /sys, lvm’s archive and backup and (read-only) the kernel modules', () => {
    const job = buildNodeJob(config(), 'worker-1') as {
      spec: {
        template: {
          spec: {
            volumes: { name: string; hostPath?: { path: string } }[];
            containers: { volumeMounts: Record<string, unknown>[] }[];
          };
        };
      };
    };
    // lvm2 takes its VG locks in /run/lock/lvm (lvm.conf(5) locking_dir): without the host's
    // directory the Job's lvremove would not wait for an lvm command run on the node itself.
    expect(job.spec.template.spec.volumes.flatMap((v) => v.hostPath?.path ?? [])).toEqual([
      '/dev',
      '/sys',
      '/etc/lvm/archive',
      '/etc/lvm/backup',
      '/run/lvm',
      '/run/lock/lvm',
      '/run/lock/lvstamp',
      '/lib/modules',
    ]);
    // the modules and lvm.conf only to read (lvm's modprobe of dm-thin-pool)
    const mounts = job.spec.template.spec.containers[0]?.volumeMounts;
    expect(mounts?.find((m) => m.name === 'modules')).toEqual({
      name: 'modules',
      mountPath: '/lib/modules',
      readOnly: true,
    });
    expect(mounts?.filter((m) => m.readOnly === true).map((m) => m.name)).toEqual([
      'modules',
      'lvm-conf',
    ]);
  });

  it('--lvm-metadata emptyDir (a read-only /etc, the chart’s lvmMetadata): the archive and backup in the pod, every other host path kept', () => {
    const raw = withEnvironment<RawClusterOptions>(
      { json: false, namespace: 'gc', image: 'img:1', ownerId: OWNER },
      { LVSTAMP_GC_LVM_METADATA: 'emptyDir' },
    );
    const job = buildNodeJob(resolveClusterConfig(raw, {}), 'worker-1') as {
      spec: { template: { spec: { volumes: Record<string, unknown>[] } } };
    };
    const volumes = job.spec.template.spec.volumes;
    expect(volumes.filter((v) => v.name === 'lvm-archive' || v.name === 'lvm-backup')).toEqual([
      { name: 'lvm-archive', emptyDir: {} },
      { name: 'lvm-backup', emptyDir: {} },
    ]);
    expect(
      volumes.flatMap((v) => (v.hostPath as { path: string } | undefined)?.path ?? []),
    ).toEqual(['/dev', '/sys', '/run/lvm', '/run/lock/lvm', '/run/lock/lvstamp', '/lib/modules']);
    expect(() =>
      resolveClusterConfig(
        withEnvironment<RawClusterOptions>(
          { json: false, namespace: 'gc', image: 'img:1', ownerId: OWNER },
          { LVSTAMP_GC_LVM_METADATA: 'tmpfs' },
        ),
        {},
      ),
    ).toThrow(
      `--lvm-metadata / LVSTAMP_GC_LVM_METADATA: must be hostPath or emptyDir (as the driver's DaemonSet), got "tmpfs"`,
    );
  });

  it('runs lvm with the DaemonSet’s lvm.conf (its ConfigMap, the same mount), not the host’s /etc/lvm', async () => {
    const job = buildNodeJob(config(), 'worker-1') as {
      spec: { template: { spec: PodSpec } };
    };
    type PodSpec = {
      volumes: { name: string; configMap?: { name: string } }[];
      containers: { name: string; volumeMounts: { name: string; mountPath: string }[] }[];
    };
    const daemonSet = parse(
      await readFile(new URL('../../../deploy/kubernetes/daemonset.yaml', import.meta.url), 'utf8'),
    ) as { spec: { template: { spec: PodSpec } } };
    const driverPod = daemonSet.spec.template.spec;
    const driverMount = driverPod.containers
      .find((c) => c.name === 'lvstamp-csi')
      ?.volumeMounts.find((m) => m.mountPath === '/etc/lvm/lvm.conf');
    const driverVolume = driverPod.volumes.find((v) => v.name === driverMount?.name);
    expect(driverVolume?.configMap?.name).toBe(LVM_CONFIG_MAP);
    const pod = job.spec.template.spec;
    const mount = pod.containers[0]?.volumeMounts.find((m) => m.mountPath === '/etc/lvm/lvm.conf');
    expect(mount).toEqual(driverMount);
    expect(pod.volumes.find((v) => v.name === mount?.name)).toEqual(driverVolume);
    // the archive and backup directories are the DaemonSet's host paths too; /etc/lvm is not mounted
    const paths = (spec: PodSpec) =>
      (spec.volumes as { hostPath?: { path: string } }[]).flatMap((v) => v.hostPath?.path ?? []);
    expect(paths(pod)).not.toContain('/etc/lvm');
    for (const dir of ['/etc/lvm/archive', '/etc/lvm/backup']) {
      expect(paths(driverPod)).toContain(dir);
      expect(paths(pod)).toContain(dir);
    }
  });

  it('names stay within 63 characters for long node names', () => {
    expect(nodeJobName(config(), 'n'.repeat(253)).length).toBeLessThanOrEqual(63);
  });
});

describe('lvstamp-gc cluster (fake API)', () => {
  it('starts a Job per driver node, waits, and exits 1 when a node failed or timed out', async () => {
    const kube = new FakeKube();
    kube.csiNodes = [
      { name: 'a', drivers: ['lvstamp.io'] },
      { name: 'b', drivers: ['other'] },
      { name: 'c', drivers: ['lvstamp.io'] },
      { name: 'd', drivers: ['lvstamp.io'] },
    ];
    // the pods of c and d ran (so c failed and d timed out, not "not-started")
    for (const n of ['c', 'd']) kube.pods.push(pod(n, { phase: 'Running', containers: [RUNNING] }));
    const base = testDeps(kube, new FakeNode(), { nowMs: NOW });
    let polls = 0;
    const deps = {
      ...base,
      sleep: async (ms: number) => {
        await base.sleep(ms);
        polls += 1;
        if (polls !== 1) return;
        const [a, c] = [nodeJobName(config(), 'a'), nodeJobName(config(), 'c')];
        await kube.annotateJob('gc', a, {
          [REPORT_ANNOTATION]: JSON.stringify({
            node: 'a',
            status: 'ok',
            kept: 2,
            warnings: 1,
            planned: 1,
            removed: 0,
            skipped: 1,
            errors: 0,
          }),
        });
        kube.finishJob(a, 'complete');
        kube.finishJob(
          c,
          'failed',
          'DeadlineExceeded: Job was active longer than specified deadline',
        );
      },
    };
    const code = await runGc(ARGS, deps);
    expect(code).toBe(1);
    expect(deps.err()).toBe('lvstamp-gc: 2 node(s) failed; see the report above\n');
    const report = JSON.parse(deps.out()) as ClusterReport;
    expect(report.nodes.map((n) => [n.node, n.status, n.error])).toEqual([
      ['a', 'ok', null],
      [
        'c',
        'failed',
        'job failed: DeadlineExceeded: Job was active longer than specified deadline',
      ],
      ['d', 'timed-out', `job ${nodeJobName(config(), 'd')} did not finish within 60 s`],
    ]);
    expect(report.totals).toEqual({
      kept: 2,
      warnings: 1,
      planned: 1,
      removed: 0,
      quarantined: 0,
      skipped: 1,
      errors: 2,
    });
    expect([...kube.jobs.keys()].sort()).toEqual(
      ['a', 'c', 'd'].map((n) => nodeJobName(config(), n)).sort(),
    );
  });

  it('reports a node whose Job never ran as not-started with the scheduler’s reason and events, exit 3', async () => {
    const kube = new FakeKube();
    kube.csiNodes = [
      { name: 'a', drivers: ['lvstamp.io'] },
      { name: 'cordoned', drivers: ['lvstamp.io'] },
      { name: 'no-image', drivers: ['lvstamp.io'] },
    ];
    const a = nodeJobName(config(), 'a');
    const cordoned = nodeJobName(config(), 'cordoned');
    kube.pods.push(
      pod('a', {
        phase: 'Succeeded',
        containers: [{ state: 'terminated', reason: 'Completed', message: null }],
      }),
      pod('cordoned', {
        unscheduled: {
          reason: 'Unschedulable',
          message:
            "0/3 nodes are available: 1 Insufficient memory, 2 node(s) didn't match node affinity.",
        },
      }),
      pod('no-image', {
        nodeName: 'no-image',
        containers: [
          {
            state: 'waiting',
            reason: 'ImagePullBackOff',
            message: 'Back-off pulling image "img:1"',
          },
        ],
      }),
    );
    kube.warnings.push(
      {
        namespace: 'gc',
        involvedKind: 'Pod',
        involvedName: `${cordoned}-x1`,
        type: 'Warning',
        reason: 'FailedScheduling',
        message: '0/3 nodes are available: 1 Insufficient memory.',
        count: 4,
      },
      {
        namespace: 'gc',
        involvedKind: 'Pod',
        involvedName: 'someone-else',
        type: 'Warning',
        reason: 'FailedMount',
        message: 'not ours',
        count: 1,
      },
    );
    const base = testDeps(kube, new FakeNode(), { nowMs: NOW });
    let polls = 0;
    const deps = {
      ...base,
      sleep: async (ms: number) => {
        await base.sleep(ms);
        polls += 1;
        if (polls !== 1) return;
        await kube.annotateJob('gc', a, { [REPORT_ANNOTATION]: JSON.stringify(okSummary('a')) });
        kube.finishJob(a, 'complete');
        // the Job controller fails the unschedulable Job at its activeDeadlineSeconds
        kube.finishJob(
          cordoned,
          'failed',
          'DeadlineExceeded: Job was active longer than specified deadline',
        );
      },
    };
    const code = await runGc(ARGS, deps);
    expect(code).toBe(3);
    expect(deps.err()).toBe(
      'lvstamp-gc: 2 node(s) never ran their Job (not-started: cordoned, no-image); see the report above\n',
    );
    const report = JSON.parse(deps.out()) as ClusterReport;
    expect(report.nodes.map((n) => [n.node, n.status, n.error])).toEqual([
      ['a', 'ok', null],
      [
        'cordoned',
        'not-started',
        'job failed before it ran: DeadlineExceeded: Job was active longer than specified deadline; ' +
          `pod ${cordoned}-x1 Pending: not scheduled: Unschedulable: 0/3 nodes are available: 1 Insufficient memory, 2 node(s) didn't match node affinity.; ` +
          'events: FailedScheduling (x4): 0/3 nodes are available: 1 Insufficient memory.',
      ],
      [
        'no-image',
        'not-started',
        `job ${nodeJobName(config(), 'no-image')} did not start within 60 s: ` +
          `pod ${nodeJobName(config(), 'no-image')}-x1 Pending on no-image: ImagePullBackOff: Back-off pulling image "img:1"`,
      ],
    ]);
    expect(report).toMatchObject({ failedNodes: 2, notStartedNodes: 2 });
    // the pods were found by the per-node label, once per poll
    expect(kube.calls.find((c) => c.method === 'listPods')?.args.slice(0, 2)).toEqual([
      'gc',
      'app.kubernetes.io/component=lvstamp-gc-node',
    ]);
  });

  it('a Job that failed without any pod created is not-started, with the Job’s events', async () => {
    const kube = new FakeKube();
    kube.csiNodes = [{ name: 'a', drivers: ['lvstamp.io'] }];
    const a = nodeJobName(config(), 'a');
    kube.warnings.push({
      namespace: 'gc',
      involvedKind: 'Job',
      involvedName: a,
      type: 'Warning',
      reason: 'FailedCreate',
      message: 'pods "x" is forbidden: violates PodSecurity "baseline:latest": privileged',
      count: 1,
    });
    const base = testDeps(kube, new FakeNode(), { nowMs: NOW });
    const deps = {
      ...base,
      sleep: async (ms: number) => {
        await base.sleep(ms);
        kube.finishJob(a, 'failed', 'BackoffLimitExceeded');
      },
    };
    expect(await runGc(ARGS, deps)).toBe(3);
    const report = JSON.parse(deps.out()) as ClusterReport;
    expect(report.nodes[0]).toMatchObject({
      status: 'not-started',
      error:
        'job failed before it ran: BackoffLimitExceeded; no pod created; events: FailedCreate: ' +
        'pods "x" is forbidden: violates PodSecurity "baseline:latest": privileged',
    });
  });

  it('a failed node and a not-started node together exit 1 and name both', async () => {
    const kube = new FakeKube();
    kube.csiNodes = [
      { name: 'a', drivers: ['lvstamp.io'] },
      { name: 'b', drivers: ['lvstamp.io'] },
    ];
    kube.pods.push(pod('a', { phase: 'Running', containers: [RUNNING] }));
    const base = testDeps(kube, new FakeNode(), { nowMs: NOW });
    const deps = {
      ...base,
      sleep: async (ms: number) => {
        await base.sleep(ms);
        kube.finishJob(nodeJobName(config(), 'a'), 'failed', 'BackoffLimitExceeded');
        kube.finishJob(nodeJobName(config(), 'b'), 'failed', 'DeadlineExceeded');
      },
    };
    expect(await runGc(ARGS, deps)).toBe(1);
    expect(deps.err()).toBe(
      'lvstamp-gc: 2 node(s) failed, 1 node(s) never ran their Job (not-started: b); see the report above\n',
    );
  });

  it('adopts a Job that exists already (a retried cluster pod) instead of failing', async () => {
    const kube = new FakeKube();
    kube.csiNodes = [{ name: 'a', drivers: ['lvstamp.io'] }];
    const name = nodeJobName(config(), 'a');
    await kube.createJob('gc', { metadata: { name } });
    await kube.annotateJob('gc', name, {
      [REPORT_ANNOTATION]: JSON.stringify({
        node: 'a',
        status: 'ok',
        kept: 0,
        warnings: 0,
        planned: 0,
        removed: 0,
        skipped: 0,
        errors: 0,
      }),
    });
    kube.finishJob(name, 'complete');
    const deps = testDeps(kube, new FakeNode(), { nowMs: NOW });
    expect(await runGc(ARGS, deps)).toBe(0);
    expect(deps.err()).toBe('');
  });

  it('a CSINode list that fails starts nothing', async () => {
    const kube = new FakeKube();
    kube.csiNodes = [{ name: 'a', drivers: ['lvstamp.io'] }];
    kube.failOn('listCsiNodes', 1, 403, 'csinodes.storage.k8s.io is forbidden');
    const deps = testDeps(kube, new FakeNode(), { nowMs: NOW });
    expect(await runGc(ARGS, deps)).toBe(1);
    expect(deps.err()).toMatch(/forbidden \(HTTP 403\).*csinodes\.storage\.k8s\.io is forbidden/);
    expect(kube.jobs.size).toBe(0);
  });

  it('requires the image and a namespace, with clear messages', async () => {
    const deps = testDeps(new FakeKube(), new FakeNode(), { nowMs: NOW });
    expect(await runGc(['cluster', '--owner-job-name', 'x'], deps)).toBe(2);
    expect(deps.err()).toBe(
      'lvstamp-gc: --namespace / POD_NAMESPACE: the namespace of the per-node Jobs is required (a namespace name), got ""; ' +
        '--image / LVSTAMP_GC_IMAGE: the container image of the per-node Jobs is required (normally the same image as the CronJob); ' +
        '--owner-job-name and --owner-job-uid (LVSTAMP_GC_OWNER_JOB_NAME, LVSTAMP_GC_OWNER_JOB_UID) go together: set both (from the pod labels job-name and controller-uid) or neither\n',
    );
  });
});
