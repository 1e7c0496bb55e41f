import { describe, expect, it } from 'vitest';
import type { DataDeviceManager } from '../device/data-device.js';
import { InvalidArgumentError } from '../errors.js';
import type { FilesystemManager } from '../fs/filesystem.js';
import type { HeaderIo } from './header-io.js';
import type { Lvm } from '../lvm/lvm.js';
import type { CommandRunner } from '../exec/runner.js';
import { NoopHostLock } from '../lock/host-lock.js';
import { lvNameFor, volumeIdForName } from '../naming.js';
import { VolumeService } from './service.js';

/** A VolumeService whose lvm knows exactly these volumes (active, in vg0). */
function serviceWith(existingIds: readonly string[]): VolumeService {
  const lvm = {
    logicalVolumes: {
      inGroups: (_vgNames: readonly string[], filter: { names: readonly string[] }) =>
        Promise.resolve({
          groups: [],
          lvs: existingIds
            .map((id) => lvNameFor(id))
            .filter((name) => filter.names.includes(name))
            .map((lvName) => ({ vgName: 'vg0', lvName, active: false, kernelMajor: null })),
        }),
    },
  } as unknown as Lvm;
  return new VolumeService({
    lvm,
    runner: {} as CommandRunner,
    hostLock: new NoopHostLock(),
    dataDevices: {} as unknown as DataDeviceManager,
    headers: {} as HeaderIo,
    filesystems: {} as unknown as FilesystemManager,
  });
}

const SCOPE = { vgNames: ['vg0'] };

describe('VolumeService.resolve', () => {
  const idLike = '2e7d2c03a9507ae265ecf5b5356885a5';

  it('derives the ID of a plain name without asking lvm', async () => {
    expect(await serviceWith([]).resolve('pvc-a', SCOPE)).toBe(volumeIdForName('pvc-a'));
  });

  it('takes an existing volume ID as that volume', async () => {
    expect(await serviceWith([idLike]).resolve(idLike, SCOPE)).toBe(idLike);
  });

  it('takes a 32-hex ref that is only a name as the name', async () => {
    expect(await serviceWith([volumeIdForName(idLike)]).resolve(idLike, SCOPE)).toBe(
      volumeIdForName(idLike),
    );
    expect(await serviceWith([]).resolve(idLike, SCOPE)).toBe(volumeIdForName(idLike));
  });

  it('refuses a ref that is both an existing ID and the name of another volume', async () => {
    await expect(
      serviceWith([idLike, volumeIdForName(idLike)]).resolve(idLike, SCOPE),
    ).rejects.toThrow(InvalidArgumentError);
  });

  it('refuses an invalid name', async () => {
    await expect(serviceWith([]).resolve('', SCOPE)).rejects.toThrow(InvalidArgumentError);
  });
});

describe('VolumeService.delete', () => {
  it('refuses a malformed owner ID before it looks at or removes the data device', async () => {
    const touched: string[] = [];
    const service = new VolumeService({
      lvm: {} as unknown as Lvm,
      runner: {} as CommandRunner,
      hostLock: new NoopHostLock(),
      dataDevices: {
        list: () => {
          touched.push('list');
          return Promise.resolve([]);
        },
        remove: () => {
          touched.push('remove');
          return Promise.resolve();
        },
      } as unknown as DataDeviceManager,
      headers: {} as HeaderIo,
      filesystems: {} as unknown as FilesystemManager,
    });
    await expect(
      service.delete(volumeIdForName('pvc-a'), { vgNames: ['vg0'], ownerId: 'xyz' }),
    ).rejects.toThrow(new InvalidArgumentError('owner ID must be 32 hex digits, got "xyz"'));
    expect(touched).toEqual([]);
  });
});

describe('VolumeService.delete: the data device', () => {
  const id = volumeIdForName('pvc-a');
  const map = { volumeId: id, name: `lvstamp-${id}`, major: 254, minor: 1 };
  function service(mountedOn: string[], events: string[]): VolumeService {
    return new VolumeService({
      lvm: {
        logicalVolumes: {
          inGroups: () => {
            events.push('lvm look-up');
            return Promise.resolve({ groups: [], lvs: [], vgsStderr: '' });
          },
        },
      } as unknown as Lvm,
      runner: {} as CommandRunner,
      hostLock: new NoopHostLock(),
      dataDevices: {
        find: (volumeId: string) => {
          events.push(`find ${volumeId}`);
          return Promise.resolve(map);
        },
        remove: (volumeId: string) => {
          events.push(`remove ${volumeId}`);
          return Promise.resolve();
        },
      } as unknown as DataDeviceManager,
      headers: {} as HeaderIo,
      filesystems: {
        mounts: () =>
          Promise.resolve(mountedOn.map((mountPoint) => ({ mountPoint, major: 254, minor: 1 }))),
      } as unknown as FilesystemManager,
    });
  }

  it('removes a data device it finds (sysfs) before looking for the LVs; existed', async () => {
    const events: string[] = [];
    const result = await service([], events).delete(id, {
      vgNames: ['vg0'],
      ownerId: 'a'.repeat(32),
    });
    expect(events).toEqual([`find ${id}`, `remove ${id}`, 'lvm look-up']);
    expect(result).toEqual({ existed: true, removed: [] });
  });

  it('refuses a mounted data device before any lvm command', async () => {
    const events: string[] = [];
    await expect(
      service(['/mnt/x'], events).delete(id, { vgNames: ['vg0'], ownerId: 'a'.repeat(32) }),
    ).rejects.toThrow(/is mounted on \/mnt\/x; unmount it first/);
    expect(events).toEqual([`find ${id}`]);
  });
});
