// Online resize of a mounted ext4 and xfs,
// and the header in sector 0 surviving mkfs and a full write of the data
// device (DESIGN.md §4: the data area starts 1 MiB behind the header).
import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLoopVg, installCleanupHooks, sh, shOk } from '../harness/index.js';
import {
  DATA_OFFSET,
  MiB,
  cli,
  cliJson,
  deviceBytes,
  formatAndMount,
  idOf,
  lvRow,
  okHeaderOnDisk,
  readBytes,
  suffix,
  type InspectJson,
} from './support.js';

installCleanupHooks();

/** Size of the filesystem mounted at `mountPoint` in bytes, as df(1) reports it. */
async function dfBytes(mountPoint: string): Promise<number> {
  const df = await shOk(['df', '-B1', '--output=size', mountPoint]);
  return Number(df.stdout.trim().split('\n')[1]);
}

/**
 * Cases: mkfs.xfs refuses filesystems below 300 MiB (xfsprogs 6.1), hence the larger xfs volume.
 * Capacities are exactly the sizes asked for; LVs hold 1 MiB more, rounded up to 4 MiB extents.
 */
const RESIZE_CASES = [
  {
    fsType: 'ext4',
    size: '64Mi',
    capacity: 64 * MiB,
    grown: '160Mi',
    grownCapacity: 160 * MiB,
    grownLv: 164 * MiB,
  },
  {
    fsType: 'xfs',
    size: '300Mi',
    capacity: 300 * MiB,
    grown: '400Mi',
    grownCapacity: 400 * MiB,
    grownLv: 404 * MiB,
  },
] as const;

describe('online resize of a mounted filesystem (and mkfs leaves the header alone)', () => {
  it.each(RESIZE_CASES)(
    '$fsType: mkfs keeps the header; $size -> $grown, df grows, data intact',
    async ({ fsType, size, capacity, grown, grownCapacity, grownLv }) => {
      const vg = await createLoopVg({ sizeBytes: 1024 * MiB });
      const name = `grow-${fsType}-${suffix()}`;
      const id = idOf(name);
      await cli(['create', name, '--size', size, '--vg', vg.vgName], 0);
      const lvPath = (await lvRow(vg.vgName, `lvstamp_${id}`)).lv_dm_path;
      const header = await okHeaderOnDisk(lvPath);
      const headerArea = await readBytes(lvPath, 0, DATA_OFFSET);
      const dataDevice = (await cli(['attach', name], 0)).stdout;
      expect(dataDevice).toBe(`/dev/mapper/lvstamp-${id}`);
      expect(await deviceBytes(dataDevice)).toBe(capacity);
      const mountPoint = await formatAndMount(dataDevice, fsType, vg.dir);
      // mkfs wrote the data area only (XFS puts its superblock in its sector 0)
      expect((await readBytes(lvPath, 0, DATA_OFFSET)).equals(headerArea)).toBe(true);
      expect(await okHeaderOnDisk(lvPath)).toEqual(header);
      if (fsType === 'xfs')
        expect((await readBytes(dataDevice, 0, 4)).toString('latin1')).toBe('XFSB');
      const payload = randomBytes(3 * MiB);
      await writeFile(join(mountPoint, 'payload.bin'), payload);
      await shOk(['sync', '-f', join(mountPoint, 'payload.bin')]);
      const dfBefore = await dfBytes(mountPoint);

      const resized = await cli(['resize', name, '--size', grown], 0);
      expect(resized.stdout).toBe(
        `${name}: capacity ${grownCapacity / MiB} MiB; filesystem on ${mountPoint} grown`,
      );
      expect((await lvRow(vg.vgName, `lvstamp_${id}`)).lv_size).toBe(String(grownLv));
      expect(await deviceBytes(dataDevice)).toBe(grownCapacity);
      const dfAfter = await dfBytes(mountPoint);
      // the filesystem grew by (nearly) all of the added capacity
      expect(dfAfter - dfBefore).toBeGreaterThan(0.9 * (grownCapacity - capacity));
      expect((await readFile(join(mountPoint, 'payload.bin'))).equals(payload)).toBe(true);
      const mounted = await shOk(['findmnt', '-n', '-o', 'SOURCE,FSTYPE', mountPoint]);
      expect(mounted.stdout.trim().split(/\s+/)).toEqual([dataDevice, fsType]);
      // after the resize, inspect (through the CLI) reads the same header with the new capacity
      expect((await cliJson<InspectJson>(['inspect', name])).decode).toEqual({
        status: 'ok',
        version: 2,
        header: { ...header, requestedBytes: grownCapacity },
      });
    },
  );
});

describe('the header survives what users do to the data device', () => {
  it('mkfs.ext4, then writing every byte of the data area with dd: inspect still ok with the same fields', async () => {
    const vg = await createLoopVg({ sizeBytes: 256 * MiB });
    const name = `survive-ext4-${suffix()}`;
    const id = idOf(name);
    await cli(['create', name, '--size', '32Mi', '--vg', vg.vgName], 0);
    const lv = await lvRow(vg.vgName, `lvstamp_${id}`);
    const before = await cliJson<InspectJson>(['inspect', name]);
    expect(before.decode.status).toBe('ok');
    const headerArea = await readBytes(lv.lv_dm_path, 0, DATA_OFFSET);

    const dataDevice = (await cli(['attach', name], 0)).stdout;
    const capacity = 32 * MiB; // exactly as asked; 1 MiB + 32 MiB -> 36 MiB LV, 3 MiB slack
    expect(await deviceBytes(dataDevice)).toBe(capacity);
    await shOk(['mkfs.ext4', '-q', dataDevice]);
    expect((await shOk(['blkid', '-p', '-o', 'value', '-s', 'TYPE', dataDevice])).stdout).toBe(
      'ext4\n',
    );
    expect((await readBytes(lv.lv_dm_path, 0, DATA_OFFSET)).equals(headerArea)).toBe(true);

    // every byte of the data area, until the device ends
    const dd = await sh(
      ['dd', 'if=/dev/urandom', `of=${dataDevice}`, 'bs=1M', 'oflag=direct', 'status=none'],
      { timeoutMs: 300_000 },
    );
    expect(dd.exitCode).toBe(1);
    expect(dd.stderr).toBe(`dd: error writing '${dataDevice}': No space left on device\n`);
    // the data device is the LV behind the first MiB: its last MiB is the LV's MiB before the slack
    const lvTail = await readBytes(lv.lv_dm_path, DATA_OFFSET + capacity - MiB, MiB);
    expect((await readBytes(dataDevice, capacity - MiB, MiB)).equals(lvTail)).toBe(true);
    expect(
      (await readBytes(dataDevice, 0, 4096)).equals(
        await readBytes(lv.lv_dm_path, DATA_OFFSET, 4096),
      ),
    ).toBe(true);
    expect(lvTail.equals(Buffer.alloc(MiB))).toBe(false);
    // the extent slack behind the capacity is never mapped: dd did not reach it (fresh sparse VG)
    const slack = await readBytes(lv.lv_dm_path, DATA_OFFSET + capacity, 3 * MiB);
    expect(slack.equals(Buffer.alloc(3 * MiB))).toBe(true);

    const after = await cliJson<InspectJson>(['inspect', name]);
    expect(after.decode).toEqual(before.decode);
    expect((await readBytes(lv.lv_dm_path, 0, DATA_OFFSET)).equals(headerArea)).toBe(true);
  });
});
