// Checks the kustomize components under deploy/kubernetes/components against the manifests they
// patch: every JSON patch (RFC 6902) is applied here to the object it targets, its `test`
// operations must hold (so a change of the DaemonSet's container order or arguments fails here,
// not on a user's cluster), and the result must still validate against the Kubernetes schema.
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { DaemonSet } from 'kubernetes-models/apps/v1';
import { StorageClass } from 'kubernetes-models/storage.k8s.io/v1';

const KUBERNETES = fileURLToPath(new URL('../kubernetes/', import.meta.url));

/** One RFC 6902 operation, as the components use them. */
interface Operation {
  readonly op: 'test' | 'replace' | 'add';
  readonly path: string;
  readonly value: unknown;
}

interface Component {
  readonly kind: string;
  readonly patches: readonly {
    readonly target: { group?: string; version?: string; kind: string; name?: string };
    readonly patch: string;
  }[];
}

async function component(name: string): Promise<Component> {
  return parse(
    await readFile(`${KUBERNETES}components/${name}/kustomization.yaml`, 'utf8'),
  ) as Component;
}

async function manifest(file: string): Promise<Record<string, unknown>> {
  const docs = parseAllDocuments(await readFile(`${KUBERNETES}${file}`, 'utf8'));
  const [doc] = Array.isArray(docs) ? docs : [docs];
  if (doc === undefined) throw new Error(`${file} is empty`);
  return doc.toJS() as Record<string, unknown>;
}

/**
 * Applies RFC 6902 `test`, `replace` and `add` (with `-` for the end of an array) to `object`.
 * @throws Error naming the operation when a path does not exist or a `test` fails.
 */
function applyPatch(object: unknown, operations: readonly Operation[]): void {
  for (const operation of operations) {
    const keys = operation.path.split('/').slice(1);
    const last = keys.pop() as string;
    let parent = object as Record<string, unknown>;
    for (const key of keys) {
      const child = parent[key] as Record<string, unknown> | undefined;
      if (child === undefined) throw new Error(`${operation.op} ${operation.path}: no such path`);
      parent = child;
    }
    if (operation.op === 'test') {
      expect(parent[last], `test ${operation.path}`).toEqual(operation.value);
    } else if (operation.op === 'add' && last === '-' && Array.isArray(parent)) {
      parent.push(operation.value);
    } else {
      if (operation.op === 'replace' && !(last in parent))
        throw new Error(`replace ${operation.path}: no such path`);
      parent[last] = operation.value;
    }
  }
}

describe('kustomize components', () => {
  it('slow-nodes: its tests hold on the DaemonSet, and the patched DaemonSet is valid', async () => {
    const c = await component('slow-nodes');
    expect(c.kind).toBe('Component');
    const daemonSet = await manifest('daemonset.yaml');
    expect(c.patches).toHaveLength(1);
    const [p] = c.patches;
    if (p === undefined) throw new Error('no patch');
    expect(p.target).toMatchObject({
      kind: 'DaemonSet',
      name: (daemonSet.metadata as { name: string }).name,
    });
    const operations = parse(p.patch) as Operation[];
    expect(operations.filter((o) => o.op === 'test').length).toBeGreaterThanOrEqual(5);
    applyPatch(daemonSet, operations);
    new DaemonSet(daemonSet).validate();
    type Containers = { name: string; args?: string[] }[];
    const { containers } = (
      daemonSet as { spec: { template: { spec: { containers: Containers } } } }
    ).spec.template.spec;
    const args = Object.fromEntries(containers.map((x) => [x.name, x.args ?? []]));
    expect(args['csi-provisioner']).toContain('--timeout=300s');
    expect(args['csi-resizer']).toContain('--timeout=300s');
    const probe = (containers[0] as { livenessProbe?: { timeoutSeconds?: number } }).livenessProbe;
    expect(containers[0]?.name).toBe('lvstamp-csi');
    expect(probe?.timeoutSeconds).toBe(90);
  });

  it('snapshots: a VolumeSnapshotClass of the driver (Delete) and a thin StorageClass', async () => {
    const kustomization = parse(
      await readFile(`${KUBERNETES}components/snapshots/kustomization.yaml`, 'utf8'),
    ) as {
      kind: string;
      resources: string[];
      patches: { target: { kind: string; name: string }; patch: string }[];
    };
    expect(kustomization.kind).toBe('Component');
    expect(kustomization.resources).toEqual(['volumesnapshotclass.yaml', 'storageclass-thin.yaml']);
    // the csi-snapshotter sidecar comes with the component: distributed snapshotting, one per
    // node, told its node, no leader election; after the slow-nodes patch as well as before it
    const daemonSet = await manifest('daemonset.yaml');
    const [p] = kustomization.patches;
    if (p === undefined) throw new Error('no patch');
    expect(p.target).toMatchObject({ kind: 'DaemonSet', name: 'lvstamp-csi-node' });
    applyPatch(daemonSet, parse(p.patch) as Operation[]);
    new DaemonSet(daemonSet).validate();
    type Container = {
      name: string;
      args: string[];
      env?: { name: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
    };
    const { containers } = (
      daemonSet as { spec: { template: { spec: { containers: Container[] } } } }
    ).spec.template.spec;
    const snapshotter = containers.at(-1);
    expect(snapshotter?.name).toBe('csi-snapshotter');
    expect(snapshotter?.args).toEqual([
      '--csi-address=/csi/csi.sock',
      '--node-deployment=true',
      '--leader-election=false',
      '--timeout=300s',
      '--extra-create-metadata=true',
    ]);
    expect(snapshotter?.env).toContainEqual({
      name: 'NODE_NAME',
      valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } },
    });
    const driver = (await manifest('csidriver.yaml')) as { metadata: { name: string } };
    // The v1 CRD (external-snapshotter v8.7.0) requires driver and deletionPolicy (Delete|Retain).
    expect(await manifest('components/snapshots/volumesnapshotclass.yaml')).toEqual({
      apiVersion: 'snapshot.storage.k8s.io/v1',
      kind: 'VolumeSnapshotClass',
      metadata: { name: 'lvstamp', labels: { 'app.kubernetes.io/part-of': 'lvstamp' } },
      driver: driver.metadata.name,
      deletionPolicy: 'Delete',
    });
    const thin = await manifest('components/snapshots/storageclass-thin.yaml');
    new StorageClass(thin as never).validate();
    expect(thin).toMatchObject({
      provisioner: driver.metadata.name,
      parameters: { deviceClass: 'thin' },
      volumeBindingMode: 'WaitForFirstConsumer',
    });
    const config = (await manifest('configmap-driver.yaml')) as { data: { 'config.yaml': string } };
    expect(config.data['config.yaml']).toMatch(
      /^\s*# thin: \{ volumeGroup: lvstamp, type: thin, thinPool: pool0,/m,
    );
  });
});
