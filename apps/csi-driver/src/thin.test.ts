import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ThinPoolUnusableError, type ThinPoolCapacity } from '@lvstamp/core';
import { parseConfig } from './config.js';
import { DriverMetrics } from './metrics.js';
import {
  failureOf,
  GIB,
  MIB,
  mountEntry,
  startHarness,
  FakeCore,
  type Harness,
} from './testing/harness.js';

// A thin default class next to a thick one on the same group (DESIGN.md §4 "Thin device classes").
const CONFIG = parseConfig(`
deviceClasses:
  thin: { volumeGroup: vg0, type: thin, thinPool: pool0, overprovisionRatio: 4, wipe: none, default: true }
  thick: { volumeGroup: vg0, wipe: discard }
`);
const MOUNT = {
  mount: { fs_type: 'ext4', mount_flags: [] },
  access_mode: { mode: 'SINGLE_NODE_WRITER' },
};
const THIN = { type: 'thin', thinPool: 'pool0', thinPoolSizeBytes: null, overprovisionRatio: 4 };

function pool(overrides: Partial<ThinPoolCapacity> = {}): ThinPoolCapacity {
  return {
    condition: 'ok',
    detail: null,
    poolBytes: GIB,
    usedBytes: 10 * MIB,
    promisedBytes: 0,
    budgetBytes: 4 * GIB,
    limitBytes: 1016 * MIB,
    capacityBytes: 1015 * MIB,
    whenFull: 'error',
    thinLvNames: [],
    dataRatio: 0.01,
    metadataRatio: 0.1,
    ...overrides,
  };
}

let h: Harness;
let core: FakeCore;
beforeEach(async () => {
  core = new FakeCore();
  h = await startHarness({ core, config: CONFIG });
});
afterEach(async () => {
  await h.close();
});

describe('thin classes in the Controller service', () => {
  it('GetCapacity answers the pool capacity in both fields', async () => {
    core.thinPools.set('vg0/pool0', pool());
    expect(
      await h.call('Controller', 'GetCapacity', { volume_capabilities: [MOUNT], parameters: {} }),
    ).toMatchObject({
      available_capacity: String(1015 * MIB),
      maximum_volume_size: { value: String(1015 * MIB) },
    });
    expect(core.calls).toContainEqual(['thinPoolCapacity', 'vg0', 'pool0']);
  });

  it('GetCapacity warns about an adopted pool that queues writes when full', async () => {
    core.thinPools.set('vg0/pool0', pool({ whenFull: 'queue' }));
    await h.call('Controller', 'GetCapacity', { volume_capabilities: [MOUNT], parameters: {} });
    expect(JSON.stringify(h.logs.lines)).toContain('thin pool queues writes when full');
  });

  it('GetCapacity of a pool that cannot be activated (no thin-pool target in the kernel) is 0 and logs why', async () => {
    core.failNext.set(
      'thinPoolCapacity',
      new ThinPoolUnusableError(
        'vg0',
        'pool0',
        'the kernel has no thin-pool target and lvm could not load it',
      ),
    );
    const answer = await h.call('Controller', 'GetCapacity', {
      volume_capabilities: [MOUNT],
      parameters: {},
    });
    expect(answer).toMatchObject({ available_capacity: '0', maximum_volume_size: { value: '0' } });
    const logged = JSON.stringify(h.logs.lines);
    expect(logged).toContain('thin pool unusable: its device class reports 0 capacity');
    expect(logged).toContain('the kernel has no thin-pool target and lvm could not load it');
  });

  it('GetCapacity of a full pool is 0 and logs why', async () => {
    core.thinPools.set(
      'vg0/pool0',
      pool({
        condition: 'data-full',
        detail: 'thin pool vg0/pool0 is out of data space: writes fail',
        limitBytes: 0,
        capacityBytes: 0,
      }),
    );
    const answer = await h.call('Controller', 'GetCapacity', {
      volume_capabilities: [MOUNT],
      parameters: {},
    });
    expect(answer).toMatchObject({ available_capacity: '0', maximum_volume_size: { value: '0' } });
    expect(JSON.stringify(h.logs.lines)).toContain('thin pool takes no new volume');
  });

  it('CreateVolume passes the class provisioning to the core', async () => {
    await h.call('Controller', 'CreateVolume', {
      name: 'pvc-thin',
      volume_capabilities: [MOUNT],
      capacity_range: { required_bytes: String(64 * MIB) },
    });
    expect(core.calls[0]).toMatchObject(['create', { vgName: 'vg0', provisioning: THIN }]);
  });

  it('CreateVolume answers RESOURCE_EXHAUSTED when the pool is unusable', async () => {
    core.failNext.set(
      'create',
      new ThinPoolUnusableError('vg0', 'pool0', 'Logical volume vg0/pool0 is not a thin pool.'),
    );
    const failure = await failureOf(
      h.call('Controller', 'CreateVolume', { name: 'pvc-thin', volume_capabilities: [MOUNT] }),
    );
    expect(failure.code).toBe('RESOURCE_EXHAUSTED');
    expect(failure.details).toBe(
      'thin pool vg0/pool0 is unusable: Logical volume vg0/pool0 is not a thin pool.',
    );
  });
});

describe('thin volumes in the Node service', () => {
  const TARGET = '/var/lib/kubelet/pods/p/volumes/pv1';

  function mountedThinVolume(): string {
    const volume = core.add('pvc-1', GIB);
    const entry = core.store.get(volume.volumeId);
    if (entry === undefined) throw new Error('not stored');
    entry.volume = { ...entry.volume, attr: 'Vwi-aotz--' };
    core.devices.set(volume.volumeId, { path: 'x', major: 253, minor: 7 });
    core.mountTable.push(mountEntry(TARGET, 253, 7, false));
    h.paths.kinds.set(TARGET, 'directory');
    return volume.volumeId;
  }

  it.each([
    ['data-full', 'thin pool vg0/pool0 is out of data space: writes fail'],
    ['metadata-full', 'thin pool vg0/pool0 metadata is 85 % used (lvstamp stops at 80 %)'],
  ] as const)('reports abnormal when the pool is %s', async (condition, detail) => {
    const id = mountedThinVolume();
    const lvName = `lvstamp_${id}`;
    core.thinPools.set('vg0/pool0', pool({ condition, detail, thinLvNames: [lvName] }));
    const answer = await h.call('Node', 'NodeGetVolumeStats', {
      volume_id: id,
      volume_path: TARGET,
    });
    expect(answer).toMatchObject({ volume_condition: { abnormal: true, message: detail } });
  });

  it('NodeExpandVolume gives the core the thin classes pools', async () => {
    const id = mountedThinVolume();
    core.calls.length = 0;
    await h.call('Node', 'NodeExpandVolume', {
      volume_id: id,
      volume_path: TARGET,
      capacity_range: { required_bytes: String(2 * GIB) },
    });
    expect(core.calls).toEqual([
      ['expand', id, 2 * GIB, { thinPools: [{ vgName: 'vg0', thin: THIN }] }],
    ]);
  });

  it('reports ok when the pool takes writes', async () => {
    const id = mountedThinVolume();
    core.thinPools.set('vg0/pool0', pool({ thinLvNames: [`lvstamp_${id}`] }));
    expect(
      await h.call('Node', 'NodeGetVolumeStats', { volume_id: id, volume_path: TARGET }),
    ).toMatchObject({ volume_condition: { abnormal: false, message: 'ok' } });
  });
});

it('exports the thin pool gauges per class', async () => {
  const metricsCore = new FakeCore();
  metricsCore.thinPools.set(
    'vg0/pool0',
    pool({
      condition: 'metadata-full',
      dataRatio: 0.5,
      metadataRatio: 0.85,
      promisedBytes: 3 * GIB,
      capacityBytes: 0,
    }),
  );
  const metrics = new DriverMetrics({ config: CONFIG, core: metricsCore });
  const text = await metrics.registry.metrics();
  // what it can still promise (GetCapacity's answer: 0 with full metadata) and has promised
  expect(text).toContain(
    'lvstamp_thin_class_available_bytes{device_class="thin",pool="vg0/pool0"} 0',
  );
  expect(text).toContain(
    `lvstamp_thin_class_promised_bytes{device_class="thin",pool="vg0/pool0"} ${3 * GIB}`,
  );
  expect(text).toContain('lvstamp_thin_pool_data_ratio{device_class="thin",pool="vg0/pool0"} 0.5');
  expect(text).toContain(
    'lvstamp_thin_pool_metadata_ratio{device_class="thin",pool="vg0/pool0"} 0.85',
  );
  expect(text).toContain(
    'lvstamp_thin_pool_full{device_class="thin",pool="vg0/pool0",kind="data"} 0',
  );
  expect(text).toContain(
    'lvstamp_thin_pool_full{device_class="thin",pool="vg0/pool0",kind="metadata"} 1',
  );
  metricsCore.thinPools.set('vg0/pool0', pool({ capacityBytes: 1015 * MIB }));
  await new Promise((resolve) => setTimeout(resolve, 1100)); // past one scrape's measurement
  expect(await metrics.registry.metrics()).toContain(
    `lvstamp_thin_class_available_bytes{device_class="thin",pool="vg0/pool0"} ${1015 * MIB}`,
  );
});
