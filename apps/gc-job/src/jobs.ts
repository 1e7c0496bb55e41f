import { createHash } from 'node:crypto';
import { dirname } from 'node:path';
import { DEFAULT_HOST_LOCK_PATH } from '@lvstamp/core';
import type { ClusterConfig } from './config.js';

/** Label on every per-node Job (and its pods) that `lvstamp-gc cluster` creates. */
export const NODE_JOB_LABEL = 'app.kubernetes.io/component';
export const NODE_JOB_LABEL_VALUE = 'lvstamp-gc-node';
/** Label with the node a per-node Job runs on (truncated to 63 characters). */
export const NODE_LABEL = 'lvstamp.io/gc-node';
/** Label on a per-node Job's pods with the Job's name (at most 63 characters, `nodeJobName`). */
export const JOB_NAME_LABEL = 'lvstamp.io/gc-job';

/**
 * Host paths the per-node Job mounts: what lvm2 and device-mapper need, lvm2's own lock directory
 * (so its `lvremove`/`lvchange` and any lvm command on the host take the same VG locks; lvm.conf(5)
 * `global/locking_dir`), lvm's metadata archive and backup directories, the shared host lock, and
 * the kernel's modules read-only (lvm loads dm-thin-pool itself to activate a thin snapshot after a
 * reboot). The node DaemonSet mounts the same directories. Not the host's `/etc/lvm`: lvm.conf
 * comes from LVM_CONFIG_MAP, as in the DaemonSet.
 */
export const NODE_JOB_HOST_PATHS: readonly {
  name: string;
  path: string;
  type: string;
  readOnly?: true;
}[] = [
  { name: 'dev', path: '/dev', type: 'Directory' },
  { name: 'sys', path: '/sys', type: 'Directory' },
  { name: 'lvm-archive', path: '/etc/lvm/archive', type: 'DirectoryOrCreate' },
  { name: 'lvm-backup', path: '/etc/lvm/backup', type: 'DirectoryOrCreate' },
  { name: 'lvm-run', path: '/run/lvm', type: 'DirectoryOrCreate' },
  { name: 'lvm-lock', path: '/run/lock/lvm', type: 'DirectoryOrCreate' },
  { name: 'host-lock', path: dirname(DEFAULT_HOST_LOCK_PATH), type: 'DirectoryOrCreate' },
  { name: 'modules', path: '/lib/modules', type: 'DirectoryOrCreate', readOnly: true },
];

/** The volumes of lvm's metadata archive and backup: an emptyDir each under `lvmMetadata: emptyDir`. */
const LVM_METADATA_VOLUMES = new Set(['lvm-archive', 'lvm-backup']);

/**
 * The ConfigMap with the lvm.conf the node DaemonSet runs with (deploy/kubernetes/configmap-lvm.yaml:
 * no udev, the device filter of docs/LVM-CONFIG.md, the bounded archive), in the namespace of the
 * per-node Jobs (the GC's, which is the driver's: the CronJob reads the driver's ConfigMap too).
 * Each per-node Job mounts its key `lvm.conf` at /etc/lvm/lvm.conf, read-only.
 */
export const LVM_CONFIG_MAP = 'lvstamp-lvm-conf';

/**
 * The name of the per-node Job for `node`: `lvstamp-gc-<node, cut>-<hash>`,
 * at most 63 characters (a Job name becomes its pods' `job-name` label).
 * The hash covers the owner Job's UID and the node, so each CronJob run has
 * its own Jobs and a retried `cluster` pod finds the ones it made.
 */
export function nodeJobName(config: Pick<ClusterConfig, 'ownerJob'>, node: string): string {
  const hash = createHash('sha256')
    .update(`${config.ownerJob?.uid ?? 'no-owner'}/${node}`)
    .digest('hex')
    .slice(0, 10);
  const readable = node
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, '-')
    .slice(0, 40)
    .replace(/-+$/, '');
  return `lvstamp-gc-${readable}-${hash}`.replace(/--+/g, '-');
}

/** The `lvstamp-gc node` arguments that carry the cluster run's policy to one node. */
export function nodeArgs(config: ClusterConfig, jobName: string): string[] {
  return [
    'node',
    '--driver-name',
    config.driverName,
    '--min-age',
    `${config.minAgeMs}ms`,
    '--quarantine',
    `${config.quarantineMs}ms`,
    '--wipe',
    config.wipe,
    '--max-delete',
    String(config.maxDeletions),
    '--max-delete-percent',
    String(config.maxDeletionPercent),
    '--page-size',
    String(config.pageSize),
    '--request-timeout',
    `${config.requestTimeoutMs}ms`,
    '--events-namespace',
    config.eventsNamespace,
    '--report-job',
    `${config.namespace}/${jobName}`,
    '--log-level',
    config.logLevel,
    ...(config.apply ? ['--apply'] : []),
    ...(config.allowEmptyLiveSet ? ['--allow-empty-live-set'] : []),
  ];
}

/**
 * The batch/v1 Job that runs `lvstamp-gc node` on `node`: pinned by node name
 * (node affinity, not `spec.nodeName`), tolerating every taint, privileged
 * with NODE_JOB_HOST_PATHS and the driver's lvm.conf (LVM_CONFIG_MAP), owned by the CronJob's Job, `backoffLimit: 0`,
 * `activeDeadlineSeconds` from `nodeJobDeadlineMs`; why, README "Garbage
 * collection job". LVSTAMP_OWNER_ID and NODE_NAME (downward API) reach the pod.
 */
export function buildNodeJob(config: ClusterConfig, node: string): Record<string, unknown> {
  const name = nodeJobName(config, node);
  const labels = {
    'app.kubernetes.io/name': 'lvstamp',
    'app.kubernetes.io/part-of': 'lvstamp',
    [NODE_JOB_LABEL]: NODE_JOB_LABEL_VALUE,
    [NODE_LABEL]: node.slice(0, 63).replace(/[^A-Za-z0-9]+$/, ''),
  };
  const podLabels = { ...labels, [JOB_NAME_LABEL]: name };
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name,
      namespace: config.namespace,
      labels,
      ...(config.ownerJob === null
        ? {}
        : {
            ownerReferences: [
              {
                apiVersion: 'batch/v1',
                kind: 'Job',
                name: config.ownerJob.name,
                uid: config.ownerJob.uid,
              },
            ],
          }),
    },
    spec: {
      backoffLimit: 0,
      activeDeadlineSeconds: Math.max(1, Math.ceil(config.nodeJobDeadlineMs / 1000)),
      template: {
        metadata: { labels: podLabels },
        spec: {
          restartPolicy: 'Never',
          serviceAccountName: config.serviceAccount,
          affinity: {
            nodeAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: {
                nodeSelectorTerms: [
                  {
                    matchFields: [{ key: 'metadata.name', operator: 'In', values: [node] }],
                  },
                ],
              },
            },
          },
          tolerations: [{ operator: 'Exists' }],
          containers: [
            {
              name: 'gc',
              image: config.image,
              ...(config.imagePullPolicy === null
                ? {}
                : { imagePullPolicy: config.imagePullPolicy }),
              args: nodeArgs(config, name),
              env: [
                { name: 'LVSTAMP_OWNER_ID', value: config.ownerId },
                { name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
              ],
              securityContext: { privileged: true },
              volumeMounts: [
                ...NODE_JOB_HOST_PATHS.map((h) => ({
                  name: h.name,
                  mountPath: h.path,
                  ...(h.readOnly ? { readOnly: true } : {}),
                  ...(h.name === 'dev' ? { mountPropagation: 'HostToContainer' } : {}),
                })),
                {
                  name: 'lvm-conf',
                  mountPath: '/etc/lvm/lvm.conf',
                  subPath: 'lvm.conf',
                  readOnly: true,
                },
              ],
            },
          ],
          volumes: [
            ...NODE_JOB_HOST_PATHS.map((h) =>
              config.lvmMetadata === 'emptyDir' && LVM_METADATA_VOLUMES.has(h.name)
                ? { name: h.name, emptyDir: {} }
                : { name: h.name, hostPath: { path: h.path, type: h.type } },
            ),
            { name: 'lvm-conf', configMap: { name: LVM_CONFIG_MAP } },
          ],
        },
      },
    },
  };
}
