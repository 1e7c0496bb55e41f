import { expect, it } from 'vitest';
import { DriverMetrics } from './metrics.js';
import { FakeCore, GIB, testConfig } from './testing/harness.js';
import { httpGet as fetchText } from './testing/kubelet.js';

it('serves RPC counts, volume group bytes and volumes per class on /metrics', async () => {
  const core = new FakeCore();
  core.add('pvc-1', GIB);
  const metrics = new DriverMetrics({ config: testConfig(), core });
  metrics.observeRpc('/csi.v1.Controller/CreateVolume', 'OK', 0.02);
  const { server, port } = await metrics.serve('127.0.0.1:0');
  try {
    const { status, body } = await fetchText(port, '/metrics');
    expect(status).toBe(200);
    expect(body).toContain(
      'lvstamp_csi_rpc_total{method="/csi.v1.Controller/CreateVolume",code="OK"} 1',
    );
    expect(body).toContain(`lvstamp_volume_group_free_bytes{volume_group="vg0"} ${8 * GIB}`);
    expect(body).toContain(`lvstamp_volume_group_size_bytes{volume_group="vg1"} ${4 * GIB}`);
    expect(body).toContain('lvstamp_volumes{device_class="fast"} 1');
    expect(body).toContain('lvstamp_volumes{device_class="secure"} 0');
    // Counted from the look-up: a scrape reads no header.
    expect(core.capacityReads).toEqual([]);
    expect((await fetchText(port, '/')).status).toBe(404);
  } finally {
    server.close();
  }
});

it('counts the quarantined LVs and the bytes they hold per device class (DESIGN.md §6 "Quarantine")', async () => {
  const core = new FakeCore();
  const scopes: (readonly string[])[] = [];
  const lv = (vgName: string, lvName: string, sizeBytes: number, attr = '-wi-------') => ({
    vgName,
    lvName,
    lvUuid: `u-${lvName}`,
    sizeBytes,
    attr,
    active: false,
    open: false,
    kernelMajor: null,
    kernelMinor: null,
    dmPath: null,
    createdAtMs: null,
    tags: [],
  });
  const quarantine = {
    listQuarantined: (scope: { vgNames: readonly string[] }) => {
      scopes.push(scope.vgNames);
      return Promise.resolve({
        lvs: [
          lv('vg0', `lvstamp_q_${'a'.repeat(32)}`, GIB),
          // thin (every snapshot is): a virtual size, never counted as bytes held
          lv('vg0', `lvstamp_qs_${'b'.repeat(32)}`, 2 * GIB, 'Vwi---tz--'),
          lv('vg0', `lvstamp_q_${'c'.repeat(32)}`, 5 * GIB, 'Vwi---tz--'),
          lv('vg0', `lvstamp_q_${'d'.repeat(32)}`, 2 * GIB),
        ],
        unusableGroups: [],
      });
    },
  };
  const metrics = new DriverMetrics({
    config: testConfig(),
    core: { volumes: core.volumes, quarantine },
  });
  const body = await metrics.registry.metrics();
  expect(body).toContain('lvstamp_quarantined{device_class="fast"} 4');
  expect(body).toContain('lvstamp_quarantined{device_class="secure"} 0');
  expect(body).toContain(`lvstamp_quarantined_bytes{device_class="fast"} ${3 * GIB}`);
  expect(body).toContain('lvstamp_quarantined_bytes{device_class="secure"} 0');
  // Only the configured groups are looked in (DESIGN.md §2.3).
  expect(scopes.every((s) => [...s].sort().join(',') === 'vg0,vg1')).toBe(true);
});
