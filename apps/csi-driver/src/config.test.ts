import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '@lvstamp/core';
import { readFile } from 'node:fs/promises';
import { parse } from 'yaml';
import {
  classesLeavingOldBlocks,
  configuredVolumeGroups,
  parseConfig,
  wipePolicyFor,
} from './config.js';
import { CONFIG_YAML } from './testing/harness.js';

describe('parseConfig', () => {
  it('reads device classes with defaults', () => {
    const config = parseConfig(CONFIG_YAML);
    expect(config.defaultClass).toEqual({
      name: 'fast',
      volumeGroup: 'vg0',
      provisioning: { type: 'thick' },
      wipe: 'discard',
      default: true,
      fsTypes: ['ext4', 'xfs'],
    });
    expect(config.deviceClasses.get('secure')).toEqual({
      name: 'secure',
      volumeGroup: 'vg1',
      provisioning: { type: 'thick' },
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
    [
      'deviceClasses: { a: { volumeGroup: vg0, type: thin, wipe: none, default: true } }',
      'c.yaml: deviceClasses.a.thinPool: a thin class needs thinPool',
    ],
    [
      'deviceClasses: { a: { volumeGroup: vg0, type: thin, thinPool: p, wipe: none, default: true } }',
      'c.yaml: deviceClasses.a.overprovisionRatio: a thin class needs overprovisionRatio',
    ],
    [
      'deviceClasses: { a: { volumeGroup: vg0, type: thin, thinPool: p, overprovisionRatio: 0.5, wipe: none, default: true } }',
      'c.yaml: deviceClasses.a.overprovisionRatio: overprovisionRatio must be at least 1',
    ],
    [
      'deviceClasses: { a: { volumeGroup: vg0, type: thin, thinPool: p, overprovisionRatio: .inf, wipe: none, default: true } }',
      'c.yaml: deviceClasses.a.overprovisionRatio: overprovisionRatio must be a finite number',
    ],
    [
      'deviceClasses: { a: { volumeGroup: vg0, type: thin, thinPool: p, overprovisionRatio: 2, wipe: discard, default: true } }',
      'c.yaml: deviceClasses.a.wipe: a thin class takes only wipe: none',
    ],
    [
      'deviceClasses: { a: { volumeGroup: vg0, type: thin, thinPool: lvstamp_pool, overprovisionRatio: 2, wipe: none, default: true } }',
      'c.yaml: deviceClasses.a.thinPool: "lvstamp_pool" starts with lvstamp\'s LV name prefix "lvstamp_"',
    ],
    [
      'deviceClasses: { a: { volumeGroup: vg0, type: thin, thinPool: p, overprovisionRatio: 2, thinPoolSize: 1.5, wipe: none, default: true } }',
      'c.yaml: deviceClasses.a.thinPoolSize: thinPoolSize must be a whole number of bytes',
    ],
    [
      'deviceClasses: { a: { volumeGroup: vg0, thinPool: p, wipe: none, default: true } }',
      'c.yaml: deviceClasses.a.thinPool: only a class with type: thin has thinPool',
    ],
    [
      'deviceClasses: { a: { volumeGroup: vg0, type: thinner, wipe: none, default: true } }',
      'c.yaml: deviceClasses.a.type: type must be thick or thin',
    ],
    [
      'deviceClasses: { a: { volumeGroup: vg0, type: thin, thinPool: p, overprovisionRatio: 2, wipe: none, default: true }, b: { volumeGroup: vg0, type: thin, thinPool: p, overprovisionRatio: 3, wipe: none } }',
      'c.yaml: deviceClasses.b.thinPool: the thin pool vg0/p is already the pool of class a; a pool belongs to one class',
    ],
    [
      `deviceClasses: { a: { volumeGroup: ${'v'.repeat(80)}, type: thin, thinPool: p, overprovisionRatio: 2, wipe: none, default: true } }`,
      'c.yaml: deviceClasses.a.volumeGroup: volume group name',
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

  it('reads a thin class', () => {
    const config = parseConfig(
      'deviceClasses: { t: { volumeGroup: vg0, type: thin, thinPool: pool0, thinPoolSize: 4294967296, overprovisionRatio: 1, wipe: none, default: true }, u: { volumeGroup: vg0, type: thin, thinPool: pool1, overprovisionRatio: 2.5, wipe: none }, k: { volumeGroup: vg0, type: thick, wipe: zero } }',
    );
    expect(config.defaultClass.provisioning).toEqual({
      type: 'thin',
      thinPool: 'pool0',
      thinPoolSizeBytes: 4294967296,
      overprovisionRatio: 1,
    });
    expect(config.deviceClasses.get('u')?.provisioning).toEqual({
      type: 'thin',
      thinPool: 'pool1',
      thinPoolSizeBytes: null,
      overprovisionRatio: 2.5,
    });
    expect(config.deviceClasses.get('k')?.provisioning).toEqual({ type: 'thick' });
  });

  it('accepts a thin class volume group name one byte shorter than a thick one', () => {
    const config = parseConfig(
      `deviceClasses: { a: { volumeGroup: ${'v'.repeat(79)}, type: thin, thinPool: p, overprovisionRatio: 2, wipe: none, default: true } }`,
    );
    expect(config.defaultClass.volumeGroup).toHaveLength(79);
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

describe('classesLeavingOldBlocks (DESIGN.md §5 "Wipe")', () => {
  const names = (yaml: string): string[] =>
    classesLeavingOldBlocks(parseConfig(yaml)).map((c) => c.name);

  it('names a thick class whose volume group no class wipes, and no other', () => {
    expect(
      names(`deviceClasses:
  plain: { volumeGroup: vg0, wipe: none, default: true }
  also: { volumeGroup: vg0, wipe: none }
  wiped: { volumeGroup: vg1, wipe: discard }
  zeroed: { volumeGroup: vg2, wipe: zero }
`),
    ).toEqual(['plain', 'also']);
  });

  it('a thick class with none on a group another class wipes is wiped with that policy: not named', () => {
    const yaml =
      'deviceClasses: { a: { volumeGroup: vg0, wipe: none, default: true }, b: { volumeGroup: vg0, wipe: discard } }';
    expect(wipePolicyFor(parseConfig(yaml), 'vg0')).toBe('discard');
    expect(names(yaml)).toEqual([]);
  });

  it('a thin class keeps the promise with none (its pool zeroes new chunks); a thick class beside it does not', () => {
    expect(
      names(`deviceClasses:
  thin: { volumeGroup: vg0, type: thin, thinPool: pool0, overprovisionRatio: 2, wipe: none, default: true }
  thick: { volumeGroup: vg0, wipe: none }
`),
    ).toEqual(['thick']);
  });

  it('the shipped configuration (deploy/kubernetes/configmap-driver.yaml) keeps the promise', async () => {
    const shipped = parse(
      await readFile(
        new URL('../../../deploy/kubernetes/configmap-driver.yaml', import.meta.url),
        'utf8',
      ),
    ) as { data: Record<string, string> };
    const config = parseConfig(shipped.data['config.yaml'] ?? '', 'configmap-driver.yaml');
    expect(config.defaultClass).toMatchObject({ provisioning: { type: 'thick' }, wipe: 'discard' });
    expect(classesLeavingOldBlocks(config)).toEqual([]);
  });
});
