// The failure lines docs/troubleshooting.md quotes, and the check that each still appears in the
// source that prints it (troubleshooting.test.ts). Pure functions over text; the test reads files.

/** The programs' prefixes before a message on standard error (`lvstamp-csi: …`). */
export const PROGRAM_PREFIXES: readonly string[] = ['lvstamp-csi: ', 'lvstamp-gc: ', 'lvstamp: '];

/** What stands for a varying part (or an embedded message) in a quoted line. */
export const ELLIPSIS = '…';

/**
 * The quoted lines of a troubleshooting page: the text of every level-4 heading that is one
 * code span, e.g. "#### `an operation on … is already in progress`" gives
 * "an operation on … is already in progress".
 */
export function quotedLines(page: string): string[] {
  const out: string[] = [];
  for (const line of page.split('\n')) {
    const m = /^#### `([^`]+)`$/.exec(line.trim());
    if (m?.[1] !== undefined) out.push(m[1]);
  }
  return out;
}

/**
 * The literal pieces of a quoted line that the source must contain: a program prefix on its own
 * (the programs print it before every message), then the text between `…`, each trimmed, empty
 * ones dropped.
 */
export function fragmentsOf(quoted: string): string[] {
  const prefix = PROGRAM_PREFIXES.find((p) => quoted.startsWith(p));
  const rest = prefix === undefined ? quoted : quoted.slice(prefix.length);
  const pieces = rest
    .split(ELLIPSIS)
    .map((f) => f.trim())
    .filter((f) => f !== '');
  return prefix === undefined ? pieces : [prefix, ...pieces];
}

/**
 * Source text as its string literals read: adjacent literals joined where the code
 * concatenates them (`'a ' +\n 'b'` reads `'a b'`), and escaped quotes unescaped, so that a
 * message split over lines is found whole.
 */
export function normalizeSource(text: string): string {
  return text.replace(/(['"`])\s*\+\s*(['"`])/g, '').replace(/\\(['"`])/g, '$1');
}

/** The fragments of `quoted` that `corpus` (normalized source) lacks; empty when it has all. */
export function missingFragments(quoted: string, corpus: string): string[] {
  return fragmentsOf(quoted).filter((f) => !corpus.includes(f));
}
