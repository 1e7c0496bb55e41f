import { describe, expect, it, vi } from 'vitest';
import { IN_DRIVER_POD_ENV } from './driver-pod.js';
import type { CliServices } from './services.js';
import { harness } from './testing/harness.js';

const IN_POD = { [IN_DRIVER_POD_ENV]: '1', LVSTAMP_OWNER_ID: 'ab'.repeat(16) };

describe('inside the driver pod (LVSTAMP_IN_DRIVER_POD=1, the image’s lvstamp wrapper)', () => {
  it.each([
    [['create', 'scratch', '--size', '1Gi', '--vg', 'vg0'], 'create'],
    [['snapshot', 'create', 'nightly', '--from', 'data'], 'snapshot create'],
    [['demo'], 'demo'],
  ])('%j is refused before anything is built: exit 2, the trap named', async (argv, command) => {
    const h = harness({}, undefined, IN_POD);
    expect(await h.run(...argv)).toBe(2);
    expect(h.stderr()).toBe(
      `lvstamp: lvstamp ${command} is refused inside the driver pod: it would stamp the cluster's owner ID ` +
        `(LVSTAMP_OWNER_ID), and the cluster's GC removes what no PV or VolumeSnapshotContent ` +
        `names as an orphan. Make volumes with a PVC, or run lvstamp on the node itself ` +
        `(docs/install.md "The lvstamp CLI in the driver pod")\n`,
    );
    expect(h.built).toEqual([]);
  });

  it('list runs, with the cluster’s owner ID from the environment and the driver’s host lock', async () => {
    // commander reads LVSTAMP_OWNER_ID from the process environment (the container's)
    vi.stubEnv('LVSTAMP_OWNER_ID', 'ab'.repeat(16));
    const list = vi.fn(() => Promise.resolve([]));
    const h = harness(
      { volumes: { list } as unknown as CliServices['volumes'] },
      undefined,
      IN_POD,
    );
    expect(await h.run('list', '--vg', 'vg0')).toBe(0);
    expect(h.stderr()).toBe('… volume group: vg0 (--vg)\n');
    // --lock-file of the DaemonSet (deploy/helm/lvstamp/templates/daemonset.yaml)
    expect(h.built).toEqual([
      { ownerId: 'ab'.repeat(16), lockFile: '/run/lock/lvstamp/host.lock', json: false },
    ]);
    expect(list).toHaveBeenCalled();
    vi.unstubAllEnvs();
  });

  it('outside a driver pod, create runs', async () => {
    const create = vi.fn(() => Promise.reject(new Error('stop here')));
    const h = harness({
      volumes: {
        create,
        defaultVolumeGroup: () => Promise.resolve('vg0'),
      } as unknown as CliServices['volumes'],
    });
    await h.run('create', 'scratch', '--size', '1Gi', '--vg', 'vg0');
    expect(create).toHaveBeenCalledWith(
      expect.objectContaining({ name: 'scratch', vgName: 'vg0' }),
    );
  });
});
