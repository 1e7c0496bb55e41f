import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { describeDeviceUsers, deviceUsersText, findDeviceUsers } from './holders.js';

let root: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'lvstamp-holders-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

async function put(path: string, text: string): Promise<void> {
  await mkdir(dirname(join(root, path)), { recursive: true });
  await writeFile(join(root, path), text);
}

/** A block device as sysfs shows it: /sys/dev/block/M:m → ../../block/<name>, dev, dm/name, holders/. */
async function blockDevice(name: string, dev: string, dmName: string | null, holders: string[]) {
  await mkdir(join(root, 'sys/dev/block'), { recursive: true });
  await symlink(`../../block/${name}`, join(root, 'sys/dev/block', dev));
  await put(`sys/block/${name}/dev`, `${dev}\n`);
  if (dmName !== null) await put(`sys/block/${name}/dm/name`, `${dmName}\n`);
  await mkdir(join(root, 'sys/block', name, 'holders'), { recursive: true });
  for (const h of holders) {
    await symlink(`../../${h}`, join(root, 'sys/block', name, 'holders', h));
  }
}

const MOUNTINFO = [
  '22 1 0:21 / /proc rw,nosuid - proc proc rw',
  '97 22 253:5 / /var/lib/kubelet/plugins/kubernetes.io/csi/lvstamp.io/abc/globalmount rw,relatime shared:50 - ext4 /dev/mapper/lvstamp-abc rw',
  '98 22 253:5 / /var/lib/kubelet/pods/p1/volumes/kubernetes.io~csi/pvc-1/mount rw,relatime shared:50 - ext4 /dev/mapper/lvstamp-abc rw',
  '99 22 7:3 / /mnt/other rw - ext4 /dev/loop3 rw',
  '',
].join('\n');

describe('findDeviceUsers', () => {
  it('names the holders (device-mapper names, holders of holders) and their mounts', async () => {
    await blockDevice('dm-3', '253:3', 'vg--data-lvstamp_abc', ['dm-5']);
    await blockDevice('dm-5', '253:5', 'lvstamp-abc', ['dm-9']);
    await blockDevice('dm-9', '253:9', 'tenant-crypt', []);
    await put('proc/self/mountinfo', MOUNTINFO);

    const users = await findDeviceUsers({ major: 253, minor: 3 }, { hostRoot: root });
    expect(users).toEqual({
      device: '253:3',
      kernelName: 'dm-3',
      holders: [
        { kernelName: 'dm-5', dmName: 'lvstamp-abc', device: '253:5', holds: 'dm-3' },
        { kernelName: 'dm-9', dmName: 'tenant-crypt', device: '253:9', holds: 'dm-5' },
      ],
      mounts: [
        {
          kernelName: 'dm-5',
          mountPoint: '/var/lib/kubelet/plugins/kubernetes.io/csi/lvstamp.io/abc/globalmount',
          fsType: 'ext4',
        },
        {
          kernelName: 'dm-5',
          mountPoint: '/var/lib/kubelet/pods/p1/volumes/kubernetes.io~csi/pvc-1/mount',
          fsType: 'ext4',
        },
      ],
    });
    expect(describeDeviceUsers(users)).toBe(
      'held by dm-5 (lvstamp-abc), dm-9 (tenant-crypt) on dm-5; mounted: ' +
        'dm-5 on /var/lib/kubelet/plugins/kubernetes.io/csi/lvstamp.io/abc/globalmount (ext4), ' +
        'dm-5 on /var/lib/kubelet/pods/p1/volumes/kubernetes.io~csi/pvc-1/mount (ext4)',
    );
  });

  it('reports the mounts of the device itself and a loop device holder without a dm name', async () => {
    await blockDevice('dm-5', '253:5', 'lvstamp-abc', ['loop3']);
    await blockDevice('loop3', '7:3', null, []);
    await put('proc/self/mountinfo', MOUNTINFO);
    expect(await deviceUsersText({ major: 253, minor: 5 }, { hostRoot: root })).toBe(
      'held by loop3; mounted: ' +
        'dm-5 on /var/lib/kubelet/plugins/kubernetes.io/csi/lvstamp.io/abc/globalmount (ext4), ' +
        'dm-5 on /var/lib/kubelet/pods/p1/volumes/kubernetes.io~csi/pvc-1/mount (ext4), ' +
        'loop3 on /mnt/other (ext4)',
    );
  });

  it('never throws: a device unknown to sysfs and no mount table say so', async () => {
    const users = await findDeviceUsers({ major: 253, minor: 77 }, { hostRoot: root });
    expect(users).toEqual({ device: '253:77', kernelName: null, holders: [], mounts: [] });
    expect(describeDeviceUsers(users)).toBe(
      'no holder or mount of 253:77 found in sysfs or mountinfo: a process may hold it open (fuser -v on its device)',
    );
  });

  it('a known device with no holder or mount: names the fuser command that finds the process', () => {
    expect(
      describeDeviceUsers({ device: '253:7', kernelName: 'dm-7', holders: [], mounts: [] }),
    ).toBe(
      'no holder or mount of dm-7 found in sysfs or mountinfo: a process may hold it open (fuser -v /dev/dm-7)',
    );
  });

  it('stops at a holder loop', async () => {
    await blockDevice('dm-1', '253:1', 'a', ['dm-2']);
    await blockDevice('dm-2', '253:2', 'b', ['dm-1']);
    const users = await findDeviceUsers({ major: 253, minor: 1 }, { hostRoot: root });
    expect(users.holders.map((h) => h.kernelName)).toEqual(['dm-2']);
  });
});
