/**
 * How a device class provisions its volumes (docs/DESIGN.md §4 "Thin device
 * classes"): `thick` (the default) takes the LV's extents from the volume
 * group; `thin` makes a thin LV in one thin pool of the group.
 */
export type Provisioning = ThickProvisioning | ThinProvisioning;

/** A thick class: each volume is a linear LV of its own extents. */
export interface ThickProvisioning {
  readonly type: 'thick';
}

/** A thin class: each volume is a thin LV in `vgName/thinPool`. */
export interface ThinProvisioning {
  readonly type: 'thin';
  /** The thin pool's LV name in the class's volume group; never starts with the LV prefix. */
  readonly thinPool: string;
  /** Size in bytes of the pool lvstamp creates when it is absent; null = adopt only. */
  readonly thinPoolSizeBytes: number | null;
  /** Finite, ≥ 1: the sum of the pool's thin LV sizes may reach pool size × ratio (1 = no over-commit). */
  readonly overprovisionRatio: number;
}

/** The provisioning of every class that does not say otherwise. */
export const THICK: ThickProvisioning = Object.freeze({ type: 'thick' });

/**
 * The thin pool settings of a class, or null for a thick class: the one
 * question snapshots, restore and clone ask ("is this class thin, which
 * pool").
 */
export function thinPoolOf(provisioning: Provisioning): ThinProvisioning | null {
  return provisioning.type === 'thin' ? provisioning : null;
}
