import { hasDeviceMapperAndRoot } from './environment.js';
import { sh } from './sh.js';
import { TEST_VG_PREFIX } from './loop-vg.js';

const TOOLS = ['lvm', 'dmsetup', 'losetup', 'blkid', 'mkfs.ext4', 'mkfs.xfs', 'mount', 'umount'];

/**
 * vitest global setup of the e2e suite: fails the run (never skips) when the
 * host lacks device-mapper, root or a tool; after the run, fails it when a
 * test VG (`lvse2e…`) is left behind.
 * @throws Error naming the missing prerequisite or the leftover VGs.
 */
export default async function setup(): Promise<() => Promise<void>> {
  if (!(await hasDeviceMapperAndRoot())) {
    throw new Error('e2e: needs root and device-mapper; run it through scripts/run-e2e.sh');
  }
  for (const tool of TOOLS) {
    const found = await sh(['sh', '-c', `command -v ${tool}`]);
    if (found.exitCode !== 0) throw new Error(`e2e: required tool ${tool} is missing`);
  }
  const before = await testVgs();
  if (before.length > 0) {
    console.warn(`e2e: volume groups left by an earlier run (not touched): ${before.join(' ')}`);
  }
  return async () => {
    const left = (await testVgs()).filter((vg) => !before.includes(vg));
    if (left.length > 0) throw new Error(`e2e: test volume groups left behind: ${left.join(' ')}`);
  };
}

async function testVgs(): Promise<string[]> {
  const result = await sh(['vgs', '--noheadings', '-o', 'vg_name']);
  if (result.exitCode !== 0) throw new Error(`vgs exited ${result.exitCode}: ${result.stderr}`);
  return result.stdout
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.startsWith(TEST_VG_PREFIX));
}
