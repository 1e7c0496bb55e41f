import { readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';

/**
 * True when this host can activate LVM volumes: `/dev/mapper/control`
 * exists, the kernel lists `device-mapper` in /proc/misc or /proc/devices,
 * and we are root. The same rule as scripts/run-e2e.sh.
 */
export async function hasDeviceMapperAndRoot(): Promise<boolean> {
  if (process.getuid?.() !== 0 || !existsSync('/dev/mapper/control')) return false;
  for (const file of ['/proc/misc', '/proc/devices']) {
    const text = await readFile(file, 'utf8').catch(() => '');
    if (/\bdevice-mapper\b/.test(text)) return true;
  }
  return false;
}
