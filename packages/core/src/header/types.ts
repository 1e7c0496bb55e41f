/** Fields of a header v1 (DESIGN.md §4). */
export interface HeaderFields {
  /** 32 lowercase hex digits. */
  readonly volumeId: string;
  /** 32 lowercase hex digits; all zeros for standalone use. */
  readonly ownerId: string;
  /** Unix time in milliseconds. */
  readonly createdAtMs: number;
  /** Bytes from LV start to the data area; multiple of 4096; 1 MiB in v1. */
  readonly dataOffsetBytes: number;
  /** Capacity asked for at creation, in bytes. */
  readonly requestedBytes: number;
  /** UTF-8 volume name, 1–256 bytes. */
  readonly name: string;
}

/** Outcome of decoding sector 0. Decoding never throws. */
export type DecodeResult =
  | { readonly status: 'ok'; readonly header: HeaderFields; readonly version: 1 }
  | { readonly status: 'not-stamped'; readonly reason: string }
  | { readonly status: 'unsupported'; readonly reason: string; readonly version: number }
  | { readonly status: 'corrupt'; readonly reason: string };
