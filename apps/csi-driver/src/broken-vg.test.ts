// A broken volume group (docs/LVM-CONFIG.md): capacity 0 with the reason in the log and a
// metric, RESOURCE_EXHAUSTED with lvm's whole message for CreateVolume, an abnormal volume
// condition, and Probe still ready.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CommandFailedError, classifyLvmFailure, IoTimeoutError } from '@lvstamp/core';
import { DriverMetrics } from './metrics.js';
import {
  failureOf,
  FakeCore,
  GIB,
  OWNER_ID,
  startHarness,
  testConfig,
  type Harness,
} from './testing/harness.js';

// lvm2 2.03.16's lvcreate on a group with a PV removed (test-e2e/recorded/lvcreate-missing-pv).
const MISSING_PV_STDERR = `  WARNING: Couldn't find device with uuid uoW5Bd-wRrK-ST8d-SgBF-MwY0-U4aa-RVu9lK.
  WARNING: VG vg0 is missing PV uoW5Bd-wRrK-ST8d-SgBF-MwY0-U4aa-RVu9lK (last written to /dev/loop2).
  Cannot change VG vg0 while PVs are missing.
  See vgreduce --removemissing and vgextend --restoremissing.
  Cannot process volume group vg0
`;
const missingPv = () =>
  classifyLvmFailure(
    'vg0',
    new CommandFailedError({
      argv: ['lvcreate'],
      exitCode: 5,
      stdout: '',
      stderr: MISSING_PV_STDERR,
    }),
  ) as Error;
const WHOLE_MESSAGE =
  "volume group vg0 is unusable (missing-pv): WARNING: Couldn't find device with uuid uoW5Bd-wRrK-ST8d-SgBF-MwY0-U4aa-RVu9lK. | WARNING: VG vg0 is missing PV uoW5Bd-wRrK-ST8d-SgBF-MwY0-U4aa-RVu9lK (last written to /dev/loop2). | Cannot change VG vg0 while PVs are missing. | See vgreduce --removemissing and vgextend --restoremissing. | Cannot process volume group vg0";

let h: Harness;
let metrics: DriverMetrics;
beforeEach(async () => {
  const core = new FakeCore();
  metrics = new DriverMetrics({ config: testConfig(), core });
  h = await startHarness({ core, metrics });
});
afterEach(async () => {
  await h.close();
});

const unusableGauge = async () =>
  (await metrics.registry.getSingleMetricAsString('lvstamp_volume_group_unusable'))
    .split('\n')
    .filter((line) => line.startsWith('lvstamp_volume_group_unusable{'));

describe('a broken volume group', () => {
  it('GetCapacity: 0 for its class, the reason in the log and the metric; 0 again when repaired', async () => {
    h.core.failNext.set('capacity', missingPv());
    const broken = await h.call('Controller', 'GetCapacity', { parameters: {} });
    expect(broken).toMatchObject({ available_capacity: '0', maximum_volume_size: { value: '0' } });
    const warning = h.logs.lines.find(
      (l) => l.msg === 'volume group unusable: its device class reports 0 capacity',
    );
    expect(warning).toMatchObject({
      deviceClass: 'fast',
      volumeGroup: 'vg0',
      problem: 'missing-pv',
    });
    expect(String(warning?.message)).toContain('Cannot change VG vg0 while PVs are missing.');
    expect(await unusableGauge()).toContain(
      'lvstamp_volume_group_unusable{device_class="fast",volume_group="vg0",problem="missing-pv"} 1',
    );
    expect(await unusableGauge()).toContain(
      'lvstamp_volume_group_unusable{device_class="fast",volume_group="vg0",problem="duplicate-pv"} 0',
    );

    const repaired = await h.call('Controller', 'GetCapacity', { parameters: {} });
    expect(repaired.available_capacity).toBe(String(8 * GIB));
    expect(await unusableGauge()).toContain(
      'lvstamp_volume_group_unusable{device_class="fast",volume_group="vg0",problem="missing-pv"} 0',
    );
  });

  it("CreateVolume: RESOURCE_EXHAUSTED with lvm's whole message (the provisioner reschedules)", async () => {
    h.core.failNext.set('create', missingPv());
    const failure = await failureOf(
      h.call('Controller', 'CreateVolume', {
        name: 'pvc-1',
        volume_capabilities: [
          { mount: { fs_type: 'ext4' }, access_mode: { mode: 'SINGLE_NODE_WRITER' } },
        ],
      }),
    );
    expect(failure).toEqual({ code: 'RESOURCE_EXHAUSTED', details: WHOLE_MESSAGE });
  });

  it('NodeGetVolumeStats: the volume condition is abnormal with the reason', async () => {
    const volume = h.core.add('pvc-1', GIB);
    await h.core.volumes.attach(volume.volumeId, { vgNames: ['vg0'], ownerId: OWNER_ID });
    h.paths.kinds.set('/var/lib/kubelet/dev/pvc-1', 'block-device');
    // the published node of its data device (the fake attaches it as 253:7)
    h.paths.devices.set('/var/lib/kubelet/dev/pvc-1', { major: 253, minor: 7 });
    h.core.failNext.set('capacity', missingPv());
    const response = await h.call('Node', 'NodeGetVolumeStats', {
      volume_id: volume.volumeId,
      volume_path: '/var/lib/kubelet/dev/pvc-1',
    });
    expect(response.volume_condition).toEqual({ abnormal: true, message: missingPv().message });
  });

  it('Probe stays ready: restarting the driver heals no disk', async () => {
    h.core.failNext.set('capacity', missingPv());
    await h.call('Controller', 'GetCapacity', { parameters: {} });
    expect(await h.call('Identity', 'Probe', {})).toEqual({ ready: { value: true } });
  });
});

describe('a device that does not answer', () => {
  it('DEADLINE_EXCEEDED naming the device', async () => {
    h.core.failNext.set(
      'create',
      new IoTimeoutError('/dev/mapper/vg0-lvstamp_new_x', 'write', 60_000),
    );
    const failure = await failureOf(
      h.call('Controller', 'CreateVolume', {
        name: 'pvc-2',
        volume_capabilities: [
          { mount: { fs_type: 'ext4' }, access_mode: { mode: 'SINGLE_NODE_WRITER' } },
        ],
      }),
    );
    expect(failure).toEqual({
      code: 'DEADLINE_EXCEEDED',
      details:
        'write of /dev/mapper/vg0-lvstamp_new_x did not finish within 60000 ms: the device does not answer',
    });
  });
});
