import { status as GrpcStatus } from '@grpc/grpc-js';
import { CsiError, invalidArgument } from './errors.js';
import type { CapacityRangeMsg, Int64 } from './csi-types.js';

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * Reads an int64 byte count that proto-loader delivered as a decimal
 * string, without losing precision.
 * @returns bytes as a safe integer (0 means "unspecified" in CSI).
 * @throws CsiError INVALID_ARGUMENT for a negative or malformed value (CSI
 *   spec CapacityRange: "MUST NOT be negative"), OUT_OF_RANGE above 2^53 − 1
 *   bytes (8 PiB: more than lvstamp can represent exactly).
 */
export function readBytes(field: string, value: Int64 | number | undefined): number {
  const text = String(value ?? '0');
  if (!/^-?\d+$/.test(text)) throw invalidArgument(`${field} is not an integer: "${text}"`);
  const big = BigInt(text);
  if (big < 0n) throw invalidArgument(`${field} must not be negative, got ${text}`);
  if (big > MAX_SAFE) {
    throw new CsiError(
      GrpcStatus.OUT_OF_RANGE,
      `${field} ${text} is above the largest supported size, ${Number.MAX_SAFE_INTEGER} bytes`,
    );
  }
  return Number(big);
}

/** A CSI capacity range in bytes; 0 stands for "not given". */
export interface ByteRange {
  readonly requiredBytes: number;
  readonly limitBytes: number;
}

/**
 * Reads a CapacityRange (CSI spec: both fields optional, 0 = unspecified).
 * Whether the range can be met is the core's size rule (volumeSize).
 * @throws CsiError as readBytes.
 */
export function readCapacityRange(range: CapacityRangeMsg | null | undefined): ByteRange {
  const requiredBytes = readBytes('capacity_range.required_bytes', range?.required_bytes);
  const limitBytes = readBytes('capacity_range.limit_bytes', range?.limit_bytes);
  return { requiredBytes, limitBytes };
}

/** A byte count for an int64 field, as a decimal string (exact above 2^31). */
export function writeBytes(bytes: number): Int64 {
  return String(bytes);
}
