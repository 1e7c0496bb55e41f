// The GC property tests' own reading of the ownership signals (DESIGN.md
// §2.3, §3 "Owner ID", §6), written from the documents with literal tag
// names. It shares no code with naming.ts or volumes/ownership.ts, so a fault
// there (a case-insensitive owner, a repeated tag taken, a missing tag
// tolerated) cannot agree with itself. Default naming only: the generated
// inventories use `lvstamp`.
import type { HeaderReading } from '../volumes/header-reading.js';

const HEX32 = /^[0-9a-f]{32}$/;
const DECIMAL = /^(0|[1-9][0-9]*)$/;

/** The values of every `lvstamp.<key>=<value>` tag, in tag order. */
export function tagValues(tags: readonly string[], key: string): string[] {
  const prefix = `lvstamp.${key}=`;
  return tags.filter((t) => t.startsWith(prefix)).map((t) => t.slice(prefix.length));
}

/**
 * Both tags of DESIGN.md §2.3: `lvstamp` and `lvstamp.owner=<ownerId>`,
 * compared as exact strings (lvm tags are case-sensitive; an owner tag in
 * another case is another owner's).
 */
export function hasBothTags(tags: readonly string[], ownerId: string): boolean {
  return tags.includes('lvstamp') && tags.includes(`lvstamp.owner=${ownerId}`);
}

/** Sector 0 is an `ok` header with exactly this volume ID and owner ID. */
export function headerIs(header: HeaderReading, volumeId: string, ownerId: string): boolean {
  return (
    header.status === 'ok' &&
    header.header.volumeId === volumeId &&
    header.header.ownerId === ownerId
  );
}

/** The one well-formed `lvstamp.from=snapshot.<id>|volume.<id>` tag; null when absent, repeated or malformed. */
export function fromTagOf(
  tags: readonly string[],
): { readonly kind: 'snapshot' | 'volume'; readonly id: string } | null {
  const values = tagValues(tags, 'from');
  const match = values.length === 1 ? /^(snapshot|volume)\.(.*)$/.exec(values[0] ?? '') : null;
  if (match === null || !HEX32.test(match[2] ?? '')) return null;
  return { kind: match[1] === 'volume' ? 'volume' : 'snapshot', id: match[2] ?? '' };
}

/**
 * A snapshot's `lvstamp.source`, `lvstamp.size` and `lvstamp.created` tags
 * (DESIGN.md §3), each exactly once and well formed (a 32-hex ID, decimal
 * safe integers); null otherwise.
 */
export function snapshotTagsOf(
  tags: readonly string[],
): { readonly source: string; readonly createdMs: number } | null {
  const one = (key: string): string | null => {
    const values = tagValues(tags, key);
    return values.length === 1 ? (values[0] ?? null) : null;
  };
  const integer = (text: string | null): number | null =>
    text !== null && DECIMAL.test(text) && Number.isSafeInteger(Number(text)) ? Number(text) : null;
  const source = one('source');
  const size = integer(one('size'));
  const createdMs = integer(one('created'));
  if (source === null || !HEX32.test(source) || size === null || createdMs === null) return null;
  return { source, createdMs };
}
