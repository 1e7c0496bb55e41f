import { hostname } from 'node:os';
import { DURATION_SYNTAX, parseDuration } from '@lvstamp/app-kit';
import {
  DEFAULT_HOST_LOCK_PATH,
  isHexId,
  STANDALONE_OWNER_ID,
  WIPE_POLICIES,
  type WipePolicy,
} from '@lvstamp/core';
import { ConfigError } from './errors.js';
import type { KubeCredentials } from './kube/client.js';

/** Defaults shared by the program's help, the manifests and the README. */
export const DEFAULTS = Object.freeze({
  driverName: 'lvstamp.io',
  ownerId: STANDALONE_OWNER_ID,
  minAge: '1h',
  quarantine: '7d',
  wipe: 'discard',
  maxDelete: '10',
  maxDeletePercent: '50',
  pageSize: '500',
  requestTimeout: '30s',
  lockFile: DEFAULT_HOST_LOCK_PATH,
  eventsNamespace: 'default',
  serviceAccount: 'lvstamp-gc',
  waitTimeout: '30m',
  pollInterval: '5s',
  nodeJobDeadline: '20m',
  logLevel: 'info',
  lvmMetadata: 'hostPath',
});

/**
 * Environment variable and default of each option that has one (flag wins,
 * then the variable, then the default).
 */
export const ENVIRONMENT: Readonly<Record<string, readonly [string, string | undefined]>> =
  Object.freeze({
    driverName: ['LVSTAMP_DRIVER_NAME', DEFAULTS.driverName],
    ownerId: ['LVSTAMP_OWNER_ID', DEFAULTS.ownerId],
    minAge: ['LVSTAMP_GC_MIN_AGE', DEFAULTS.minAge],
    quarantine: ['LVSTAMP_GC_QUARANTINE', DEFAULTS.quarantine],
    wipe: ['LVSTAMP_GC_WIPE', DEFAULTS.wipe],
    maxDelete: ['LVSTAMP_GC_MAX_DELETE', DEFAULTS.maxDelete],
    maxDeletePercent: ['LVSTAMP_GC_MAX_DELETE_PERCENT', DEFAULTS.maxDeletePercent],
    apply: ['LVSTAMP_GC_APPLY', 'false'],
    allowEmptyLiveSet: ['LVSTAMP_GC_ALLOW_EMPTY_LIVE_SET', 'false'],
    kubeconfig: ['KUBECONFIG', undefined],
    logLevel: ['LVSTAMP_LOG_LEVEL', DEFAULTS.logLevel],
    nodeName: ['NODE_NAME', undefined],
    lockFile: ['LVSTAMP_LOCK_FILE', DEFAULTS.lockFile],
    eventsNamespace: ['LVSTAMP_GC_EVENTS_NAMESPACE', DEFAULTS.eventsNamespace],
    reportJob: ['LVSTAMP_GC_REPORT_JOB', undefined],
    namespace: ['POD_NAMESPACE', undefined],
    image: ['LVSTAMP_GC_IMAGE', undefined],
    imagePullPolicy: ['LVSTAMP_GC_IMAGE_PULL_POLICY', undefined],
    lvmMetadata: ['LVSTAMP_GC_LVM_METADATA', DEFAULTS.lvmMetadata],
    serviceAccount: ['LVSTAMP_GC_SERVICE_ACCOUNT', DEFAULTS.serviceAccount],
    ownerJobName: ['LVSTAMP_GC_OWNER_JOB_NAME', undefined],
    ownerJobUid: ['LVSTAMP_GC_OWNER_JOB_UID', undefined],
    waitTimeout: ['LVSTAMP_GC_WAIT_TIMEOUT', DEFAULTS.waitTimeout],
    nodeJobDeadline: ['LVSTAMP_GC_NODE_JOB_DEADLINE', DEFAULTS.nodeJobDeadline],
    pageSize: ['', DEFAULTS.pageSize],
    requestTimeout: ['', DEFAULTS.requestTimeout],
    pollInterval: ['', DEFAULTS.pollInterval],
  });

/**
 * Fills every option not given as a flag from its environment variable,
 * else its default (`ENVIRONMENT`). An empty variable counts as unset.
 */
export function withEnvironment<T extends object>(raw: Partial<T>, env: Env): T {
  const out: Record<string, unknown> = { ...raw };
  for (const [key, [variable, fallback]] of Object.entries(ENVIRONMENT)) {
    if (out[key] !== undefined) continue;
    const fromEnv = variable === '' ? undefined : env[variable];
    out[key] = fromEnv !== undefined && fromEnv !== '' ? fromEnv : fallback;
  }
  return out as T;
}

/** Options of both modes, as commander hands them over (strings, from flags or environment). */
export interface RawCommonOptions {
  driverName: string;
  ownerId: string;
  minAge: string;
  quarantine: string;
  wipe: string;
  maxDelete: string;
  maxDeletePercent: string;
  apply: boolean | string;
  allowEmptyLiveSet: boolean | string;
  pageSize: string;
  requestTimeout: string;
  kubeconfig?: string | undefined;
  json: boolean;
  logLevel: string;
}

export interface RawNodeOptions extends RawCommonOptions {
  nodeName?: string | undefined;
  lockFile: string;
  eventsNamespace: string;
  reportJob?: string | undefined;
}

export interface RawClusterOptions extends RawCommonOptions {
  namespace?: string | undefined;
  image?: string | undefined;
  imagePullPolicy?: string | undefined;
  lvmMetadata: string;
  serviceAccount: string;
  ownerJobName?: string | undefined;
  ownerJobUid?: string | undefined;
  waitTimeout: string;
  pollInterval: string;
  nodeJobDeadline: string;
  eventsNamespace: string;
}

/** Validated options of both modes. Durations in milliseconds. */
export interface CommonConfig {
  /** CSI driver name (`spec.csi.driver` of its PVs, `spec.drivers[].name` of CSINodes). */
  readonly driverName: string;
  /** 32 lowercase hex digits. */
  readonly ownerId: string;
  /** Grace period, ms; measured from the header's createdAt. */
  readonly minAgeMs: number;
  /** Quarantine window, ms (DESIGN.md §6 "Quarantine"); 0: orphans are removed at once. */
  readonly quarantineMs: number;
  /** Wipe of a thick volume LV before the GC removes it (DESIGN.md §5 "Wipe"). */
  readonly wipe: WipePolicy;
  readonly maxDeletions: number;
  /** 0–100. */
  readonly maxDeletionPercent: number;
  /** False: plan and report only (the default). */
  readonly apply: boolean;
  readonly allowEmptyLiveSet: boolean;
  /** `limit` of each list page, 1–10000. */
  readonly pageSize: number;
  /** Deadline of each API request, ms. */
  readonly requestTimeoutMs: number;
  readonly credentials: KubeCredentials;
  readonly json: boolean;
  readonly logLevel: string;
}

export interface NodeConfig extends CommonConfig {
  /** The Node object this run is about (Events' involvedObject). */
  readonly nodeName: string;
  readonly lockFile: string;
  readonly eventsNamespace: string;
  /** The Job to annotate with this node's summary (`lvstamp-gc cluster` sets it). */
  readonly reportJob: { readonly namespace: string; readonly name: string } | null;
}

export interface ClusterConfig extends CommonConfig {
  /** Namespace of the per-node Jobs (the CronJob's own). */
  readonly namespace: string;
  readonly image: string;
  readonly imagePullPolicy: 'Always' | 'IfNotPresent' | 'Never' | null;
  /**
   * Where the per-node Jobs' lvm keeps its metadata archive and backup: the host's
   * /etc/lvm/archive and /etc/lvm/backup, or an emptyDir each (nodes whose /etc is read-only),
   * as the node DaemonSet does (the chart's value lvmMetadata; docs/install.md).
   */
  readonly lvmMetadata: 'hostPath' | 'emptyDir';
  readonly serviceAccount: string;
  /** The CronJob's Job that runs `cluster`: owner of the per-node Jobs. Null outside a Job. */
  readonly ownerJob: { readonly name: string; readonly uid: string } | null;
  readonly waitTimeoutMs: number;
  readonly pollIntervalMs: number;
  /** `activeDeadlineSeconds` of each per-node Job, in ms. */
  readonly nodeJobDeadlineMs: number;
  readonly eventsNamespace: string;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
// RFC 1123 label (namespaces, ServiceAccounts) and subdomain (node names, driver names).
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS_SUBDOMAIN =
  /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Collects every configuration mistake, then throws them together. */
class Problems {
  readonly #lines: string[] = [];
  add(line: string): void {
    this.#lines.push(line);
  }
  throwIfAny(): void {
    if (this.#lines.length > 0) throw new ConfigError(this.#lines.join('\n'));
  }
  duration(flag: string, text: string, options: { min?: number } = {}): number {
    const ms = parseDuration(text);
    if (ms === null) {
      this.add(`${flag}: "${text}" is not a duration (${DURATION_SYNTAX})`);
      return 0;
    }
    if (options.min !== undefined && ms < options.min)
      this.add(`${flag}: must be at least ${options.min} ms, got "${text}"`);
    return ms;
  }
  integer(flag: string, text: string, min: number, max: number): number {
    if (!/^\d+$/.test(text.trim()) || Number(text) < min || Number(text) > max) {
      this.add(`${flag}: must be a whole number from ${min} to ${max}, got "${text}"`);
      return min;
    }
    return Number(text);
  }
  oneOf<T extends string>(flag: string, text: string, choices: readonly T[]): T {
    const value = text.trim() as T;
    if (choices.includes(value)) return value;
    this.add(`${flag}: must be one of ${choices.join(', ')}, got "${text}"`);
    return choices[0] as T;
  }
  bool(flag: string, value: boolean | string): boolean {
    if (typeof value === 'boolean') return value;
    const v = value.trim().toLowerCase();
    if (['true', '1', 'yes'].includes(v)) return true;
    if (['false', '0', 'no', ''].includes(v)) return false;
    this.add(`${flag}: must be true or false, got "${value}"`);
    return false;
  }
}

function common(raw: RawCommonOptions, env: Env, p: Problems): CommonConfig {
  const driverName = raw.driverName.trim();
  if (!DNS_SUBDOMAIN.test(driverName))
    p.add(
      `--driver-name: "${raw.driverName}" is not a CSI driver name (a DNS subdomain, e.g. lvstamp.io)`,
    );
  const ownerId = raw.ownerId.trim().toLowerCase();
  if (!isHexId(ownerId))
    p.add(
      `--owner-id / LVSTAMP_OWNER_ID: must be 32 hex digits (the installation's owner ID), got "${raw.ownerId}"`,
    );
  const apply = p.bool('--apply / LVSTAMP_GC_APPLY', raw.apply);
  // DESIGN.md §6 "Owner": the standalone ID is the owner of the volumes a node admin makes with
  // `lvstamp create`; they are in no PV or PVC, so a cluster GC with that ID would remove them.
  if (apply && ownerId === STANDALONE_OWNER_ID)
    p.add(
      '--apply / LVSTAMP_GC_APPLY: refused with the standalone owner ID (32 zeros), the owner of ' +
        'volumes made by hand with `lvstamp create`, which are in no live set of the cluster; set ' +
        "the installation's owner ID (--owner-id / LVSTAMP_OWNER_ID: owner-id in the ConfigMap " +
        'lvstamp-csi-config, README "Deploying on a cluster", step 3)',
    );
  if (!LOG_LEVELS.includes(raw.logLevel))
    p.add(`--log-level: must be one of ${LOG_LEVELS.join(', ')}, got "${raw.logLevel}"`);
  const inCluster = raw.kubeconfig === undefined && (env.KUBERNETES_SERVICE_HOST ?? '') !== '';
  return {
    driverName,
    ownerId,
    minAgeMs: p.duration('--min-age / LVSTAMP_GC_MIN_AGE', raw.minAge),
    quarantineMs: p.duration('--quarantine / LVSTAMP_GC_QUARANTINE', raw.quarantine),
    wipe: p.oneOf('--wipe / LVSTAMP_GC_WIPE', raw.wipe, WIPE_POLICIES),
    maxDeletions: p.integer('--max-delete / LVSTAMP_GC_MAX_DELETE', raw.maxDelete, 0, 1_000_000),
    maxDeletionPercent: p.integer(
      '--max-delete-percent / LVSTAMP_GC_MAX_DELETE_PERCENT',
      raw.maxDeletePercent,
      0,
      100,
    ),
    apply,
    allowEmptyLiveSet: p.bool(
      '--allow-empty-live-set / LVSTAMP_GC_ALLOW_EMPTY_LIVE_SET',
      raw.allowEmptyLiveSet,
    ),
    pageSize: p.integer('--page-size', raw.pageSize, 1, 10_000),
    requestTimeoutMs: p.duration('--request-timeout', raw.requestTimeout, { min: 100 }),
    credentials: inCluster
      ? { source: 'in-cluster' }
      : { source: 'kubeconfig', path: raw.kubeconfig },
    json: raw.json,
    logLevel: raw.logLevel,
  };
}

type Env = Readonly<Record<string, string | undefined>>;

/**
 * Validates the options of `lvstamp-gc live-set` (the common options; only
 * the driver name, paging, request deadline and credentials are used).
 * @throws ConfigError listing every mistake.
 */
export function resolveLiveSetConfig(raw: RawCommonOptions, env: Env): CommonConfig {
  const p = new Problems();
  const base = common(raw, env, p);
  p.throwIfAny();
  return base;
}

/**
 * Validates the options of `lvstamp-gc node`.
 * @throws ConfigError listing every mistake, one per line, naming the flag and its variable.
 */
export function resolveNodeConfig(raw: RawNodeOptions, env: Env): NodeConfig {
  const p = new Problems();
  const base = common(raw, env, p);
  const nodeName = (raw.nodeName ?? hostname()).trim();
  if (!DNS_SUBDOMAIN.test(nodeName))
    p.add(`--node-name / NODE_NAME: "${nodeName}" is not a Kubernetes node name`);
  if (!DNS_LABEL.test(raw.eventsNamespace))
    p.add(`--events-namespace: "${raw.eventsNamespace}" is not a namespace name`);
  if (!raw.lockFile.startsWith('/'))
    p.add(`--lock-file / LVSTAMP_LOCK_FILE: must be an absolute path, got "${raw.lockFile}"`);
  let reportJob: NodeConfig['reportJob'] = null;
  if (raw.reportJob !== undefined && raw.reportJob !== '') {
    const [namespace = '', name = '', ...rest] = raw.reportJob.split('/');
    if (rest.length > 0 || !DNS_LABEL.test(namespace) || !DNS_SUBDOMAIN.test(name)) {
      p.add(
        `--report-job / LVSTAMP_GC_REPORT_JOB: must be <namespace>/<job name>, got "${raw.reportJob}"`,
      );
    } else reportJob = { namespace, name };
  }
  p.throwIfAny();
  return {
    ...base,
    nodeName,
    lockFile: raw.lockFile,
    eventsNamespace: raw.eventsNamespace,
    reportJob,
  };
}

/**
 * Validates the options of `lvstamp-gc cluster`.
 * @throws ConfigError listing every mistake, one per line, naming the flag and its variable.
 */
export function resolveClusterConfig(raw: RawClusterOptions, env: Env): ClusterConfig {
  const p = new Problems();
  const base = common(raw, env, p);
  const namespace = raw.namespace ?? '';
  if (!DNS_LABEL.test(namespace))
    p.add(
      `--namespace / POD_NAMESPACE: the namespace of the per-node Jobs is required (a namespace name), got "${namespace}"`,
    );
  const image = (raw.image ?? '').trim();
  if (image === '' || /\s/.test(image))
    p.add(
      '--image / LVSTAMP_GC_IMAGE: the container image of the per-node Jobs is required (normally the same image as the CronJob)',
    );
  const pull = raw.imagePullPolicy ?? '';
  if (pull !== '' && !['Always', 'IfNotPresent', 'Never'].includes(pull))
    p.add(`--image-pull-policy: must be Always, IfNotPresent or Never, got "${pull}"`);
  if (raw.lvmMetadata !== 'hostPath' && raw.lvmMetadata !== 'emptyDir')
    p.add(
      `--lvm-metadata / LVSTAMP_GC_LVM_METADATA: must be hostPath or emptyDir (as the driver's DaemonSet), got "${raw.lvmMetadata}"`,
    );
  if (!DNS_SUBDOMAIN.test(raw.serviceAccount))
    p.add(`--service-account: "${raw.serviceAccount}" is not a ServiceAccount name`);
  if (!DNS_LABEL.test(raw.eventsNamespace))
    p.add(`--events-namespace: "${raw.eventsNamespace}" is not a namespace name`);
  const ownerName = raw.ownerJobName ?? '';
  const ownerUid = raw.ownerJobUid ?? '';
  let ownerJob: ClusterConfig['ownerJob'] = null;
  if ((ownerName === '') !== (ownerUid === '')) {
    p.add(
      '--owner-job-name and --owner-job-uid (LVSTAMP_GC_OWNER_JOB_NAME, LVSTAMP_GC_OWNER_JOB_UID) go together: set both (from the pod labels job-name and controller-uid) or neither',
    );
  } else if (ownerName !== '') ownerJob = { name: ownerName, uid: ownerUid };
  const waitTimeoutMs = p.duration('--wait-timeout', raw.waitTimeout, { min: 1 });
  const pollIntervalMs = p.duration('--poll-interval', raw.pollInterval, { min: 10 });
  const nodeJobDeadlineMs = p.duration('--node-job-deadline', raw.nodeJobDeadline, { min: 1000 });
  p.throwIfAny();
  return {
    ...base,
    namespace,
    image,
    imagePullPolicy: pull === '' ? null : (pull as 'Always' | 'IfNotPresent' | 'Never'),
    lvmMetadata: raw.lvmMetadata as 'hostPath' | 'emptyDir',
    serviceAccount: raw.serviceAccount,
    ownerJob,
    waitTimeoutMs,
    pollIntervalMs,
    nodeJobDeadlineMs,
    eventsNamespace: raw.eventsNamespace,
  };
}
