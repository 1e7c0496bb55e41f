import prettyMilliseconds from 'pretty-ms';

const UNIT_MS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};
const DURATION = /^(?:\d+(?:ms|s|m|h|d))+$/;

/**
 * The one duration grammar of every lvstamp flag and variable, for help texts
 * and error messages: what parseDuration accepts, and the two spellings
 * people try that it refuses (weeks, fractions).
 */
export const DURATION_SYNTAX =
  'a whole number with a unit ms, s, m, h or d (24 h), or several run together, each unit once: 45s, 30m, 1h30m, 2d, 1d12h, or 0; no w (write 7d) and no fractions (write 1d12h, not 1.5d)';

/**
 * Reads a duration: one or more `<integer><unit>` with unit ms, s, m, h or d
 * (`30m`, `1h30m`, `500ms`, `2d`), or a bare `0`: Go's `time.ParseDuration`
 * without fractions or signs, plus `d` = 24 h, and each unit at most once
 * (`7d7d` is a typo more often than 14d). White space around it is ignored.
 * @returns milliseconds, a non-negative safe integer; null for any other text.
 */
export function parseDuration(text: string): number | null {
  const trimmed = text.trim();
  if (trimmed === '0') return 0;
  if (!DURATION.test(trimmed)) return null;
  let total = 0;
  const seen = new Set<string>();
  for (const [, amount = '', unit = ''] of trimmed.matchAll(/(\d+)(ms|s|m|h|d)/g)) {
    if (seen.has(unit)) return null;
    seen.add(unit);
    total += Number(amount) * (UNIT_MS[unit] ?? Number.NaN);
  }
  return Number.isSafeInteger(total) ? total : null;
}

/**
 * Milliseconds for people, in whole seconds and at most the two largest
 * units that are not zero: `1h 30m`, `45s`, `1d 1h`, `0s` (pretty-ms).
 */
export function formatDuration(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1000));
  return seconds === 0 ? '0s' : prettyMilliseconds(seconds * 1000, { unitCount: 2 });
}
