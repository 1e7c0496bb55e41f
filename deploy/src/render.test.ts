// Renders the two kustomize bases (the driver's, deploy/kubernetes, and the GC's,
// deploy/kubernetes/gc) with kustomize itself (`kubectl kustomize` of the pinned kubectl, the
// `kubernetes` part of test-e2e/parts), alone and under an overlay that sets `namespace:`, and checks
// what an operator relies on: the same labels on every object of both, every namespaced object
// in one namespace, every RBAC subject moved with its ServiceAccount, and the GC beside the
// ConfigMaps it reads.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Service } from 'kubernetes-models/v1';
import { CLUSTER_SCOPED, renderObjects, type Rendered } from './objects.js';
import { PARTS_TIMEOUT_MS, pinnedBinary } from './parts.js';

const KUBERNETES = fileURLToPath(new URL('../kubernetes/', import.meta.url));

/** The pinned kubectl (set in beforeAll). */
let kubectl: string;

/**
 * `kubectl kustomize DIR`, parsed.
 * @throws Error naming kubectl when kustomize fails.
 */
async function render(dir: string): Promise<Rendered[]> {
  return renderObjects(kubectl, ['kustomize', dir]);
}

/** The pod template of a DaemonSet or CronJob, if the object has one. */
function podTemplate(o: Rendered): { metadata?: { labels?: Record<string, string> } } | undefined {
  const spec = o.spec as
    | {
        template?: { metadata?: { labels?: Record<string, string> } };
        jobTemplate?: { spec: { template: { metadata?: { labels?: Record<string, string> } } } };
      }
    | undefined;
  return spec?.template ?? spec?.jobTemplate?.spec.template;
}

let work: string;
beforeAll(async () => {
  kubectl = await pinnedBinary('kubernetes', 'kubectl');
  work = await mkdtemp(join(tmpdir(), 'lvstamp-deploy-render-'));
}, PARTS_TIMEOUT_MS);
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

/** An overlay of `bases` (and `components`) with `namespace: storage`, written under the temporary directory. */
async function overlay(name: string, bases: string[], components: string[] = []): Promise<string> {
  const dir = join(work, name);
  await mkdir(dir, { recursive: true });
  const from = (paths: string[]) =>
    JSON.stringify(paths.map((b) => relative(dir, join(KUBERNETES, b))));
  await writeFile(
    join(dir, 'kustomization.yaml'),
    `namespace: storage\nresources: ${from(bases)}\ncomponents: ${from(components)}\n`,
  );
  return dir;
}

describe('the kustomize bases, rendered', () => {
  it('by the kubectl that test-e2e/parts/versions.env pins', async () => {
    const pins = await readFile(
      new URL('../../test-e2e/parts/versions.env', import.meta.url),
      'utf8',
    );
    const pinned = /^K8S_VERSION=(\S+)$/m.exec(pins)?.[1];
    const { stdout } = await promisify(execFile)(kubectl, ['version', '--client', '-o', 'json']);
    const version = JSON.parse(stdout) as { clientVersion: { gitVersion: string } };
    expect(pinned).toMatch(/^v1\.\d+\.\d+$/);
    expect(version.clientVersion.gitVersion).toBe(pinned);
  });

  it('both carry app.kubernetes.io/part-of: lvstamp on every object and pod template, and put everything namespaced in lvstamp-system', async () => {
    for (const base of ['', 'gc']) {
      const objects = await render(join(KUBERNETES, base));
      expect(objects.length).toBeGreaterThan(5);
      for (const o of objects) {
        const what = `${base || 'driver'}: ${o.kind}/${o.metadata.name}`;
        expect(o.metadata.labels?.['app.kubernetes.io/part-of'], what).toBe('lvstamp');
        const template = podTemplate(o);
        if (template !== undefined)
          expect(template.metadata?.labels?.['app.kubernetes.io/part-of'], what).toBe('lvstamp');
        if (CLUSTER_SCOPED.has(o.kind)) expect(o.metadata.namespace, what).toBeUndefined();
        else expect(o.metadata.namespace, what).toBe('lvstamp-system');
      }
    }
  });

  it('an overlay’s namespace: moves every namespaced object of both bases and every RBAC subject, and leaves the GC beside the ConfigMaps it reads', async () => {
    const objects = await render(await overlay('both', ['.', 'gc']));
    const namespaced = objects.filter((o) => !CLUSTER_SCOPED.has(o.kind));
    expect(namespaced.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual(
      expect.arrayContaining([
        'ConfigMap/lvstamp-csi-config',
        'ConfigMap/lvstamp-lvm-conf',
        'CronJob/lvstamp-gc',
        'DaemonSet/lvstamp-csi-node',
        'Role/lvstamp-gc',
        'Role/lvstamp-csi-node',
      ]),
    );
    for (const o of namespaced) expect(o.metadata.namespace, o.metadata.name).toBe('storage');
    const bindings = objects.filter((o) => o.kind.endsWith('RoleBinding'));
    expect(bindings.length).toBeGreaterThanOrEqual(5);
    for (const b of bindings) {
      for (const s of b.subjects ?? []) {
        expect(s, `${b.kind}/${b.metadata.name}`).toMatchObject({
          kind: 'ServiceAccount',
          namespace: 'storage',
        });
        expect(
          objects.some((o) => o.kind === 'ServiceAccount' && o.metadata.name === s.name),
          s.name,
        ).toBe(true);
      }
    }
    // kustomize renames the Namespace object too (with its pod-security label)
    expect(objects.filter((o) => o.kind === 'Namespace').map((o) => o.metadata.name)).toEqual([
      'storage',
    ]);
  });

  it('the GC base alone under an overlay’s namespace: keeps its Events grant (cluster-wide) and its subjects with it', async () => {
    const objects = await render(await overlay('gc', ['gc']));
    expect(objects.filter((o) => o.metadata.namespace === 'default')).toEqual([]);
    const events = objects.find(
      (o) => o.kind === 'ClusterRoleBinding' && o.metadata.name === 'lvstamp-gc-events',
    );
    expect(events?.subjects).toEqual([
      { kind: 'ServiceAccount', name: 'lvstamp-gc', namespace: 'storage' },
    ]);
  });

  it('components/monitoring: a headless Service and a PodMonitor that reach the driver pods’ metrics port, moved with the overlay’s namespace', async () => {
    const objects = await render(await overlay('monitoring', ['.'], ['components/monitoring']));
    const daemonSet = objects.find((o) => o.kind === 'DaemonSet') as unknown as {
      spec: {
        template: {
          metadata: { labels: Record<string, string> };
          spec: {
            containers: {
              name: string;
              args: string[];
              ports: { name: string; containerPort: number }[];
            }[];
          };
        };
      };
    };
    const podLabels = daemonSet.spec.template.metadata.labels;
    const driver = daemonSet.spec.template.spec.containers.find((c) => c.name === 'lvstamp-csi');
    const port = driver?.ports.find((p) => p.name === 'metrics');
    expect(driver?.args).toContain(`--metrics-address=0.0.0.0:${port?.containerPort ?? 0}`);
    const service = objects.find((o) => o.kind === 'Service') as unknown as Rendered & {
      spec: Record<string, unknown> & { selector: Record<string, string> };
    };
    new Service(service).validate();
    expect(service.metadata.namespace).toBe('storage');
    expect(service.spec).toMatchObject({
      clusterIP: 'None',
      ports: [{ name: 'metrics', port: port?.containerPort, targetPort: 'metrics' }],
    });
    for (const [key, value] of Object.entries(service.spec.selector))
      expect(podLabels[key], key).toBe(value);
    const monitor = objects.find((o) => o.kind === 'PodMonitor') as unknown as Rendered & {
      apiVersion: string;
      spec: {
        selector: { matchLabels: Record<string, string> };
        podMetricsEndpoints: { port: string; path: string }[];
      };
    };
    expect(monitor.apiVersion).toBe('monitoring.coreos.com/v1');
    expect(monitor.metadata.namespace).toBe('storage');
    for (const [key, value] of Object.entries(monitor.spec.selector.matchLabels))
      expect(podLabels[key], key).toBe(value);
    expect(monitor.spec.podMetricsEndpoints).toMatchObject([{ port: 'metrics', path: '/metrics' }]);
    for (const o of [service, monitor])
      expect(o.metadata.labels?.['app.kubernetes.io/part-of']).toBe('lvstamp');
  });
});
