// Helpers of the gc-job e2e: the BUILT `lvstamp-gc` (apps/gc-job/dist/lvstamp-gc.mjs) as a child
// process, the shape of its `node --json` report, and the Kubernetes objects the tests make
// (PersistentVolumes as the external-provisioner makes them, PersistentVolumeClaims).
// Builds on the harness and the scenario helpers, never changes them.
import { existsSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { execa } from 'execa';
import { expect } from 'vitest';
import { REPO_ROOT } from '../harness/index.js';
import type { KubeApiServer } from './kube.js';

/** The built `lvstamp-gc` entrypoint (one bundled file, as apps/cli's). */
export const GC_MAIN = `${REPO_ROOT}apps/gc-job/dist/lvstamp-gc.mjs`;
/** The CSI driver name (the driver's GetPluginInfo name, the gc-job's default). */
export const DRIVER_NAME = 'lvstamp.io';
/** `--node-name` of every run: the Node the Events are about. */
export const NODE_NAME = 'e2e-node';
/** Namespace of the claims and of the Events (made by the API server's bootstrap controller). */
export const NAMESPACE = 'default';

/** One plan entry of `lvstamp-gc node --json` (the core's GcPlanEntry). */
export interface GcEntryJson {
  readonly target: 'volume' | 'map';
  readonly device: string;
  readonly volumeId: string | null;
  readonly action: 'keep' | 'remove-map' | 'remove-volume';
  readonly rule: number;
  readonly severity: 'info' | 'warn';
  readonly reason: string;
}

/** `lvstamp-gc node --json` (the gc-job's NodeReport). */
export interface GcNodeReportJson {
  readonly summary: {
    readonly node: string;
    readonly dryRun: boolean;
    readonly status: 'ok' | 'failed' | 'aborted';
    readonly devices: number;
    readonly kept: number;
    readonly warnings: number;
    readonly planned: number;
    readonly removed: number;
    readonly skipped: number;
    readonly errors: number;
    readonly capped: boolean;
    readonly error?: string;
  };
  readonly liveSet: {
    readonly ids: number;
    readonly driverPvs: number;
    readonly pvcs: number;
    readonly pages: number;
  };
  readonly plan: {
    readonly dryRun: boolean;
    readonly capped: boolean;
    readonly entries: readonly GcEntryJson[];
  };
  readonly outcomes: readonly {
    readonly entry: GcEntryJson;
    readonly outcome: 'removed' | 'skipped' | 'failed';
    readonly detail: string;
  }[];
  readonly eventErrors: readonly string[];
}

/** One finished `lvstamp-gc` run. */
export interface GcRun {
  readonly exitCode: number;
  readonly stdout: string;
  /** pino JSON log lines. */
  readonly stderr: string;
  /** Unix milliseconds when the process was spawned and when it exited. */
  readonly startedAtMs: number;
  readonly endedAtMs: number;
}

/**
 * Runs `node apps/gc-job/dist/lvstamp-gc.mjs ...args` with the test's node
 * binary, stdin closed, `LC_ALL=C`, no inherited LVSTAMP_* or KUBECONFIG
 * variable, killed after `timeoutMs` (default 300 000 ms). Never throws on a
 * non-zero exit.
 * @throws Error when the gc-job is not built.
 */
export async function runGc(args: readonly string[], timeoutMs = 300_000): Promise<GcRun> {
  if (!existsSync(GC_MAIN)) throw new Error(`${GC_MAIN} is missing: build apps/gc-job first`);
  const startedAtMs = Date.now();
  const result = await execa(process.execPath, [GC_MAIN, ...args], {
    reject: false,
    extendEnv: false,
    env: { LC_ALL: 'C', PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin' },
    stdin: 'ignore',
    timeout: timeoutMs,
    killSignal: 'SIGKILL',
  });
  return {
    exitCode: result.exitCode ?? -1,
    stdout: result.stdout,
    stderr: result.stderr,
    startedAtMs,
    endedAtMs: Date.now(),
  };
}

/** `lvstamp-gc ...args --json`, asserting exit 0; the report parsed. */
export async function runGcJson(
  args: readonly string[],
): Promise<GcRun & { readonly report: GcNodeReportJson }> {
  const run = await runGc([...args, '--json']);
  expect(
    run.exitCode,
    `lvstamp-gc ${args.join(' ')} --json\nstdout: ${run.stdout}\nstderr: ${run.stderr}`,
  ).toBe(0);
  return { ...run, report: JSON.parse(run.stdout) as GcNodeReportJson };
}

/** A fresh volume name as the external-provisioner makes them: `pvc-<uuid>`. */
export function pvcStyleName(): string {
  return `pvc-${randomUUID()}`;
}

/** Kubernetes object metadata as these tests read it. */
export interface ObjectMeta {
  readonly name: string;
  readonly uid: string;
  readonly deletionTimestamp?: string;
  readonly finalizers?: readonly string[];
}

/**
 * Creates the PersistentVolume the external-provisioner would create for a
 * provisioned volume: named like the volume (`pvc-<uid>`), `spec.csi.driver`
 * lvstamp.io, `volumeHandle` the volume ID CreateVolume returned, reclaim
 * policy Retain. `phase`, when given, is then written to the status
 * subresource (no controller runs here to set it).
 * @throws KubeRequestError when the API server refuses.
 */
export async function createPv(
  kube: KubeApiServer,
  options: { name: string; volumeId: string; phase?: 'Bound' | 'Released' | 'Failed' },
): Promise<ObjectMeta> {
  const pv = await kube.request<{ metadata: ObjectMeta }>('POST', '/api/v1/persistentvolumes', {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: options.name },
    spec: {
      capacity: { storage: '8Mi' },
      accessModes: ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: 'Retain',
      storageClassName: 'lvstamp',
      volumeMode: 'Filesystem',
      csi: { driver: DRIVER_NAME, volumeHandle: options.volumeId, fsType: 'ext4' },
    },
  });
  if (options.phase !== undefined) {
    await kube.request(
      'PATCH',
      `/api/v1/persistentvolumes/${options.name}/status`,
      { status: { phase: options.phase } },
      'application/merge-patch+json',
    );
  }
  return pv.metadata;
}

/**
 * Creates a PersistentVolumeClaim of storage class `lvstamp` in `default`
 * (no controller binds it: it stays Pending, like a claim being provisioned).
 * @returns its metadata; the volume the provisioner makes for it is `pvc-<uid>`.
 */
export async function createPvc(kube: KubeApiServer, name: string): Promise<ObjectMeta> {
  const pvc = await kube.request<{ metadata: ObjectMeta }>(
    'POST',
    `/api/v1/namespaces/${NAMESPACE}/persistentvolumeclaims`,
    {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name },
      spec: {
        accessModes: ['ReadWriteOnce'],
        storageClassName: 'lvstamp',
        resources: { requests: { storage: '8Mi' } },
      },
    },
  );
  return pvc.metadata;
}

/** Reads a PV; null when it does not exist (404). */
export async function getPv(kube: KubeApiServer, name: string): Promise<ObjectMeta | null> {
  try {
    return (
      await kube.request<{ metadata: ObjectMeta }>('GET', `/api/v1/persistentvolumes/${name}`)
    ).metadata;
  } catch (error) {
    if ((error as { status?: number }).status === 404) return null;
    throw error;
  }
}

/** One core/v1 Event as these tests read it. */
export interface EventJson {
  readonly reason: string;
  readonly type: string;
  readonly message: string;
  readonly source?: { readonly component?: string; readonly host?: string };
  readonly involvedObject: { readonly kind: string; readonly name: string };
}

/** Every Event in `default` recorded by component `lvstamp-gc`. */
export async function gcEvents(kube: KubeApiServer): Promise<EventJson[]> {
  const list = await kube.request<{ items: EventJson[] }>(
    'GET',
    `/api/v1/namespaces/${NAMESPACE}/events`,
  );
  return list.items.filter((e) => e.source?.component === 'lvstamp-gc');
}
