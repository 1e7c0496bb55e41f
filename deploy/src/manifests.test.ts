// Checks every manifest under deploy/kubernetes against the Kubernetes API schemas
// (kubernetes-models: the OpenAPI schemas of the Kubernetes API, validated with ajv), checks
// that the kustomization lists every file, and that the objects agree with each other and
// with the driver (driver name, config keys, volume names, service account). A typo fails here.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { DaemonSet } from 'kubernetes-models/apps/v1';
import { ConfigMap, Namespace, ServiceAccount } from 'kubernetes-models/v1';
import {
  ClusterRole,
  ClusterRoleBinding,
  Role,
  RoleBinding,
} from 'kubernetes-models/rbac.authorization.k8s.io/v1';
import { CSIDriver, StorageClass } from 'kubernetes-models/storage.k8s.io/v1';

/** deploy/kubernetes, next to this package's src/. */
const MANIFESTS = fileURLToPath(new URL('../kubernetes/', import.meta.url));

/** A Kubernetes object as parsed from YAML. */
interface K8sObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string };
  readonly [key: string]: unknown;
}

/** The model that validates each apiVersion/kind the manifests may use. */
const MODELS: Readonly<Record<string, new (data: never) => { validate(): void }>> = {
  'v1/Namespace': Namespace,
  'v1/ServiceAccount': ServiceAccount,
  'v1/ConfigMap': ConfigMap,
  'apps/v1/DaemonSet': DaemonSet,
  'rbac.authorization.k8s.io/v1/ClusterRole': ClusterRole,
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': ClusterRoleBinding,
  'rbac.authorization.k8s.io/v1/Role': Role,
  'rbac.authorization.k8s.io/v1/RoleBinding': RoleBinding,
  'storage.k8s.io/v1/CSIDriver': CSIDriver,
  'storage.k8s.io/v1/StorageClass': StorageClass,
};

/**
 * Validates one object against its Kubernetes schema.
 * @throws Error naming the object for an unknown apiVersion/kind or a schema violation
 *   (unknown field, wrong type, missing required field).
 */
export function validateObject(object: K8sObject): void {
  const key = `${object.apiVersion}/${object.kind}`;
  const Model = MODELS[key];
  if (Model === undefined) throw new Error(`${key} is not a kind these manifests may use`);
  try {
    new Model(object as never).validate();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new Error(`${key} ${object.metadata.name}: ${message}`);
  }
}

async function manifestFiles(): Promise<string[]> {
  return (await readdir(MANIFESTS)).filter((f) => f.endsWith('.yaml')).sort();
}

/** Every object of every manifest file (kustomization.yaml aside), with its file. */
async function loadObjects(): Promise<{ file: string; object: K8sObject }[]> {
  const out: { file: string; object: K8sObject }[] = [];
  for (const file of await manifestFiles()) {
    if (file === 'kustomization.yaml') continue;
    const docs = parseAllDocuments(await readFile(join(MANIFESTS, file), 'utf8'));
    for (const doc of Array.isArray(docs) ? docs : [docs]) {
      expect(doc.errors, file).toEqual([]);
      const object = doc.toJS() as K8sObject | null;
      if (object !== null) out.push({ file, object });
    }
  }
  return out;
}

function find(objects: { object: K8sObject }[], kind: string, name: string): K8sObject {
  const found = objects
    .map((o) => o.object)
    .find((o) => o.kind === kind && o.metadata.name === name);
  if (found === undefined) throw new Error(`no ${kind} ${name}`);
  return found;
}

describe('deploy/kubernetes', () => {
  it('every object passes its Kubernetes API schema', async () => {
    const objects = await loadObjects();
    expect(objects.map((o) => `${o.object.kind}/${o.object.metadata.name}`).sort()).toEqual([
      'CSIDriver/lvstamp.io',
      'ClusterRole/lvstamp-csi-node',
      'ClusterRoleBinding/lvstamp-csi-node',
      'ConfigMap/lvstamp-csi-config',
      'ConfigMap/lvstamp-lvm-conf',
      'DaemonSet/lvstamp-csi-node',
      'Namespace/lvstamp-system',
      'Role/lvstamp-csi-node',
      'RoleBinding/lvstamp-csi-node',
      'ServiceAccount/lvstamp-csi-node',
      'StorageClass/lvstamp-block',
      'StorageClass/lvstamp-ext4',
      'StorageClass/lvstamp-xfs',
    ]);
    for (const { object } of objects) validateObject(object);
  });

  it('the kustomization lists every manifest file, once, and sets the namespace', async () => {
    const kustomization = parseAllDocuments(
      await readFile(join(MANIFESTS, 'kustomization.yaml'), 'utf8'),
    );
    const [doc] = Array.isArray(kustomization) ? kustomization : [kustomization];
    const k = doc?.toJS() as { namespace: string; resources: string[]; kind: string };
    expect(k.kind).toBe('Kustomization');
    expect(k.namespace).toBe('lvstamp-system');
    expect([...k.resources].sort()).toEqual(
      (await manifestFiles()).filter((f) => f !== 'kustomization.yaml'),
    );
    expect(new Set(k.resources).size).toBe(k.resources.length);
  });

  it('the objects agree: driver name, CSIDriver fields, StorageClasses, mounts, config maps, RBAC subjects', async () => {
    const objects = await loadObjects();
    const driver = find(objects, 'CSIDriver', 'lvstamp.io') as unknown as {
      spec: Record<string, unknown>;
    };
    expect(driver.spec).toEqual({
      attachRequired: false,
      podInfoOnMount: false,
      volumeLifecycleModes: ['Persistent'],
      storageCapacity: true,
      fsGroupPolicy: 'File',
      requiresRepublish: false,
    });
    const classes = objects
      .map((o) => o.object)
      .filter((o) => o.kind === 'StorageClass') as unknown as {
      metadata: { name: string };
      provisioner: string;
      volumeBindingMode: string;
      allowVolumeExpansion: boolean;
      parameters: Record<string, string>;
    }[];
    expect(
      classes.map((c) => [c.metadata.name, c.parameters['csi.storage.k8s.io/fstype'] ?? 'block']),
    ).toEqual([
      ['lvstamp-ext4', 'ext4'],
      ['lvstamp-xfs', 'xfs'],
      ['lvstamp-block', 'block'],
    ]);
    for (const c of classes) {
      expect(c.provisioner).toBe('lvstamp.io');
      expect(c.volumeBindingMode).toBe('WaitForFirstConsumer');
      expect(c.allowVolumeExpansion).toBe(true);
      // only parameters the driver knows (apps/csi-driver/src/parameters.ts readParameters)
      for (const key of Object.keys(c.parameters)) {
        expect(['deviceClass', 'wipe', 'csi.storage.k8s.io/fstype']).toContain(key);
      }
    }
    const config = find(objects, 'ConfigMap', 'lvstamp-csi-config') as unknown as {
      data: Record<string, string>;
    };
    const configText = config.data['config.yaml'] ?? '';
    for (const c of classes) expect(configText).toContain(`${c.parameters.deviceClass ?? ''}:`);
    // no usable owner ID ships (docs/DESIGN.md §3 "Owner ID"): a placeholder that is not 32 hex
    // digits (the driver and the GC refuse it at start) and names where to set one
    expect(config.data['owner-id']).not.toMatch(/^[0-9a-fA-F]{32}$/);
    expect(config.data['owner-id']).toContain('openssl rand -hex 16');
    expect(config.data['owner-id']).toContain('README "Deploying on a cluster" step 3');
    const lvm = find(objects, 'ConfigMap', 'lvstamp-lvm-conf') as unknown as {
      data: Record<string, string>;
    };
    expect(lvm.data['lvm.conf']).toMatch(/udev_sync = 0/);
    expect(lvm.data['lvm.conf']).toMatch(/udev_rules = 0/);
    expect(lvm.data['lvm.conf']).toMatch(/retain_days = \d+/);

    const ds = find(objects, 'DaemonSet', 'lvstamp-csi-node') as unknown as {
      spec: {
        template: {
          spec: {
            serviceAccountName: string;
            containers: {
              name: string;
              args: string[];
              image: string;
              securityContext?: { privileged?: boolean };
              ports?: { name: string; containerPort: number; protocol: string }[];
              livenessProbe?: { httpGet?: { path: string; port: string } };
              volumeMounts: { name: string; mountPath: string; mountPropagation?: string }[];
            }[];
            volumes: { name: string; configMap?: { name: string } }[];
          };
        };
      };
    };
    const pod = ds.spec.template.spec;
    // the driver registers itself with the kubelet and serves its own /healthz: no
    // node-driver-registrar, no livenessprobe (docs/kubernetes.md)
    expect(pod.containers.map((c) => c.name)).toEqual([
      'lvstamp-csi',
      'csi-provisioner',
      'csi-resizer',
    ]);
    // privileged only where needed
    expect(
      pod.containers.filter((c) => c.securityContext?.privileged === true).map((c) => c.name),
    ).toEqual(['lvstamp-csi']);
    const [csi] = pod.containers;
    expect(csi?.args).toContain('--driver-name=lvstamp.io');
    expect(csi?.volumeMounts).toContainEqual({
      name: 'kubelet-dir',
      mountPath: '/var/lib/kubelet',
      mountPropagation: 'Bidirectional',
    });
    expect(csi?.volumeMounts.map((m) => m.mountPath)).toContain('/dev');
    // registration: the socket in the kubelet's plugins_registry (mounted at /registration), and
    // the CSI socket's host path for the kubelet, which the socket-dir volume serves at /csi
    expect(csi?.args).toEqual(
      expect.arrayContaining([
        '--endpoint=unix:///csi/csi.sock',
        '--registration-socket=/registration/lvstamp.io-reg.sock',
        '--kubelet-registration-path=/var/lib/kubelet/plugins/lvstamp.io/csi.sock',
        '--health-address=0.0.0.0:9808',
      ]),
    );
    expect(csi?.volumeMounts).toContainEqual({
      name: 'registration-dir',
      mountPath: '/registration',
    });
    expect(csi?.volumeMounts).toContainEqual({ name: 'socket-dir', mountPath: '/csi' });
    expect(pod.volumes).toContainEqual({
      name: 'registration-dir',
      hostPath: { path: '/var/lib/kubelet/plugins_registry', type: 'Directory' },
    });
    expect(pod.volumes).toContainEqual({
      name: 'socket-dir',
      hostPath: { path: '/var/lib/kubelet/plugins/lvstamp.io', type: 'DirectoryOrCreate' },
    });
    // the kubelet probes the driver's own /healthz on the --health-address port
    expect(csi?.ports).toContainEqual({ name: 'healthz', containerPort: 9808, protocol: 'TCP' });
    expect(csi?.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'healthz' });
    // lvm's own modprobe of dm-thin-pool (a thin class on a node where it is not loaded yet)
    // needs the host's modules: read-only, from the host's /lib/modules
    expect(csi?.volumeMounts).toContainEqual({
      name: 'modules',
      mountPath: '/lib/modules',
      readOnly: true,
    });
    expect(pod.volumes).toContainEqual({
      name: 'modules',
      hostPath: { path: '/lib/modules', type: 'DirectoryOrCreate' },
    });
    const provisioner = pod.containers.find((c) => c.name === 'csi-provisioner');
    expect(provisioner?.args).toEqual(
      expect.arrayContaining([
        '--node-deployment=true',
        '--enable-capacity=true',
        '--capacity-ownerref-level=1',
      ]),
    );
    // Topology is GA and on by default since v5.0 (external-provisioner README, "Topology support")
    expect(provisioner?.args.filter((a) => a.startsWith('--feature-gates'))).toEqual([]);
    // node-only expansion (docs/DESIGN.md §7 "Expansion on the node"): one resizer of the cluster acts at a
    // time, elected through a Lease in the driver's namespace, which its Role grants
    const resizer = pod.containers.find((c) => c.name === 'csi-resizer');
    expect(resizer?.args).toContain('--leader-election');
    expect(resizer?.args.filter((a) => a.startsWith('--leader-election='))).toEqual([]);
    expect(resizer?.args.filter((a) => a.startsWith('--leader-election-namespace'))).toEqual([]);
    const role = find(objects, 'Role', 'lvstamp-csi-node') as unknown as {
      rules: { apiGroups: string[]; resources: string[]; verbs: string[] }[];
    };
    expect(
      role.rules
        .filter(
          (r) => r.apiGroups.includes('coordination.k8s.io') && r.resources.includes('leases'),
        )
        .flatMap((r) => r.verbs)
        .sort(),
    ).toEqual(['create', 'delete', 'get', 'list', 'patch', 'update', 'watch']);
    // csi-snapshotter exits when the driver offers no snapshots (no thin class): only in the
    // snapshots component, never in the base
    expect(pod.containers.map((c) => c.name)).not.toContain('csi-snapshotter');
    const nodeRole = find(objects, 'ClusterRole', 'lvstamp-csi-node') as unknown as {
      rules: { apiGroups: string[]; resources: string[]; verbs: string[] }[];
    };
    const allowed = (group: string, resource: string) =>
      nodeRole.rules
        .filter((r) => r.apiGroups.includes(group) && r.resources.includes(resource))
        .flatMap((r) => r.verbs);
    // external-provisioner v6.4.0 deploy/kubernetes/rbac.yaml: the source-protection finalizer
    // on a restore's VolumeSnapshot (CHANGELOG-6.2)
    expect(allowed('snapshot.storage.k8s.io', 'volumesnapshots').sort()).toEqual([
      'get',
      'list',
      'update',
      'watch',
    ]);
    // external-snapshotter v8.7.0 deploy/kubernetes/csi-snapshotter/rbac-csi-snapshotter.yaml
    expect(allowed('snapshot.storage.k8s.io', 'volumesnapshotcontents').sort()).toEqual([
      'get',
      'list',
      'patch',
      'update',
      'watch',
    ]);
    expect(allowed('snapshot.storage.k8s.io', 'volumesnapshotcontents/status').sort()).toEqual([
      'patch',
      'update',
    ]);
    expect(allowed('snapshot.storage.k8s.io', 'volumesnapshotclasses').sort()).toEqual([
      'get',
      'list',
      'watch',
    ]);
    expect(allowed('', 'events')).toEqual(
      expect.arrayContaining(['list', 'watch', 'create', 'update', 'patch']),
    );
    const volumeNames = new Set(pod.volumes.map((v) => v.name));
    for (const container of pod.containers) {
      for (const mount of container.volumeMounts) expect(volumeNames).toContain(mount.name);
    }
    for (const v of pod.volumes) {
      if (v.configMap) find(objects, 'ConfigMap', v.configMap.name);
    }
    find(objects, 'ServiceAccount', pod.serviceAccountName);
    for (const kind of ['ClusterRoleBinding', 'RoleBinding']) {
      const binding = find(objects, kind, 'lvstamp-csi-node') as unknown as {
        subjects: { name: string; namespace: string }[];
        roleRef: { kind: string; name: string };
      };
      expect(binding.subjects).toEqual([
        { kind: 'ServiceAccount', name: pod.serviceAccountName, namespace: 'lvstamp-system' },
      ]);
      find(objects, binding.roleRef.kind, binding.roleRef.name);
    }
  });

  it('the sidecar images are the versions the real-node tier builds (test-e2e/parts/versions.env)', async () => {
    const env = await readFile(
      fileURLToPath(new URL('../../test-e2e/parts/versions.env', import.meta.url)),
      'utf8',
    );
    const version = (name: string) => new RegExp(`^${name}=(v\\S+)$`, 'm').exec(env)?.[1];
    const text = (file: string) => readFile(join(MANIFESTS, file), 'utf8');
    const images = [
      ...(await text('daemonset.yaml')).matchAll(/image: (\S+)/g),
      ...(await text('components/snapshots/kustomization.yaml')).matchAll(/image: (\S+)/g),
    ].map((m) => m[1]);
    expect(images).toEqual([
      'ghcr.io/lvstamp/lvstamp-csi:0.1.0',
      `registry.k8s.io/sig-storage/csi-provisioner:${version('EXTERNAL_PROVISIONER_VERSION') ?? '?'}`,
      `registry.k8s.io/sig-storage/csi-resizer:${version('EXTERNAL_RESIZER_VERSION') ?? '?'}`,
      `registry.k8s.io/sig-storage/csi-snapshotter:${version('EXTERNAL_SNAPSHOTTER_VERSION') ?? '?'}`,
    ]);
  });

  // kubernetes-models 4.x schemas (like the API server's non-strict decoding) allow unknown
  // fields, so a misspelt OPTIONAL field passes the schema; misspelt required fields, wrong
  // types and wrong enums fail, and the cross-checks above pin every field lvstamp relies on.
  it('a typo fails the schema check (proof the check bites)', () => {
    const good: K8sObject = {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'CSIDriver',
      metadata: { name: 'lvstamp.io' },
      spec: { attachRequired: false },
    };
    expect(() => {
      validateObject(good);
    }).not.toThrow();
    // a misspelt required field: StorageClass "provisoner" leaves provisioner unset
    expect(() => {
      validateObject({
        apiVersion: 'storage.k8s.io/v1',
        kind: 'StorageClass',
        metadata: { name: 'lvstamp-ext4' },
        provisoner: 'lvstamp.io',
      });
    }).toThrow(/StorageClass lvstamp-ext4/);
    // a wrong type
    expect(() => {
      validateObject({ ...good, spec: { attachRequired: 'no' } });
    }).toThrow(/CSIDriver lvstamp.io/);
    // a DaemonSet whose pod spec misspells containers, and an unknown kind
    expect(() => {
      validateObject({
        apiVersion: 'apps/v1',
        kind: 'DaemonSet',
        metadata: { name: 'x' },
        spec: {
          selector: { matchLabels: { a: 'b' } },
          template: { metadata: { labels: { a: 'b' } }, spec: { contianers: [{ name: 'c' }] } },
        },
      });
    }).toThrow(/DaemonSet x/);
    expect(() => {
      validateObject({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' } });
    }).toThrow(/v1\/Pod is not a kind/);
  });
});
