import { describe, expect, it } from 'vitest';
import { DEVICE_CLASS, driverConfigYaml, logLineTimeMs } from './driver.js';

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

describe('logLineTimeMs', () => {
  it("reads the ISO 8601 time of lvstamp's log lines", () => {
    expect(logLineTimeMs('2026-12-05T16:39:23.762Z')).toBe(Date.UTC(2026, 11, 5, 16, 39, 23, 762));
  });

  it('reads epoch milliseconds', () => {
    expect(logLineTimeMs(1764952763762)).toBe(1764952763762);
  });

  it('gives null for a missing or unreadable time', () => {
    expect(logLineTimeMs(undefined)).toBeNull();
    expect(logLineTimeMs('yesterday')).toBeNull();
    expect(logLineTimeMs(Number.NaN)).toBeNull();
  });
});
