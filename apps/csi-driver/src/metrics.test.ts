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
