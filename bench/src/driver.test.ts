import { describe, expect, it } from 'vitest';
import { DEVICE_CLASS, driverConfigYaml } from './driver.js';

describe('driverConfigYaml', () => {
  it('writes one thick default class on the group, wipe none', () => {
    expect(driverConfigYaml('lvsbench0123abcd')).toBe(
      `deviceClasses:\n  ${DEVICE_CLASS}: { volumeGroup: lvsbench0123abcd, wipe: none, default: true }\n`,
    );
  });

  it('writes the thin keys of docs/DESIGN.md §4 when given a pool', () => {
    expect(
      driverConfigYaml('lvsbench0123abcd', {
        pool: 'benchpool',
        poolSizeBytes: 536870912,
        overprovisionRatio: 10,
      }),
    ).toBe(
      `deviceClasses:\n  ${DEVICE_CLASS}: { volumeGroup: lvsbench0123abcd, type: thin, thinPool: benchpool, thinPoolSize: 536870912, overprovisionRatio: 10, wipe: none, default: true }\n`,
    );
  });
});
