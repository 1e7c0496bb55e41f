/** Fields of a header v1 or v2 (DESIGN.md §4; the two share one layout). */
export interface HeaderFields {
  /** 32 lowercase hex digits. */
  readonly volumeId: string;
  /** 32 lowercase hex digits; all zeros for standalone use. */
  readonly ownerId: string;
  /** Unix time in milliseconds. */
  readonly createdAtMs: number;
  /** Bytes from LV start to the data area; multiple of 4096; 1 MiB in v1. */
  readonly dataOffsetBytes: number;
  /**
   * v1: capacity asked for at creation, in bytes (informational: the
   * capacity is LV size − data offset). v2: the volume's capacity in bytes,
   * the data device's exact length, rewritten by each expansion.
   */
  readonly requestedBytes: number;
  /** UTF-8 volume name, 1–256 bytes (the field's width; new volumes have 1–128, DESIGN.md §3). */
  readonly name: string;
}

/** Outcome of decoding sector 0. Decoding never throws. */
export type DecodeResult =
  | { readonly status: 'ok'; readonly header: HeaderFields; readonly version: 1 | 2 }
  | { readonly status: 'not-stamped'; readonly reason: string }
  | { readonly status: 'unsupported'; readonly reason: string; readonly version: number }
  | { readonly status: 'corrupt'; readonly reason: string };
