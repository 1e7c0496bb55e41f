import { describe, expect, it } from 'vitest';
import type { DataDeviceManager } from '../device/data-device.js';
import { FailedPreconditionError, InvalidArgumentError, NotOwnedError } from '../errors.js';
import type { DecodeResult } from '../header/types.js';
import type { LogicalVolume } from '../lvm/types.js';
import type { FilesystemManager } from '../fs/filesystem.js';
import type { HeaderIo } from './header-io.js';
import type { Lvm } from '../lvm/lvm.js';
import type { CommandRunner } from '../exec/runner.js';
import { NoopHostLock } from '../lock/host-lock.js';
import { lvNameFor, volumeIdForName } from '../naming.js';
import { VolumeService } from './service.js';
import { caught } from '../testing/caught.js';

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
  /** The finished LV under the map (254:0, held open by it), tagged for `owner`. */
  const lv = (owner: string, open: boolean): LogicalVolume => ({
    vgName: 'vg0',
    lvName: `lvstamp_${id}`,
    lvUuid: 'hl96uF-aaaa-bbbb-cccc-dddd-eeee-ffffff',
    sizeBytes: 12 * 1024 * 1024,
    attr: open ? '-wi-ao----' : '-wi-a-----',
    active: true,
    open,
    kernelMajor: 254,
    kernelMinor: 0,
    dmPath: `/dev/mapper/vg0-lvstamp_${id}`,
    createdAtMs: 1_700_000_000_000,
    tags: ['lvstamp', `lvstamp.owner=${owner}`],
  });
  /** A valid v2 header of volume `id` for `owner`. */
  const okHeaderFor = (owner: string): DecodeResult => ({
    status: 'ok',
    version: 2,
    header: {
      volumeId: id,
      ownerId: owner,
      createdAtMs: 1_700_000_000_000,
      dataOffsetBytes: 1024 * 1024,
      requestedBytes: 8 * 1024 * 1024,
      name: 'pvc-a',
    },
  });
  function service(
    mountedOn: string[],
    events: string[],
    lookups: LogicalVolume[][] = [[]],
    headers = new Map<string, DecodeResult>(),
    targetPresent = false,
  ): VolumeService {
    return new VolumeService({
      lvm: {
        logicalVolumes: {
          inGroups: () => {
            events.push('lvm look-up');
            return Promise.resolve({
              groups: [],
              lvs: lookups.shift() ?? [],
              stderr: '',
              pvs: new Map(),
              sharedListed: true,
            });
          },
          remove: (vgName: string, lvName: string) => {
            events.push(`lvremove ${vgName}/${lvName}`);
            return Promise.resolve();
          },
        },
        // The group's state is the lvm module's to judge (its own tests); healthy here.
        volumeGroups: { usable: (vgName: string) => Promise.resolve({ name: vgName }) },
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
        targetOf: (volumeId: string) => {
          events.push(`targetOf ${volumeId}`);
          return Promise.resolve({ device: { major: 254, minor: 0 }, present: targetPresent });
        },
      } as unknown as DataDeviceManager,
      headers: {
        readHeader: (path: string) =>
          Promise.resolve(headers.get(path) ?? { status: 'not-stamped', reason: 'no magic' }),
      } as unknown as HeaderIo,
      filesystems: {
        mounts: () =>
          Promise.resolve(mountedOn.map((mountPoint) => ({ mountPoint, major: 254, minor: 1 }))),
      } as unknown as FilesystemManager,
    });
  }

  it('removes a data device it finds (sysfs) whose LV is gone; existed', async () => {
    const events: string[] = [];
    const result = await service([], events).delete(id, {
      vgNames: ['vg0'],
      ownerId: 'a'.repeat(32),
    });
    expect(events).toEqual([`find ${id}`, 'lvm look-up', `targetOf ${id}`, `remove ${id}`]);
    expect(result).toEqual({ existed: true, removed: [] });
  });

  it('refuses, touching nothing, a data device whose LV is outside the scope but whose target still exists', async () => {
    const events: string[] = [];
    const error = await caught(
      service([], events, [[]], new Map(), true).delete(id, {
        vgNames: ['tv2'],
        ownerId: 'a'.repeat(32),
      }),
    );
    expect(error).toBeInstanceOf(FailedPreconditionError);
    expect(error).not.toBeInstanceOf(NotOwnedError);
    expect((error as Error).message).toBe(
      `data device lvstamp-${id} targets 254:0, a device outside the volume groups tv2 (no LV of volume ${id} there); name the volume group that holds its LV; left untouched`,
    );
    expect(events).toEqual([`find ${id}`, 'lvm look-up', `targetOf ${id}`]);
  });

  it('refuses another owner’s volume with its data device still in place (no side effect)', async () => {
    const events: string[] = [];
    await expect(
      service([], events, [[lv('b'.repeat(32), true)]]).delete(id, {
        vgNames: ['vg0'],
        ownerId: 'a'.repeat(32),
      }),
    ).rejects.toBeInstanceOf(NotOwnedError);
    expect(events).toEqual([`find ${id}`, 'lvm look-up']);
  });

  it('removes the data device only after the checks, then looks again: an LV still open is refused', async () => {
    const events: string[] = [];
    const owner = 'a'.repeat(32);
    const headers = new Map([[lv(owner, true).dmPath ?? '', okHeaderFor(owner)]]);
    await expect(
      service([], events, [[lv(owner, true)], [lv(owner, true)]], headers).delete(id, {
        vgNames: ['vg0'],
        ownerId: owner,
      }),
    ).rejects.toThrow(/unmount and detach it first/);
    expect(events).toEqual([`find ${id}`, 'lvm look-up', `remove ${id}`, 'lvm look-up']);
  });

  it('removes the data device, then the LV no longer open', async () => {
    const events: string[] = [];
    const owner = 'a'.repeat(32);
    const headers = new Map([[lv(owner, true).dmPath ?? '', okHeaderFor(owner)]]);
    const result = await service(
      [],
      events,
      [[lv(owner, true)], [lv(owner, false)]],
      headers,
    ).delete(id, { vgNames: ['vg0'], ownerId: owner });
    expect(events).toEqual([
      `find ${id}`,
      'lvm look-up',
      `remove ${id}`,
      'lvm look-up',
      `lvremove vg0/lvstamp_${id}`,
    ]);
    expect(result).toEqual({ existed: true, removed: [`vg0/lvstamp_${id}`] });
  });

  it('detach with a scope refuses, touching nothing, a data device whose volume is not in the scope while its target exists', async () => {
    const events: string[] = [];
    await expect(
      service([], events, [[]], new Map(), true).detach(id, { vgNames: ['tv2'] }),
    ).rejects.toThrow(
      new FailedPreconditionError(
        `data device lvstamp-${id} targets 254:0, a device outside the volume groups tv2 (no LV of volume ${id} there); name the volume group that holds its LV; left untouched`,
      ),
    );
    expect(events).toEqual([`find ${id}`, 'lvm look-up', `targetOf ${id}`]);
  });

  it('detach with a scope removes a data device whose LV is gone (its target gone too)', async () => {
    const events: string[] = [];
    expect(await service([], events).detach(id, { vgNames: ['tv2'] })).toEqual({ removed: true });
    expect(events).toEqual([`find ${id}`, 'lvm look-up', `targetOf ${id}`, `remove ${id}`]);
  });

  it('detach with a scope removes the data device of a volume in the scope, its target unread', async () => {
    const events: string[] = [];
    const owner = 'a'.repeat(32);
    expect(
      await service([], events, [[lv(owner, true)]], new Map(), true).detach(id, {
        vgNames: ['vg0'],
      }),
    ).toEqual({ removed: true });
    expect(events).toEqual([`find ${id}`, 'lvm look-up', `remove ${id}`]);
  });

  it('refuses a mounted data device before any lvm command', async () => {
    const events: string[] = [];
    await expect(
      service(['/mnt/x'], events).delete(id, { vgNames: ['vg0'], ownerId: 'a'.repeat(32) }),
    ).rejects.toThrow(/is mounted on \/mnt\/x; unmount it first/);
    expect(events).toEqual([`find ${id}`]);
  });
});
