/**
 * Parsing of sizes and durations given on the command line.
 *
 * Sizes follow Kubernetes resource quantities (k8s.io/apimachinery
 * `resource.Quantity`), the units users see on their PVCs:
 * binary suffixes Ki Mi Gi Ti Pi Ei (powers of 1024), decimal suffixes
 * k M G T P E (powers of 1000), `m` (1/1000), a decimal exponent (`1e9`), or a
 * plain number of bytes. The result must be a whole number of bytes:
 * `1.5Gi` is fine, `1.5` or `100m` (0.1 byte — almost always a typo for
 * `100Mi`) are refused rather than rounded.
 */
import { DURATION_SYNTAX, parseDuration as readDuration } from '@lvstamp/app-kit';
import { InvalidArgumentError } from '@lvstamp/core';

const BINARY: Record<string, bigint> = {
  Ki: 1n << 10n,
  Mi: 1n << 20n,
  Gi: 1n << 30n,
  Ti: 1n << 40n,
  Pi: 1n << 50n,
  Ei: 1n << 60n,
};
const DECIMAL_EXPONENT: Record<string, number> = {
  m: -3,
  '': 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};

const QUANTITY =
  /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(?:(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)|[eE]([+-]?\d+))?$/;

/**
 * Parses a Kubernetes quantity into a whole number of bytes.
 * @param text e.g. `512Mi`, `1Gi`, `1G` (10^9), `1.5Gi`, `1e9`, `4096`.
 * @returns bytes, a positive safe integer.
 * @throws InvalidArgumentError for anything that is not a quantity, a
 *   negative, zero or fractional number of bytes, or a size beyond 2^53 − 1.
 */
export function parseSize(text: string): number {
  const match = QUANTITY.exec(text.trim());
  if (!match) {
    throw new InvalidArgumentError(
      `invalid size "${text}": use a Kubernetes quantity such as 512Mi, 1Gi, 1G (10^9) or a number of bytes`,
    );
  }
  const [, sign = '', number = '', suffix, exponentText] = match;
  const [whole = '', fraction = ''] = number.split('.');
  let numerator = BigInt((whole || '0') + fraction);
  let denominator = 10n ** BigInt(fraction.length);
  if (suffix !== undefined && suffix in BINARY) {
    numerator *= BINARY[suffix] ?? 1n;
  } else {
    const exponent =
      exponentText !== undefined ? Number(exponentText) : (DECIMAL_EXPONENT[suffix ?? ''] ?? 0);
    if (Math.abs(exponent) > 30)
      throw new InvalidArgumentError(`invalid size "${text}": exponent out of range`);
    if (exponent >= 0) numerator *= 10n ** BigInt(exponent);
    else denominator *= 10n ** BigInt(-exponent);
  }
  if (numerator % denominator !== 0n) {
    throw new InvalidArgumentError(
      `invalid size "${text}": not a whole number of bytes` +
        (suffix === 'm'
          ? ` ("m" is 1/1000; did you mean ${text.trim().replace(/m$/, 'Mi')}?)`
          : ''),
    );
  }
  const bytes = numerator / denominator;
  if (sign === '-' && numerator > 0n)
    throw new InvalidArgumentError(`invalid size "${text}": must be positive`);
  if (bytes <= 0n) throw new InvalidArgumentError(`invalid size "${text}": must be positive`);
  if (bytes > BigInt(Number.MAX_SAFE_INTEGER))
    throw new InvalidArgumentError(`invalid size "${text}": too large`);
  return Number(bytes);
}

/**
 * Parses a duration such as `30m`, `2h`, `1h30m`, `45s`, `500ms`, `2d`, `1d12h`, `0`
 * (app-kit `parseDuration`: Go `time.ParseDuration` style without fractions,
 * plus `d` = 24 h; `1w` and `1.5d` are refused).
 * @returns milliseconds, a non-negative safe integer.
 * @throws InvalidArgumentError for anything else.
 */
export function parseDuration(text: string): number {
  const ms = readDuration(text);
  if (ms === null) {
    throw new InvalidArgumentError(`invalid duration "${text}": use ${DURATION_SYNTAX}`);
  }
  return ms;
}

const IEC = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'];

/** Formats bytes for people: `204 MiB`, `1.5 GiB`, `512 B` (binary units, at most one decimal). */
export function formatBytes(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit < IEC.length - 1) {
    value /= 1024;
    unit += 1;
  }
  const shown = Number.isInteger(value) ? String(value) : value.toFixed(1).replace(/\.0$/, '');
  return `${shown} ${IEC[unit] ?? 'B'}`;
}

/** A volume's capacity for people: formatBytes, or `unknown` when its header could not be read. */
export function formatCapacity(bytes: number | null): string {
  return bytes === null ? 'unknown' : formatBytes(bytes);
}
