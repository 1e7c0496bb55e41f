import { describe, expect, it } from 'vitest';
import { volumeIdForName } from '@lvstamp/core';
import { cycleArgv, NoDeviceMapperRunner, withoutDeviceMapper } from './command-cost.js';

describe('withoutDeviceMapper', () => {
  it('puts --driverloaded n after the lvm2 command name', () => {
    expect(withoutDeviceMapper(['lvremove', '--yes', 'vg/lv'])).toEqual([
      'lvremove',
      '--driverloaded',
      'n',
      '--yes',
      'vg/lv',
    ]);
    expect(withoutDeviceMapper(['vgcreate', '-s', '4194304b', 'vg', '/dev/loop0'])).toEqual([
      'vgcreate',
      '--driverloaded',
      'n',
      '-s',
      '4194304b',
      'vg',
      '/dev/loop0',
    ]);
  });

  it('puts it after `lvm fullreport`, not between lvm and its command', () => {
    expect(withoutDeviceMapper(['lvm', 'fullreport', '--reportformat', 'json'])).toEqual([
      'lvm',
      'fullreport',
      '--driverloaded',
      'n',
      '--reportformat',
      'json',
    ]);
  });

  it('leaves other programs alone', () => {
    expect(withoutDeviceMapper(['losetup', '--find', '--show', '/tmp/f'])).toEqual([
      'losetup',
      '--find',
      '--show',
      '/tmp/f',
    ]);
    expect(withoutDeviceMapper(['dmsetup', 'remove', 'x'])).toEqual(['dmsetup', 'remove', 'x']);
  });

  it('is what NoDeviceMapperRunner passes on, with the options', async () => {
    const seen: unknown[] = [];
    const runner = new NoDeviceMapperRunner({
      run: (argv, options) => {
        seen.push([argv, options]);
        return Promise.resolve({ argv, exitCode: 0, stdout: '', stderr: '' });
      },
    });
    await runner.run(['vgs', 'vg'], { timeoutMs: 5 });
    expect(seen).toEqual([[['vgs', '--driverloaded', 'n', 'vg'], { timeoutMs: 5 }]]);
  });
});

describe('cycleArgv', () => {
  const vg = { name: 'lvsbench0000abcd', extentBytes: 4 * 1024 * 1024 };

  it('in full mode is the driver argv: lvcreate activates, zeroes and wipes signatures', () => {
    const argv = cycleArgv(vg, 'v1', 'full');
    expect(argv.create).toContain('--activate');
    expect(argv.create[argv.create.indexOf('--activate') + 1]).toBe('y');
    expect(argv.create[argv.create.indexOf('--zero') + 1]).toBe('y');
    expect(argv.lookup.slice(0, 2)).toEqual(['lvm', 'fullreport']);
    const id = volumeIdForName('v1');
    expect(argv.rename).toEqual([
      'lvrename',
      '--config',
      'global/use_lvmlockd=0 devices/allow_changes_with_duplicate_pvs=0',
      '--yes',
      vg.name,
      `lvstamp_new_${id}`,
      `lvstamp_${id}`,
    ]);
    expect(argv.remove).toEqual(['lvremove', '--yes', `${vg.name}/lvstamp_${id}`]);
  });

  it('in metadata-only mode never activates, zeroes or wipes', () => {
    const { create } = cycleArgv(vg, 'v1', 'metadata-only');
    expect(create[create.indexOf('--activate') + 1]).toBe('n');
    expect(create[create.indexOf('--zero') + 1]).toBe('n');
    expect(create[create.indexOf('--wipesignatures') + 1]).toBe('n');
  });
});
