// Checks deploy/kubernetes/gc against current Kubernetes schemas (kubernetes-models: the API's
// OpenAPI schemas, validated with ajv) and against the program: the CronJob runs `cluster`
// dry by default with the documented switch, its env names options the program reads, and
// the RBAC grants exactly what the job calls.
import { describe, expect, it } from 'vitest';
import { CronJob } from 'kubernetes-models/batch/v1';
import { ServiceAccount } from 'kubernetes-models/v1';
import {
  ClusterRole,
  ClusterRoleBinding,
  Role,
  RoleBinding,
} from 'kubernetes-models/rbac.authorization.k8s.io/v1';
import { ENVIRONMENT } from './config.js';
import { loadGcManifests } from './testing/manifests.js';

const MODELS: Readonly<Record<string, new (data: never) => { validate(): void }>> = {
  'batch/v1/CronJob': CronJob,
  'v1/ServiceAccount': ServiceAccount,
  'rbac.authorization.k8s.io/v1/ClusterRole': ClusterRole,
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': ClusterRoleBinding,
  'rbac.authorization.k8s.io/v1/Role': Role,
  'rbac.authorization.k8s.io/v1/RoleBinding': RoleBinding,
};

describe('deploy/kubernetes/gc', () => {
  it('lists every manifest file in its kustomization, and each object passes its schema', async () => {
    const objects = await loadGcManifests();
    // in each file, helm's install order of kinds (rendered from the chart: deploy/render-kustomize.sh)
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([
      'ServiceAccount/lvstamp-gc',
      'ClusterRole/lvstamp-gc',
      'ClusterRole/lvstamp-gc-events',
      'ClusterRoleBinding/lvstamp-gc',
      'ClusterRoleBinding/lvstamp-gc-events',
      'Role/lvstamp-gc',
      'RoleBinding/lvstamp-gc',
      'CronJob/lvstamp-gc',
    ]);
    for (const o of objects) {
      const Model = MODELS[`${o.apiVersion}/${o.kind}`];
      expect(Model, `${o.apiVersion}/${o.kind}`).toBeDefined();
      if (Model)
        expect(() => {
          new Model(o as never).validate();
        }, o.metadata.name).not.toThrow();
    }
  });

  it('a schema violation is caught (the check is not vacuous)', async () => {
    const cron = (await loadGcManifests()).find((o) => o.kind === 'CronJob');
    expect(() => {
      new CronJob({
        ...cron,
        spec: { ...(cron?.spec as object), concurrencyPolicy: 7 },
      } as never).validate();
    }).toThrow();
  });

  it('CronJob: Forbid, deadlines, history limits, dry run by default, env the program reads', async () => {
    const cron = (await loadGcManifests()).find((o) => o.kind === 'CronJob') as unknown as {
      spec: {
        concurrencyPolicy: string;
        startingDeadlineSeconds: number;
        successfulJobsHistoryLimit: number;
        failedJobsHistoryLimit: number;
        jobTemplate: {
          spec: {
            activeDeadlineSeconds: number;
            template: {
              spec: {
                serviceAccountName: string;
                containers: { args: string[]; env: { name: string; value?: string }[] }[];
              };
            };
          };
        };
      };
    };
    expect(cron.spec).toMatchObject({
      concurrencyPolicy: 'Forbid',
      startingDeadlineSeconds: 600,
      successfulJobsHistoryLimit: 3,
      failedJobsHistoryLimit: 3,
    });
    expect(cron.spec.jobTemplate.spec.activeDeadlineSeconds).toBe(2400);
    const pod = cron.spec.jobTemplate.spec.template.spec;
    expect(pod.serviceAccountName).toBe('lvstamp-gc');
    const [container] = pod.containers;
    expect(container?.args).toEqual(['cluster']);
    const env = new Map(container?.env.map((e) => [e.name, e]));
    expect(env.get('LVSTAMP_GC_APPLY')?.value).toBe('false');
    const known = new Set(Object.values(ENVIRONMENT).map(([name]) => name));
    for (const name of env.keys()) expect(known, name).toContain(name);
  });

  it('RBAC: list PVs, PVCs, CSINodes, VolumeSnapshotContents; create/get/patch Jobs in its namespace; create Events (for "default", cluster-wide so that an overlay’s namespace cannot move it); nothing more', async () => {
    const objects = await loadGcManifests();
    const rules = (kind: string, name: string) =>
      objects.find((o) => o.kind === kind && o.metadata.name === name) as unknown as {
        rules: unknown[];
        metadata: { namespace?: string };
      };
    expect(rules('ClusterRole', 'lvstamp-gc').rules).toEqual([
      {
        apiGroups: [''],
        resources: ['persistentvolumes', 'persistentvolumeclaims'],
        verbs: ['list'],
      },
      { apiGroups: ['storage.k8s.io'], resources: ['csinodes'], verbs: ['list'] },
      {
        apiGroups: ['snapshot.storage.k8s.io'],
        resources: ['volumesnapshotcontents'],
        verbs: ['list'],
      },
    ]);
    expect(rules('Role', 'lvstamp-gc').rules).toEqual([
      { apiGroups: ['batch'], resources: ['jobs'], verbs: ['create', 'get', 'patch'] },
      { apiGroups: [''], resources: ['pods', 'events'], verbs: ['list'] },
    ]);
    expect(rules('Role', 'lvstamp-gc').metadata.namespace).toBe('lvstamp-system');
    expect(rules('ClusterRole', 'lvstamp-gc-events').rules).toEqual([
      { apiGroups: [''], resources: ['events'], verbs: ['create'] },
    ]);
    // no namespaced object outside the GC's own namespace: an overlay's `namespace:` moves them all
    expect(
      objects.filter(
        (o) => o.metadata.namespace !== undefined && o.metadata.namespace !== 'lvstamp-system',
      ),
    ).toEqual([]);
  });
});
