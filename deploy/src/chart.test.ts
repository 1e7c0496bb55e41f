// The Helm chart deploy/helm/lvstamp, the one source of lvstamp's objects (docs/install.md "One
// source: the chart"), rendered by the pinned helm (the `helm` part of test-e2e/parts): it lints
// clean; deploy/kubernetes is exactly what deploy/render-kustomize.sh renders from it; its defaults
// are the objects kustomize renders from the bases and components; every value reaches the
// objects it names; values.schema.json refuses bad values with a message naming the value; its
// kubeVersion refuses a Kubernetes older than the oldest minor that ran.
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { DaemonSet } from 'kubernetes-models/apps/v1';
import { CronJob } from 'kubernetes-models/batch/v1';
import { CLUSTER_SCOPED, objectKey, renderObjects, type Rendered } from './objects.js';
import { PARTS_TIMEOUT_MS, pinnedBinary } from './parts.js';

const DEPLOY = fileURLToPath(new URL('../', import.meta.url));
const CHART = join(DEPLOY, 'helm/lvstamp');
const KUBERNETES = join(DEPLOY, 'kubernetes');
const NAMESPACE = 'lvstamp-system';
/** What render-kustomize.sh sets beyond the chart's defaults. */
const KUSTOMIZE_VALUES = [
  '--set',
  'namespace.create=true',
  '--set',
  'monitoring.enabled=true',
  '--set',
  'ownerId=unset',
  '--set',
  'rollOnConfigChange=false',
];
const OWNER_ID = '0123456789abcdef0123456789abcdef';

let helm: string;
let kubectl: string;
let work: string;
beforeAll(async () => {
  helm = await pinnedBinary('helm', 'helm');
  kubectl = await pinnedBinary('kubernetes', 'kubectl');
  work = await mkdtemp(join(tmpdir(), 'lvstamp-deploy-chart-'));
}, PARTS_TIMEOUT_MS);
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

/** `helm template lvstamp CHART --namespace lvstamp-system ARGS`, parsed. */
function template(...args: string[]): Promise<Rendered[]> {
  return renderObjects(helm, ['template', 'lvstamp', CHART, '--namespace', NAMESPACE, ...args]);
}

/** Runs helm, which must fail; returns its standard error. */
async function templateFails(...args: string[]): Promise<string> {
  try {
    await promisify(execFile)(helm, ['template', 'lvstamp', CHART, ...args]);
  } catch (error) {
    return (error as { stderr: string }).stderr;
  }
  throw new Error(`helm template ${args.join(' ')} succeeded`);
}

/**
 * The objects as an install puts them: helm gives a namespaced object without a namespace the
 * release's; sorted by kind and name.
 */
function installed(objects: readonly Rendered[]): Rendered[] {
  return objects
    .map((o) =>
      CLUSTER_SCOPED.has(o.kind) || o.metadata.namespace !== undefined
        ? o
        : { ...o, metadata: { ...o.metadata, namespace: NAMESPACE } },
    )
    .sort((a, b) => objectKey(a).localeCompare(objectKey(b)));
}

/** `kubectl kustomize` of an overlay of the given bases and components (paths under deploy/kubernetes or absolute). */
async function kustomize(name: string, bases: string[], components: string[]): Promise<Rendered[]> {
  const dir = await mkdtemp(join(work, `${name}-`));
  const from = (paths: string[]) =>
    JSON.stringify(paths.map((p) => relative(dir, p.startsWith('/') ? p : join(KUBERNETES, p))));
  await writeFile(
    join(dir, 'kustomization.yaml'),
    `resources: ${from(bases)}\ncomponents: ${from(components)}\n`,
  );
  return installed(await renderObjects(kubectl, ['kustomize', dir]));
}

function find(objects: readonly Rendered[], key: string): Rendered {
  const found = objects.find((o) => objectKey(o) === key);
  if (found === undefined) throw new Error(`no ${key} among ${objects.map(objectKey).join(', ')}`);
  return found;
}

interface Container {
  name: string;
  image: string;
  imagePullPolicy?: string;
  args: string[];
  env?: { name: string; value?: string }[];
  resources?: unknown;
  volumeMounts: { name: string; mountPath: string }[];
}
interface PodSpec {
  containers: Container[];
  volumes: ({ name: string } & Record<string, unknown>)[];
  tolerations?: unknown[];
  nodeSelector?: Record<string, string>;
}
function podSpec(daemonSet: Rendered): PodSpec {
  return (daemonSet as unknown as { spec: { template: { spec: PodSpec } } }).spec.template.spec;
}
function container(daemonSet: Rendered, name: string): Container {
  const found = podSpec(daemonSet).containers.find((c) => c.name === name);
  if (found === undefined) throw new Error(`no container ${name}`);
  return found;
}
function gcContainer(cronJob: Rendered): Container {
  const spec = (
    cronJob as unknown as {
      spec: { jobTemplate: { spec: { template: { spec: { containers: Container[] } } } } };
    }
  ).spec.jobTemplate.spec.template.spec;
  const [gc] = spec.containers;
  if (gc === undefined) throw new Error('no GC container');
  return gc;
}
function envValue(c: Container, name: string): string | undefined {
  return c.env?.find((e) => e.name === name)?.value;
}

/** Every file under `dir`, relative to it, sorted. */
async function files(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)))
    .sort();
}

describe('the chart', () => {
  it('passes helm lint --strict with its defaults and with every optional part on', async () => {
    for (const values of [
      [],
      [
        ...KUSTOMIZE_VALUES,
        '--set',
        'snapshots.enabled=true',
        '--set-json',
        'deviceClasses.thin={"volumeGroup":"lvstamp","type":"thin","thinPool":"pool0","thinPoolSize":107374182400,"overprovisionRatio":4,"wipe":"none"}',
        '--set',
        'lvmMetadata=emptyDir',
        '--set',
        'kubeletDir=/var/lib/k0s/kubelet',
        '--set',
        'logLevel=debug',
        '--set',
        'nodeSelector.storage=lvm',
      ],
    ]) {
      const { stdout } = await promisify(execFile)(helm, ['lint', '--strict', CHART, ...values]);
      expect(stdout, values.join(' ')).toContain('1 chart(s) linted, 0 chart(s) failed');
      expect(stdout).not.toMatch(/\[(WARNING|ERROR)\]/);
    }
  });

  it('deploy/kubernetes is what deploy/render-kustomize.sh renders from it now (else: run the script)', async () => {
    const out = join(work, 'rendered');
    await promisify(execFile)('bash', [join(DEPLOY, 'render-kustomize.sh'), out], {
      env: { ...process.env, HELM: helm },
    });
    const rendered = await files(out);
    // every object file of the kustomize tree comes from the chart; by hand: the kustomizations
    // (and their patches) and the one value of components/kubelet-dir
    const byHand = (f: string) =>
      f.endsWith('kustomization.yaml') || f === 'components/kubelet-dir/kubelet-dir.yaml';
    expect((await files(KUBERNETES)).filter((f) => !byHand(f))).toEqual(rendered);
    expect(rendered.length).toBe(14);
    for (const f of rendered) {
      const fresh = await readFile(join(out, f), 'utf8');
      expect(await readFile(join(KUBERNETES, f), 'utf8'), `deploy/kubernetes/${f}`).toBe(fresh);
      expect(fresh).toMatch(
        /^# Rendered from deploy\/helm\/lvstamp\/templates\/.* by deploy\/render-kustomize.sh:\n/,
      );
    }
  });

  it('its defaults are the objects of the kustomize bases and the monitoring component, object for object', async () => {
    const chart = installed(await template(...KUSTOMIZE_VALUES));
    const kustomized = await kustomize('all', ['.', 'gc'], ['components/monitoring']);
    expect(chart.map(objectKey)).toEqual(kustomized.map(objectKey));
    expect(chart.length).toBe(23);
    for (const [i, o] of chart.entries()) expect(o, objectKey(o)).toEqual(kustomized[i]);
  });

  it('snapshots.enabled is components/snapshots: the csi-snapshotter sidecar, the VolumeSnapshotClass, the thin StorageClass', async () => {
    const chart = installed(
      await template(
        ...KUSTOMIZE_VALUES,
        '--set',
        'snapshots.enabled=true',
        '--set-json',
        'deviceClasses.thin={"volumeGroup":"lvstamp","type":"thin","thinPool":"pool0","thinPoolSize":107374182400,"overprovisionRatio":4,"wipe":"none"}',
      ),
    );
    const kustomized = await kustomize('snapshots', ['.'], ['components/snapshots']);
    for (const key of [
      'DaemonSet/lvstamp-csi-node',
      'VolumeSnapshotClass/lvstamp',
      'StorageClass/lvstamp-thin-ext4',
    ])
      expect(find(chart, key), key).toEqual(find(kustomized, key));
    // the thin class of the commented example in config.yaml, now a class
    const config = find(chart, 'ConfigMap/lvstamp-csi-config') as unknown as {
      data: { 'config.yaml': string };
    };
    expect(config.data['config.yaml']).toContain(
      '  thin: { volumeGroup: lvstamp, type: thin, thinPool: pool0, thinPoolSize: 107374182400, overprovisionRatio: 4, wipe: none }\n',
    );
    expect(parse(config.data['config.yaml'])).toEqual({
      deviceClasses: {
        default: { volumeGroup: 'lvstamp', wipe: 'discard', default: true },
        thin: {
          volumeGroup: 'lvstamp',
          type: 'thin',
          thinPool: 'pool0',
          thinPoolSize: 107374182400,
          overprovisionRatio: 4,
          wipe: 'none',
        },
      },
      defaultCapacityBytes: 1073741824,
    });
  });

  it('livenessProbe and csiTimeout as components/slow-nodes sets them are that component', async () => {
    const chart = installed(
      await template(
        ...KUSTOMIZE_VALUES,
        '--set-json',
        'livenessProbe={"initialDelaySeconds":60,"periodSeconds":60,"timeoutSeconds":90,"failureThreshold":10}',
        '--set',
        'csiTimeout=300s',
      ),
    );
    const kustomized = await kustomize('slow-nodes', ['.'], ['components/slow-nodes']);
    const key = 'DaemonSet/lvstamp-csi-node';
    expect(find(chart, key)).toEqual(find(kustomized, key));
  });

  it('kubeletDir moves every path of the kubelet, as components/kubelet-dir does', async () => {
    const dir = '/var/snap/microk8s/common/var/lib/kubelet';
    const chart = find(
      await template('--set', `kubeletDir=${dir}`, '--set', 'rollOnConfigChange=false'),
      'DaemonSet/lvstamp-csi-node',
    );
    new DaemonSet(chart).validate();
    const text = JSON.stringify(chart);
    expect(text).not.toContain('"/var/lib/kubelet');
    expect(container(chart, 'lvstamp-csi').args).toContain(
      `--kubelet-registration-path=${dir}/plugins/lvstamp.io/csi.sock`,
    );
    expect(container(chart, 'lvstamp-csi').volumeMounts).toContainEqual({
      name: 'kubelet-dir',
      mountPath: dir,
      mountPropagation: 'Bidirectional',
    });
    expect(
      podSpec(chart)
        .volumes.filter((v) => 'hostPath' in v)
        .slice(0, 3),
    ).toEqual([
      {
        name: 'socket-dir',
        hostPath: { path: `${dir}/plugins/lvstamp.io`, type: 'DirectoryOrCreate' },
      },
      {
        name: 'registration-dir',
        hostPath: { path: `${dir}/plugins_registry`, type: 'Directory' },
      },
      { name: 'kubelet-dir', hostPath: { path: dir, type: 'Directory' } },
    ]);
    // the component, its one value set in a copy, as the component's comment says to
    const component = join(work, 'kubelet-dir');
    await cp(join(KUBERNETES, 'components/kubelet-dir'), component, { recursive: true });
    const valueFile = join(component, 'kubelet-dir.yaml');
    await writeFile(
      valueFile,
      (await readFile(valueFile, 'utf8')).replace('path: /var/lib/kubelet', `path: ${dir}`),
    );
    const kustomized = find(
      await kustomize('kubelet-dir', ['.'], [component]),
      'DaemonSet/lvstamp-csi-node',
    );
    // the kubelet expands $(KUBELET_DIR) in the argument (Kubernetes: "Define a command and
    // arguments for a container"); after that, the same DaemonSet as the chart's, that variable aside
    const driver = container(kustomized, 'lvstamp-csi');
    expect(envValue(driver, 'KUBELET_DIR')).toBe(dir);
    driver.args = driver.args.map((a) => a.replace('$(KUBELET_DIR)', dir));
    driver.env = (driver.env ?? []).filter((e) => e.name !== 'KUBELET_DIR');
    expect(installed([kustomized])[0]).toEqual(installed([chart])[0]);
  });

  it('lvmMetadata=emptyDir keeps lvm’s archive and backup in the pod, nothing else changes', async () => {
    const daemonSet = (objects: Rendered[]) => find(objects, 'DaemonSet/lvstamp-csi-node');
    const host = daemonSet(await template());
    const pod = daemonSet(await template('--set', 'lvmMetadata=emptyDir'));
    new DaemonSet(pod).validate();
    expect(podSpec(pod).volumes.filter((v) => v.name.startsWith('lvm-'))).toEqual([
      { name: 'lvm-archive', emptyDir: {} },
      { name: 'lvm-backup', emptyDir: {} },
      { name: 'lvm-lock', hostPath: { path: '/run/lock/lvm', type: 'DirectoryOrCreate' } },
      { name: 'lvm-conf', configMap: { name: 'lvstamp-lvm-conf' } },
    ]);
    expect(podSpec(host).volumes.filter((v) => v.name === 'lvm-archive')).toEqual([
      { name: 'lvm-archive', hostPath: { path: '/etc/lvm/archive', type: 'DirectoryOrCreate' } },
    ]);
    const others = (ds: Rendered) =>
      podSpec(ds).volumes.filter((v) => !['lvm-archive', 'lvm-backup'].includes(v.name));
    expect(others(pod)).toEqual(others(host));
    expect(podSpec(pod).containers).toEqual(podSpec(host).containers);
    // the GC's per-node Jobs likewise (apps/gc-job LVSTAMP_GC_LVM_METADATA)
    const gc = (objects: Rendered[]) => gcContainer(find(objects, 'CronJob/lvstamp-gc'));
    expect(
      envValue(gc(await template('--set', 'lvmMetadata=emptyDir')), 'LVSTAMP_GC_LVM_METADATA'),
    ).toBe('emptyDir');
    expect(envValue(gc(await template()), 'LVSTAMP_GC_LVM_METADATA')).toBeUndefined();
  });

  it('rollOnConfigChange: a changed device class, default capacity, owner ID or lvm.conf changes the pod template; other values do not', async () => {
    const annotations = async (...args: string[]) =>
      (
        find(await template(...args), 'DaemonSet/lvstamp-csi-node') as unknown as {
          spec: { template: { metadata: { annotations?: Record<string, string> } } };
        }
      ).spec.template.metadata.annotations;
    // an explicit owner ID everywhere: without one each render makes a random ID, which is in the checksum
    const owner = ['--set', `ownerId=${OWNER_ID}`];
    const defaults = await annotations(...owner);
    expect(Object.keys(defaults ?? {}).sort()).toEqual(['checksum/config', 'checksum/lvm-conf']);
    for (const sum of Object.values(defaults ?? {})) expect(sum).toMatch(/^[0-9a-f]{64}$/);
    // the same values render the same checksums: an upgrade without changes rolls nothing
    expect(await annotations(...owner)).toEqual(defaults);
    expect(await annotations(...owner, '--set', 'logLevel=debug')).toEqual(defaults);
    const classes = await annotations(...owner, '--set', 'deviceClasses.default.wipe=zero');
    expect(classes?.['checksum/config']).not.toBe(defaults?.['checksum/config']);
    expect(classes?.['checksum/lvm-conf']).toBe(defaults?.['checksum/lvm-conf']);
    const capacity = await annotations(...owner, '--set', 'defaultCapacityBytes=2147483648');
    expect(capacity?.['checksum/config']).not.toBe(defaults?.['checksum/config']);
    const otherOwner = await annotations('--set', `ownerId=${'f'.repeat(32)}`);
    expect(otherOwner?.['checksum/config']).not.toBe(defaults?.['checksum/config']);
    expect(otherOwner?.['checksum/lvm-conf']).toBe(defaults?.['checksum/lvm-conf']);
    // the kustomize render: no checksum (an overlay's ConfigMap patch would not change it)
    expect(await annotations('--set', 'rollOnConfigChange=false')).toBeUndefined();
    expect(await templateFails('--set', 'rollOnConfigChange=yes')).toContain('rollOnConfigChange');
  });

  it('the checksum and the ConfigMap name the same owner ID, also a random one (resolved once per render)', async () => {
    const rendered = await template();
    const config = find(rendered, 'ConfigMap/lvstamp-csi-config') as unknown as {
      data: { 'owner-id': string };
    };
    const checksum = (objects: Rendered[]) =>
      (
        find(objects, 'DaemonSet/lvstamp-csi-node') as unknown as {
          spec: { template: { metadata: { annotations: Record<string, string> } } };
        }
      ).spec.template.metadata.annotations['checksum/config'];
    const random = config.data['owner-id'];
    expect(random).toMatch(/^[0-9a-f]{32}$/);
    expect(checksum(await template('--set', `ownerId=${random}`))).toBe(checksum(rendered));
  });

  it('every other value reaches the objects it names', async () => {
    const objects = await template(
      '--set',
      'images.driver.repository=registry.example/lvstamp-csi',
      '--set',
      'images.driver.tag=0.2.0',
      '--set',
      'images.gc.tag=0.2.0',
      '--set',
      'images.provisioner.repository=mirror.example/csi-provisioner',
      '--set',
      'images.pullPolicy=Always',
      '--set',
      'logLevel=debug',
      '--set-json',
      'tolerations=[{"key":"storage","operator":"Exists","effect":"NoSchedule"}]',
      '--set',
      'nodeSelector.lvstamp\\.io/vg=yes',
      '--set',
      'resources.driver.limits.memory=512Mi',
      '--set',
      'gc.schedule=0 3 * * *',
      '--set',
      'gc.apply=true',
      '--set',
      'gc.minAge=2h',
      '--set',
      'gc.quarantine=0',
      '--set',
      'gc.maxDelete=3',
      '--set',
      'gc.maxDeletePercent=20',
      '--set',
      'defaultCapacityBytes=2147483648',
      '--set-json',
      // helm merges maps: the shipped class goes only when set to null
      'deviceClasses={"default":null,"fast":{"volumeGroup":"nvme","wipe":"zero","default":true}}',
      '--set-json',
      'storageClasses=[{"name":"fast-xfs","deviceClass":"fast","fsType":"xfs","reclaimPolicy":"Retain"}]',
      '--set',
      'monitoring.enabled=true',
      '--set',
      'monitoring.podMonitorLabels.release=prometheus',
    );
    const ds = find(objects, 'DaemonSet/lvstamp-csi-node');
    new DaemonSet(ds).validate();
    const driver = container(ds, 'lvstamp-csi');
    expect(driver.image).toBe('registry.example/lvstamp-csi:0.2.0');
    expect(driver.imagePullPolicy).toBe('Always');
    expect(driver.args.at(-1)).toBe('--log-level=debug');
    expect(driver.resources).toEqual({
      requests: { cpu: '100m', memory: '96Mi' },
      limits: { memory: '512Mi' },
    });
    expect(container(ds, 'csi-provisioner').image).toBe('mirror.example/csi-provisioner:v6.4.0');
    expect(podSpec(ds).tolerations).toEqual([
      { key: 'storage', operator: 'Exists', effect: 'NoSchedule' },
    ]);
    expect(podSpec(ds).nodeSelector).toEqual({ 'lvstamp.io/vg': 'yes' });

    const cronJob = find(objects, 'CronJob/lvstamp-gc');
    new CronJob(cronJob).validate();
    expect((cronJob as unknown as { spec: { schedule: string } }).spec.schedule).toBe('0 3 * * *');
    const gc = gcContainer(cronJob);
    expect(gc.image).toBe('ghcr.io/lvstamp/lvstamp:0.2.0');
    expect(
      Object.fromEntries(
        ['APPLY', 'MIN_AGE', 'QUARANTINE', 'WIPE', 'MAX_DELETE', 'MAX_DELETE_PERCENT', 'IMAGE'].map(
          (k) => [k, envValue(gc, `LVSTAMP_GC_${k}`)],
        ),
      ),
    ).toEqual({
      APPLY: 'true',
      MIN_AGE: '2h',
      QUARANTINE: '0',
      // gc.wipe unset: the one class's zero
      WIPE: 'zero',
      MAX_DELETE: '3',
      MAX_DELETE_PERCENT: '20',
      IMAGE: 'ghcr.io/lvstamp/lvstamp:0.2.0',
    });
    expect(envValue(gc, 'LVSTAMP_LOG_LEVEL')).toBe('debug');

    const config = find(objects, 'ConfigMap/lvstamp-csi-config') as unknown as {
      data: { 'config.yaml': string };
    };
    expect(parse(config.data['config.yaml'])).toEqual({
      deviceClasses: { fast: { volumeGroup: 'nvme', wipe: 'zero', default: true } },
      defaultCapacityBytes: 2147483648,
    });
    expect(objects.filter((o) => o.kind === 'StorageClass')).toEqual([
      {
        apiVersion: 'storage.k8s.io/v1',
        kind: 'StorageClass',
        metadata: { name: 'fast-xfs', labels: { 'app.kubernetes.io/part-of': 'lvstamp' } },
        provisioner: 'lvstamp.io',
        parameters: { deviceClass: 'fast', 'csi.storage.k8s.io/fstype': 'xfs' },
        volumeBindingMode: 'WaitForFirstConsumer',
        allowVolumeExpansion: true,
        reclaimPolicy: 'Retain',
      },
    ]);
    expect(find(objects, 'PodMonitor/lvstamp-csi-node').metadata.labels).toEqual({
      'app.kubernetes.io/name': 'lvstamp-csi-node',
      'app.kubernetes.io/part-of': 'lvstamp',
      release: 'prometheus',
    });
    // off by default: no Namespace object (helm install --create-namespace), no monitoring
    const defaults = await template();
    expect(defaults.map(objectKey)).not.toContain('Namespace/lvstamp-system');
    expect(defaults.map((o) => o.kind)).not.toContain('PodMonitor');
    expect(defaults.map((o) => o.kind)).toContain('CronJob');
    expect(
      (await template('--set', 'gc.enabled=false')).filter((o) => o.metadata.name.includes('-gc')),
    ).toEqual([]);
  });
});

describe('the GC\'s wipe (docs/DESIGN.md §5 "Wipe")', () => {
  const gcWipe = async (...args: string[]) =>
    envValue(gcContainer(find(await template(...args), 'CronJob/lvstamp-gc')), 'LVSTAMP_GC_WIPE');
  // the shipped StorageClasses name the class `default`: none here
  const classes = (json: string) => [
    '--set-json',
    `deviceClasses={"default":null,${json}}`,
    '--set-json',
    'storageClasses=[]',
  ];

  it('unset: the strongest wipe of the device classes (none < discard < zero)', async () => {
    expect(await gcWipe()).toBe('discard');
    expect(
      await gcWipe(
        ...classes(
          '"a":{"volumeGroup":"vg1","wipe":"none","default":true},"b":{"volumeGroup":"vg2","wipe":"zero"},"c":{"volumeGroup":"vg3","wipe":"discard"}',
        ),
      ),
    ).toBe('zero');
    expect(
      await gcWipe(
        ...classes(
          '"thin":{"volumeGroup":"vg1","type":"thin","thinPool":"pool","overprovisionRatio":4,"wipe":"none","default":true}',
        ),
      ),
    ).toBe('none');
  });

  it('gc.wipe wins over the classes, and the schema refuses anything but none, discard, zero', async () => {
    expect(await gcWipe('--set', 'gc.wipe=none')).toBe('none');
    expect(await templateFails('--set', 'gc.wipe=shred')).toContain(
      "at '/gc/wipe': value must be one of 'none', 'discard', 'zero'",
    );
  });
});

describe('device classes the driver would refuse at start, and StorageClasses over a missing class', () => {
  const json = (value: string) => ['--set-json', value];
  it.each([
    [
      // docs/install.md's replacement of the default class without `default: null`: helm merges
      'a second default beside the shipped one',
      json('deviceClasses={"fast":{"volumeGroup":"nvme","wipe":"zero","default":true}}'),
      'deviceClasses: exactly one device class must have default: true, found 2 (default, fast); to replace the shipped class `default`, set `default: null` beside yours',
    ],
    [
      'no default',
      json('deviceClasses={"default":{"volumeGroup":"lvstamp","wipe":"discard","default":false}}'),
      'deviceClasses: exactly one device class must have default: true, found 0 (none)',
    ],
    [
      'a thin class with wipe: discard',
      json(
        'deviceClasses.thin={"volumeGroup":"lvstamp","type":"thin","thinPool":"pool0","overprovisionRatio":4,"wipe":"discard"}',
      ),
      'deviceClasses.thin.wipe: a thin class takes only wipe: none, not discard',
    ],
    [
      'a thin class without thinPool',
      json(
        'deviceClasses.thin={"volumeGroup":"lvstamp","type":"thin","overprovisionRatio":4,"wipe":"none"}',
      ),
      'deviceClasses.thin: a thin class needs thinPool and overprovisionRatio',
    ],
    [
      // docs/install.md's example, the shipped StorageClasses kept
      'the shipped StorageClasses over a replaced default class',
      json(
        'deviceClasses={"default":null,"fast":{"volumeGroup":"nvme","wipe":"zero","default":true}}',
      ),
      'StorageClass lvstamp-ext4 names deviceClass default, which deviceClasses does not have (it has: fast)',
    ],
    [
      'snapshots.enabled without a thin class',
      ['--set', 'snapshots.enabled=true'],
      'StorageClass lvstamp-thin-ext4 names deviceClass thin, which deviceClasses does not have (it has: default)',
    ],
  ])('refuses %s', async (_case, args, message) => {
    expect(await templateFails(...args)).toContain(message);
  });
});

describe('kubeVersion (README "Supported Kubernetes versions")', () => {
  it('installs on 1.34.0, the oldest minor the real-node tier ran, and refuses 1.33', async () => {
    expect((await template('--kube-version', 'v1.34.0')).length).toBeGreaterThan(0);
    expect(await templateFails('--kube-version', 'v1.33.12')).toContain(
      'chart requires kubeVersion: >=1.34.0-0 which is incompatible with Kubernetes v1.33.12',
    );
  });
});

describe('the owner ID (docs/install.md "The owner ID")', () => {
  const ownerId = async (...args: string[]) => {
    const config = find(await template(...args), 'ConfigMap/lvstamp-csi-config') as unknown as {
      data: { 'owner-id': string };
    };
    return config.data['owner-id'];
  };

  it('an explicit value is written as it is', async () => {
    expect(await ownerId('--set', `ownerId=${OWNER_ID}`)).toBe(OWNER_ID);
  });

  it('unset writes the placeholder the driver and the GC refuse (the kustomize base’s)', async () => {
    expect(await ownerId('--set', 'ownerId=unset')).toBe(
      'unset: openssl rand -hex 16, README "Deploying on a cluster" step 3',
    );
  });

  it('empty, without a cluster to look in (helm template): a fresh random one each render', async () => {
    const first = await ownerId();
    const second = await ownerId();
    expect(first).toMatch(/^[0-9a-f]{32}$/);
    expect(second).toMatch(/^[0-9a-f]{32}$/);
    expect(first).not.toBe(second);
  });

  it('ownerIdReplaces changes nothing when nothing is installed (helm template cannot look), and needs an ownerId', async () => {
    expect(
      await ownerId('--set', `ownerId=${OWNER_ID}`, '--set', `ownerIdReplaces=${'f'.repeat(32)}`),
    ).toBe(OWNER_ID);
    expect(await templateFails('--set', `ownerIdReplaces=${OWNER_ID}`)).toContain(
      `ownerIdReplaces is ${OWNER_ID}, but ownerId is empty: set ownerId to the new ID as well, or leave ownerIdReplaces empty to keep the installed one; nothing changed`,
    );
    expect(await templateFails('--set', 'ownerIdReplaces=unset')).toContain(
      `- at '/ownerIdReplaces': 'unset' does not match pattern '^(|[0-9a-f]{32})$'`,
    );
  });

  it.each([
    ['ABC', `- at '/ownerId': 'ABC' does not match pattern '^(|unset|[0-9a-f]{32})$'`],
    [
      'ABCDEF0123456789ABCDEF0123456789',
      `- at '/ownerId': 'ABCDEF0123456789ABCDEF0123456789' does not match pattern '^(|unset|[0-9a-f]{32})$'`,
    ],
    [
      '00000000000000000000000000000000',
      'ownerId: 32 zeros is the standalone owner ID of `lvstamp create` on a node, which the driver refuses: leave ownerId empty (a random one is made at install) or set your own (openssl rand -hex 16)',
    ],
  ])('%s is refused, the message naming the value', async (value, message) => {
    expect(await templateFails('--set', `ownerId=${value}`)).toContain(message);
  });
});

describe('values.schema.json', () => {
  it.each([
    ['kubeletDir=var/lib/kubelet', `- at '/kubeletDir': 'var/lib/kubelet' does not match pattern`],
    [
      'kubeletDir=/var/lib/kubelet/',
      `- at '/kubeletDir': '/var/lib/kubelet/' does not match pattern`,
    ],
    ['lvmMetadata=tmpfs', `- at '/lvmMetadata': value must be one of 'hostPath', 'emptyDir'`],
    ['gc.quarantine=1w', `- at '/gc/quarantine': '1w' does not match pattern`],
    ['gc.schedule=bogus', `- at '/gc/schedule': 'bogus' does not match pattern`],
    ['gc.schedule=17 * * *', `- at '/gc/schedule': '17 * * *' does not match pattern`],
    ['gc.schedule= @hourly', `- at '/gc/schedule': ' @hourly' does not match pattern`],
    ['gc.schedule=@every  2h', `- at '/gc/schedule': '@every  2h' does not match pattern`],
    ['gc.maxDeletePercent=150', `- at '/gc/maxDeletePercent': maximum: got 150, want 100`],
    ['logLevel=verbose', `- at '/logLevel': value must be one of`],
    [
      'deviceClasses.default.wipe=shred',
      `- at '/deviceClasses/default/wipe': value must be one of 'none', 'discard', 'zero'`,
    ],
    ['ownerid=x', `- at '': additional properties 'ownerid' not allowed`],
  ])('refuses %s', async (value, message) => {
    const stderr = await templateFails('--set', value);
    expect(stderr).toContain("values don't meet the specifications of the schema(s)");
    expect(stderr).toContain(message);
  });

  it('takes the global values Helm gives a subchart (lvstamp inside an umbrella chart), and ignores them', async () => {
    const owner = ['--set', `ownerId=${OWNER_ID}`];
    expect(await template(...owner, '--set', 'global.imageRegistry=example.com')).toEqual(
      await template(...owner),
    );
  });

  it.each(['*/5 * * * *', '0 3 * * MON-FRI', '@hourly', '@every 2h', ' 17  * *\t* * '])(
    'accepts the schedule %j, which Kubernetes parses',
    async (schedule) => {
      const cronJob = find(
        await template('--set', `gc.schedule=${schedule}`),
        'CronJob/lvstamp-gc',
      );
      expect((cronJob as unknown as { spec: { schedule: string } }).spec.schedule).toBe(schedule);
    },
  );
});
