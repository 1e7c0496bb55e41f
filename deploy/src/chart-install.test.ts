// The chart installed, upgraded and uninstalled by the pinned helm against a real kube-apiserver
// and etcd (the `kubernetes` and `etcd` parts of test-e2e/parts, started by
// apps/gc-job/test/kube/start.sh on ports it chooses; no nodes, so no pod runs): the owner ID is made at
// install, kept by every upgrade that does not set one, replaced by an explicit value only when
// ownerIdReplaces names the installed one (which rolls the drivers), and a changed value reaches
// the DaemonSet. What happens on a node is the Kubernetes tier's
// (test-e2e/k8s, K8S_INSTALL=helm).
import { execFile } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PARTS_TIMEOUT_MS, pinnedBinary } from './parts.js';

const CHART = fileURLToPath(new URL('../helm/lvstamp', import.meta.url));
const KUBE_SCRIPTS = fileURLToPath(new URL('../../apps/gc-job/test/kube/', import.meta.url));
const NAMESPACE = 'lvstamp-system';
const OWNER_ID = '0123456789abcdef0123456789abcdef';
/** How long etcd and kube-apiserver may take to come up on a loaded 2-core machine. */
const START_TIMEOUT_MS = 240_000;

let helm: string;
let kubectl: string;
let runDir: string | undefined;
let kubeconfig: string;

/** Runs a program; returns its standard output. @throws Error with its standard error. */
async function run(program: string, args: readonly string[]): Promise<string> {
  try {
    const { stdout } = await promisify(execFile)(program, [...args], {
      env: { ...process.env, KUBECONFIG: kubeconfig },
    });
    return stdout;
  } catch (error) {
    const e = error as { stderr?: string; message: string };
    throw new Error(`${program} ${args.join(' ')}: ${e.message}\n${e.stderr ?? ''}`);
  }
}

const helmRun = (...args: string[]) => run(helm, [...args, '--namespace', NAMESPACE]);
/** One field of a namespaced object, read with `kubectl get -o jsonpath`. */
const field = (object: string, path: string) =>
  run(kubectl, ['-n', NAMESPACE, 'get', object, '-o', `jsonpath={${path}}`]);
const ownerId = () => field('configmap/lvstamp-csi-config', ".data['owner-id']");
/** `helm upgrade lvstamp CHART --set V` for each value V. */
const upgrade = (...values: string[]) =>
  helmRun('upgrade', 'lvstamp', CHART, ...values.flatMap((v) => ['--set', v]));
/** The DaemonSet pod template's checksum of what the driver reads at start (a change rolls the pods). */
const configChecksum = () =>
  field('daemonset/lvstamp-csi-node', ".spec.template.metadata.annotations['checksum/config']");
/** How many revisions `helm history` lists. */
const revisions = async () =>
  (JSON.parse(await helmRun('history', 'lvstamp', '-o', 'json')) as unknown[]).length;
const driverArgs = async () =>
  JSON.parse(
    await field('daemonset/lvstamp-csi-node', '.spec.template.spec.containers[0].args'),
  ) as string[];

beforeAll(async () => {
  helm = await pinnedBinary('helm', 'helm');
  kubectl = await pinnedBinary('kubernetes', 'kubectl');
  const kubeApiserver = await pinnedBinary('kubernetes', 'kube-apiserver');
  const etcd = await pinnedBinary('etcd', 'etcd');
  runDir = await mkdtemp(join(tmpdir(), 'lvstamp-deploy-kapi-'));
  await promisify(execFile)('bash', [join(KUBE_SCRIPTS, 'start.sh'), runDir], {
    env: {
      ...process.env,
      KUBE_DIR: dirname(kubeApiserver),
      ETCD_DIR: dirname(etcd),
    },
    timeout: START_TIMEOUT_MS,
  });
  kubeconfig = join(runDir, 'kubeconfig');
}, PARTS_TIMEOUT_MS + START_TIMEOUT_MS);

afterAll(async () => {
  if (runDir !== undefined)
    await promisify(execFile)('bash', [join(KUBE_SCRIPTS, 'stop.sh'), runDir, '--wipe']);
});

describe('helm install, upgrade, uninstall against a kube-apiserver', () => {
  let installed: string;

  it('install makes a random owner ID', async () => {
    await helmRun('install', 'lvstamp', CHART, '--create-namespace');
    installed = await ownerId();
    expect(installed).toMatch(/^[0-9a-f]{32}$/);
    expect(installed).not.toBe('0'.repeat(32));
  });

  it('an upgrade with a changed value keeps it, and the value reaches the DaemonSet', async () => {
    expect(await driverArgs()).not.toContain('--log-level=debug');
    const checksum = await configChecksum();
    expect(checksum).toMatch(/^[0-9a-f]{64}$/);
    await upgrade('logLevel=debug');
    expect(await ownerId()).toBe(installed);
    expect(await configChecksum()).toBe(checksum);
    expect(await driverArgs()).toContain('--log-level=debug');
  });

  it('an upgrade to another owner ID is refused, naming the installed one, and changes nothing', async () => {
    const before = { revisions: await revisions(), checksum: await configChecksum() };
    const refusal = `ownerId ${OWNER_ID} would replace the installed owner ID ${installed} (ConfigMap ${NAMESPACE}/lvstamp-csi-config)`;
    await expect(upgrade(`ownerId=${OWNER_ID}`)).rejects.toThrow(refusal);
    await expect(upgrade('ownerId=unset')).rejects.toThrow(
      `ownerId unset would replace the installed owner ID ${installed}`,
    );
    const other = 'f'.repeat(32);
    await expect(upgrade(`ownerId=${OWNER_ID}`, `ownerIdReplaces=${other}`)).rejects.toThrow(
      `ownerIdReplaces is ${other}, but the installed owner ID (ConfigMap ${NAMESPACE}/lvstamp-csi-config) is ${installed}: nothing changed`,
    );
    expect(await ownerId()).toBe(installed);
    expect({ revisions: await revisions(), checksum: await configChecksum() }).toEqual(before);
  });

  it('ownerIdReplaces naming the installed ID changes it and rolls the drivers; later upgrades keep it', async () => {
    const before = await configChecksum();
    await upgrade(`ownerId=${OWNER_ID}`, `ownerIdReplaces=${installed}`);
    expect(await ownerId()).toBe(OWNER_ID);
    const changed = await configChecksum();
    expect(changed).not.toBe(before);
    // the same explicit ID again (a values file that always names it), then none: no change, no roll
    await upgrade(`ownerId=${OWNER_ID}`);
    await upgrade();
    expect(await ownerId()).toBe(OWNER_ID);
    expect(await configChecksum()).toBe(changed);
  });

  it('a client-side dry run of an upgrade, which cannot look anything up, refuses nothing', async () => {
    const out = await helmRun('upgrade', 'lvstamp', CHART, '--dry-run=client');
    expect(out).toMatch(/owner-id: '[0-9a-f]{32}'/);
  });

  it('the installed ID is read as the driver reads it (trimmed, lower case); a ConfigMap without one stops the upgrade', async () => {
    const patchOwnerId = (value: string) =>
      run(kubectl, [
        '-n',
        NAMESPACE,
        'patch',
        'configmap/lvstamp-csi-config',
        '--type=merge',
        '-p',
        JSON.stringify({ data: { 'owner-id': value } }),
      ]);
    // helm 4 applies server-side: a field another manager (kubectl patch) set needs --force-conflicts
    const force = '--force-conflicts';
    await patchOwnerId(` ${OWNER_ID.toUpperCase()}\n`);
    await expect(
      helmRun('upgrade', 'lvstamp', CHART, force, '--set', `ownerId=${'f'.repeat(32)}`),
    ).rejects.toThrow(`would replace the installed owner ID ${OWNER_ID}`);
    await expect(
      helmRun(
        'upgrade',
        'lvstamp',
        CHART,
        force,
        '--set',
        'ownerId=unset',
        '--set',
        `ownerIdReplaces=${OWNER_ID}`,
      ),
    ).rejects.toThrow(`ownerId unset would replace the installed owner ID ${OWNER_ID}`);
    await helmRun('upgrade', 'lvstamp', CHART, force, '--reset-values');
    expect(await ownerId()).toBe(OWNER_ID);

    const revisionsBefore = await revisions();
    await patchOwnerId('not an ID');
    await expect(helmRun('upgrade', 'lvstamp', CHART, force, '--reset-values')).rejects.toThrow(
      `the release is installed, but ConfigMap ${NAMESPACE}/lvstamp-csi-config holds no owner ID (owner-id is "not an ID")`,
    );
    await run(kubectl, ['-n', NAMESPACE, 'delete', 'configmap/lvstamp-csi-config']);
    await expect(helmRun('upgrade', 'lvstamp', CHART, '--reset-values')).rejects.toThrow(
      `holds no owner ID (the ConfigMap is missing): a new random one would disown every volume made under the old one. Set ownerId to the ID the drivers run with`,
    );
    expect(await revisions()).toBe(revisionsBefore);
    await upgrade(`ownerId=${OWNER_ID}`);
    expect(await ownerId()).toBe(OWNER_ID);
  });

  it('uninstall removes the objects, cluster-scoped ones included', async () => {
    await helmRun('uninstall', 'lvstamp');
    const left = await run(kubectl, [
      'get',
      'csidriver,storageclass,clusterrole,clusterrolebinding',
      '-l',
      'app.kubernetes.io/part-of=lvstamp',
      '-o',
      'name',
    ]);
    expect(left).toBe('');
    const namespaced = await run(kubectl, [
      '-n',
      NAMESPACE,
      'get',
      'configmap,daemonset,cronjob,serviceaccount,role,rolebinding',
      '-l',
      'app.kubernetes.io/part-of=lvstamp',
      '-o',
      'name',
    ]);
    expect(namespaced).toBe('');
  });

  it('a reinstall with no ownerId while PersistentVolumes of lvstamp.io exist is refused, naming them', async () => {
    const pv = {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: 'pvc-retained' },
      spec: {
        capacity: { storage: '1Gi' },
        accessModes: ['ReadWriteOnce'],
        persistentVolumeReclaimPolicy: 'Retain',
        csi: { driver: 'lvstamp.io', volumeHandle: 'lvstamp-0123456789abcdef0123456789abcdef' },
      },
    };
    const manifest = join(runDir ?? tmpdir(), 'pv.json');
    await writeFile(manifest, JSON.stringify(pv));
    await run(kubectl, ['apply', '-f', manifest]);
    await expect(helmRun('install', 'lvstamp', CHART)).rejects.toThrow(
      'ownerId is empty, but 1 PersistentVolume(s) of lvstamp.io exist (pvc-retained): their volumes carry the owner ID of an earlier installation',
    );
    expect(await run(helm, ['list', '-q', '--namespace', NAMESPACE])).toBe('');
    // a namespace that --create-namespace makes only after the render (uninstall.md deletes it)
    await expect(
      run(helm, ['install', 'lvstamp', CHART, '--namespace', 'lvstamp-new', '--create-namespace']),
    ).rejects.toThrow('1 PersistentVolume(s) of lvstamp.io exist (pvc-retained)');
    await helmRun('install', 'lvstamp', CHART, '--set', `ownerId=${OWNER_ID}`);
    expect(await ownerId()).toBe(OWNER_ID);
  });
});
