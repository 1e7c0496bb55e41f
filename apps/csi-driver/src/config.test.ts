import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '@lvstamp/core';
import { configuredVolumeGroups, parseConfig, wipePolicyFor } from './config.js';
import { CONFIG_YAML } from './testing/harness.js';

describe('parseConfig', () => {
  it('reads device classes with defaults', () => {
    const config = parseConfig(CONFIG_YAML);
    expect(config.defaultClass).toEqual({
      name: 'fast',
      volumeGroup: 'vg0',
      wipe: 'discard',
      default: true,
      fsTypes: ['ext4', 'xfs'],
    });
    expect(config.deviceClasses.get('secure')).toEqual({
      name: 'secure',
      volumeGroup: 'vg1',
      wipe: 'zero',
      default: false,
      fsTypes: ['xfs'],
    });
    expect(config.defaultCapacityBytes).toBe(1024 ** 3);
    expect(configuredVolumeGroups(config)).toEqual(['vg0', 'vg1']);
  });

  it.each([
    ['deviceClasses: [', 'c.yaml: not valid YAML'],
    ['{}', 'c.yaml: deviceClasses: deviceClasses is required'],
    ['deviceClasses: {}', 'c.yaml: deviceClasses: name at least one device class'],
    [
      'deviceClasses: { a: { volumeGroup: vg0, wipe: none } }',
      'c.yaml: deviceClasses: exactly one device class must have default: true (none has)',
    ],
    [
      'deviceClasses: { a: { volumeGroup: vg0, wipe: none, default: true }, b: { volumeGroup: vg1, wipe: none, default: true } }',
      'c.yaml: deviceClasses: exactly one device class must have default: true (a, b have)',
    ],
    [
      'deviceClasses: { a: { volumeGroup: vg0, wipe: shred, default: true } }',
      'c.yaml: deviceClasses.a.wipe: wipe must be one of none, discard, zero',
    ],
    [
      'deviceClasses: { a: { wipe: none, default: true } }',
      'c.yaml: deviceClasses.a.volumeGroup: volumeGroup is required',
    ],
    [
      'deviceClasses: { a: { volumeGroup: "-bad", wipe: none, default: true } }',
      'c.yaml: deviceClasses.a.volumeGroup: volumeGroup is not a valid volume group name',
    ],
    [
      `deviceClasses: { a: { volumeGroup: ${'v'.repeat(81)}, wipe: none, default: true } }`,
      `c.yaml: deviceClasses.a.volumeGroup: volume group name "${'v'.repeat(81)}" (81 bytes) is too long for lvstamp's LV names (44 bytes): lvm2 refuses an LV when VG name + LV name + 3 reaches 128 bytes (NAME_LEN); here 128; use at most 80 bytes, and at most 82 counting each "-" twice`,
    ],
    [
      `deviceClasses: { a: { volumeGroup: ${'v'.repeat(74)}-b-c-d, wipe: none, default: true } }`,
      "above the kernel's limit of 127 (DM_NAME_LEN 128 with the NUL)",
    ],
    [
      'deviceClasses: { a: { volumeGroup: vg0, wipe: none, default: true, fsTypes: [btrfs] } }',
      'c.yaml: deviceClasses.a.fsTypes.0: fsTypes entries must be ext4 or xfs',
    ],
    [
      'deviceClasses: { Bad_Name: { volumeGroup: vg0, wipe: none, default: true } }',
      'c.yaml: deviceClasses.Bad_Name: device class names are lowercase',
    ],
    [
      'deviceClasses: { a: { volumeGroup: vg0, wipe: none, default: true, size: 1 } }',
      'c.yaml: deviceClasses.a: Unrecognized key: "size"',
    ],
    [
      'deviceClasses: { a: { volumeGroup: vg0, wipe: none, default: true } }\ndefaultCapacityBytes: -5',
      'c.yaml: defaultCapacityBytes: defaultCapacityBytes must be positive',
    ],
  ])('explains %j', (text, message) => {
    let thrown: unknown;
    try {
      parseConfig(text, 'c.yaml');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(InvalidArgumentError);
    expect((thrown as Error).message).toContain(message);
  });

  it('accepts the longest volume group names lvm can hold lvstamp LVs in', () => {
    for (const vg of ['v'.repeat(80), `${'v'.repeat(76)}-b-c`]) {
      const config = parseConfig(
        `deviceClasses: { a: { volumeGroup: ${vg}, wipe: none, default: true } }`,
      );
      expect(config.defaultClass.volumeGroup).toBe(vg);
    }
  });

  it('picks the strongest wipe policy of the classes on a volume group', () => {
    const config = parseConfig(
      'deviceClasses: { a: { volumeGroup: vg0, wipe: none, default: true }, b: { volumeGroup: vg0, wipe: zero }, c: { volumeGroup: vg1, wipe: discard } }',
    );
    expect(wipePolicyFor(config, 'vg0')).toBe('zero');
    expect(wipePolicyFor(config, 'vg1')).toBe('discard');
    expect(wipePolicyFor(config, 'vg-unknown')).toBe('zero');
  });
});
