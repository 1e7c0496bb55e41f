import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  dataDeviceRejectPatterns,
  globalFilterLine,
  LOOP_REJECT_PATTERN,
} from './device-filter.js';

const REPO = fileURLToPath(new URL('../../../../', import.meta.url));
const read = (path: string) => readFile(`${REPO}${path}`, 'utf8');

describe('the device filter lvstamp ships', () => {
  it('rejects each name of a data device and, for real-disk nodes, every loop device', () => {
    expect(dataDeviceRejectPatterns()).toEqual([
      'r|^/dev/mapper/lvstamp-|',
      'r|^/dev/disk/by-id/dm-name-lvstamp-|',
      'r|^/dev/disk/by-id/dm-uuid-LVSTAMP-|',
    ]);
    expect(globalFilterLine({ rejectLoops: true })).toBe(
      'global_filter = [ "r|^/dev/mapper/lvstamp-|", "r|^/dev/disk/by-id/dm-name-lvstamp-|", "r|^/dev/disk/by-id/dm-uuid-LVSTAMP-|", "r|^/dev/loop[0-9]|" ]',
    );
    expect(globalFilterLine({ rejectLoops: false })).not.toContain(LOOP_REJECT_PATTERN);
  });

  it('has no accept pattern: a device is hidden when any of its names is rejected', () => {
    for (const rejectLoops of [true, false]) {
      expect(globalFilterLine({ rejectLoops })).not.toMatch(/"a\|/);
    }
  });

  it('is the one in the node plugin ConfigMap and image, with scan_lvs = 0', async () => {
    const line = globalFilterLine({ rejectLoops: true });
    const configMap = await read('deploy/kubernetes/configmap-lvm.yaml');
    expect(configMap).toContain(line);
    expect(configMap).toMatch(/^\s+scan_lvs = 0$/m);
    const dockerfile = await read('apps/csi-driver/Dockerfile');
    expect(dockerfile).toContain(`'${line}'`);
    expect(dockerfile).toContain('scan_lvs = 0');
  });

  it('is the one of the test VM (and the demo in it) without the loop rule', async () => {
    const stage2 = await read('test-e2e/vm/stage2.sh');
    expect(stage2).toContain(`'${globalFilterLine({ rejectLoops: false })}'`);
    expect(stage2).toContain('scan_lvs = 0');
  });
});
