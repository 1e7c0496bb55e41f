import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ThinLvRow, ThinPoolReport, ThinPoolRow } from '../lvm/types.js';
import type { ThinProvisioning } from '../provisioning.js';
import { volumeSize } from './size.js';
import { thinAdmits, thinPoolCapacity } from './thin-capacity.js';

const MIB = 1024 * 1024;
const GIB = 1024 * MIB;
const EXTENT = 4 * MIB;

function thin(ratio: number, sizeBytes: number | null = null): ThinProvisioning {
  return {
    type: 'thin',
    thinPool: 'pool0',
    thinPoolSizeBytes: sizeBytes,
    overprovisionRatio: ratio,
  };
}

function pool(overrides: Partial<ThinPoolRow> = {}): ThinPoolRow {
  return {
    vgName: 'vg0',
    poolName: 'pool0',
    sizeBytes: GIB,
    attr: 'twi-aotz--',
    isThinPool: true,
    dataHundredths: 0,
    metadataHundredths: 1000,
    healthStatus: '',
    whenFull: 'error',
    zero: true,
    ...overrides,
  };
}

function report(
  poolRow: ThinPoolRow | null,
  thinLvs: ThinLvRow[] = [],
  vgFreeBytes = 0,
): ThinPoolReport {
  return { vgFreeBytes, extentSizeBytes: EXTENT, pool: poolRow, thinLvs };
}

const lv = (sizeBytes: number, writeable = true): ThinLvRow => ({
  lvName: `lv${sizeBytes}`,
  sizeBytes,
  writeable,
});

// Random pools: sizes in whole extents, usage in hundredths, thin LVs of whole extents.
const poolArb = fc.record({
  extents: fc.integer({ min: 1, max: 1 << 20 }),
  data: fc.integer({ min: 0, max: 10000 }),
  metadata: fc.integer({ min: 0, max: 10000 }),
  ratio: fc.oneof(fc.constant(1), fc.double({ min: 1, max: 50, noNaN: true })),
  lvs: fc.array(
    fc.record({ extents: fc.integer({ min: 1, max: 1 << 22 }), writeable: fc.boolean() }),
    { maxLength: 8 },
  ),
});

type PoolArb = typeof poolArb extends fc.Arbitrary<infer T> ? T : never;

function capacityOf(arb: PoolArb) {
  return thinPoolCapacity(
    thin(arb.ratio),
    report(
      pool({
        sizeBytes: arb.extents * EXTENT,
        dataHundredths: arb.data,
        metadataHundredths: arb.metadata,
      }),
      arb.lvs.map((l) => lv(l.extents * EXTENT, l.writeable)),
    ),
  );
}

describe('thinPoolCapacity', () => {
  it('computes the formula on a recorded pool (capacity-one-lvs: 1 GiB pool, 3.3 GiB promised)', () => {
    // P = 1 GiB, d = 0.00, m = 11.52, V = 64 MiB + 1028 MiB + 68 MiB + 2 GiB + 8 MiB + 8 MiB
    const capacity = thinPoolCapacity(
      thin(4),
      report(pool({ metadataHundredths: 1152 }), [
        lv(67108864),
        lv(1077936128),
        lv(71303168),
        lv(2147483648),
        lv(8388608),
        lv(8388608),
      ]),
    );
    const promised = 67108864 + 1077936128 + 71303168 + 2147483648 + 8388608 + 8388608;
    expect(capacity.promisedBytes).toBe(promised);
    expect(capacity.usedBytes).toBe(Math.ceil((GIB * 1) / 10000)); // d + 0.01 against us
    expect(capacity.budgetBytes).toBe(4 * GIB - promised);
    // min(B = 796 MiB, F × 4, P): B, whole extents; minus the 1 MiB data offset
    expect(capacity.limitBytes).toBe(4 * GIB - promised);
    expect(capacity.capacityBytes).toBe(4 * GIB - promised - MIB);
    expect(capacity.condition).toBe('ok');
    expect(capacity.whenFull).toBe('error');
  });

  it('V > P × ratio → 0, never a wrap (TopoLVM #961)', () => {
    fc.assert(
      fc.property(poolArb, fc.integer({ min: 1, max: 1 << 20 }), (arb, extra) => {
        const promised = Math.floor(arb.extents * EXTENT * arb.ratio) + extra * EXTENT;
        const capacity = thinPoolCapacity(
          thin(arb.ratio),
          report(pool({ sizeBytes: arb.extents * EXTENT, metadataHundredths: 0 }), [lv(promised)]),
        );
        expect(capacity.budgetBytes).toBeLessThan(0);
        expect(capacity.capacityBytes).toBe(0);
        expect(capacity.limitBytes).toBe(0);
      }),
    );
  });

  it('data 100 % → 0 whatever V is (OpenEBS #458, #382)', () => {
    fc.assert(
      fc.property(poolArb, (arb) => {
        const capacity = capacityOf({ ...arb, data: 10000, lvs: [] });
        expect(capacity.capacityBytes).toBe(0);
        expect(capacity.condition).toBe('data-full');
      }),
    );
    const byAttr = thinPoolCapacity(
      thin(4),
      report(pool({ attr: 'twi-aotzD-', dataHundredths: 9999 })),
    );
    expect(byAttr.condition).toBe('data-full');
    const byHealth = thinPoolCapacity(thin(4), report(pool({ healthStatus: 'out_of_data' })));
    expect(byHealth.capacityBytes).toBe(0);
  });

  it('vg_free 0 with a pool taking the whole group still reports the pool (OpenEBS #458)', () => {
    const capacity = thinPoolCapacity(thin(1), report(pool(), [], 0));
    // d = 0.00 counts as 0.01 % used (against us): F × 1 is one extent short of P
    expect(capacity.capacityBytes).toBe(GIB - EXTENT - MIB);
    expect(thinPoolCapacity(thin(2), report(pool(), [], 0)).capacityBytes).toBe(GIB - MIB);
  });

  it('pool absent with thinPoolSize → the prospective capacity, not 0 (OpenEBS #470)', () => {
    const free = 2 * GIB;
    const capacity = thinPoolCapacity(thin(3, GIB), report(null, [], free));
    expect(capacity.condition).toBe('prospective');
    expect(capacity.capacityBytes).toBe(GIB - MIB);
    // too little room for pool, metadata and spare
    const tight = thinPoolCapacity(thin(3, GIB), report(null, [], GIB + 2 * EXTENT - 1));
    expect(tight.capacityBytes).toBe(0);
    expect(tight.detail).toContain('creating it needs 1082130432');
    const exact = thinPoolCapacity(thin(3, GIB), report(null, [], GIB + 2 * EXTENT));
    expect(exact.capacityBytes).toBe(GIB - MIB);
    // no size: absent, 0
    expect(thinPoolCapacity(thin(3), report(null, [], free)).condition).toBe('absent');
  });

  it('metadata ≥ 80 % → 0', () => {
    fc.assert(
      fc.property(poolArb, fc.integer({ min: 8000, max: 10000 }), (arb, metadata) => {
        const capacity = capacityOf({ ...arb, data: 0, metadata });
        expect(capacity.capacityBytes).toBe(0);
        expect(capacity.condition).toBe('metadata-full');
      }),
    );
    expect(thinPoolCapacity(thin(1), report(pool({ metadataHundredths: 7999 }))).condition).toBe(
      'ok',
    );
  });

  it('data_percent "" → inactive (activate first), never NaN', () => {
    const capacity = thinPoolCapacity(
      thin(4),
      report(pool({ dataHundredths: null, metadataHundredths: null, attr: 'twi---tz--' })),
    );
    expect(capacity.condition).toBe('inactive');
    expect(capacity.capacityBytes).toBe(0);
    expect(capacity.dataRatio).toBeNull();
  });

  it('a pool without chunk zeroing or an LV that is no pool is unusable', () => {
    expect(thinPoolCapacity(thin(4), report(pool({ zero: false }))).condition).toBe('unusable');
    expect(
      thinPoolCapacity(thin(4), report(pool({ isThinPool: false, attr: '-wi-a-----' }))).condition,
    ).toBe('unusable');
  });

  it('every answer is a finite whole number of 4 KiB blocks, never negative, never above the pool', () => {
    fc.assert(
      fc.property(poolArb, (arb) => {
        const capacity = capacityOf(arb);
        expect(Number.isSafeInteger(capacity.capacityBytes)).toBe(true);
        expect(capacity.capacityBytes % 4096).toBe(0);
        expect(capacity.capacityBytes).toBeGreaterThanOrEqual(0);
        expect(capacity.limitBytes).toBeLessThanOrEqual(arb.extents * EXTENT);
      }),
    );
  });

  it('ratio 1 never admits more than the pool holds', () => {
    fc.assert(
      fc.property(poolArb, (arb) => {
        const capacity = capacityOf({ ...arb, ratio: 1 });
        const promised = arb.lvs
          .filter((l) => l.writeable)
          .reduce((s, l) => s + l.extents * EXTENT, 0);
        expect(promised + capacity.limitBytes).toBeLessThanOrEqual(
          Math.max(promised, arb.extents * EXTENT),
        );
      }),
    );
  });

  it('the answer is what CreateVolume admits: that capacity fits, one block more does not', () => {
    fc.assert(
      fc.property(poolArb, (arb) => {
        const capacity = capacityOf(arb);
        const admits = (bytes: number): boolean => {
          const { lvSizeBytes } = volumeSize({ requiredBytes: bytes, extentSizeBytes: EXTENT });
          return thinAdmits(capacity, lvSizeBytes, lvSizeBytes) === null;
        };
        if (capacity.capacityBytes > 0) expect(admits(capacity.capacityBytes)).toBe(true);
        expect(admits(capacity.capacityBytes + 4096)).toBe(false);
      }),
    );
  });
});
