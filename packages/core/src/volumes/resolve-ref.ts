import { InvalidArgumentError } from '../errors.js';
import { isHexId, volumeIdForName } from '../naming.js';

/**
 * Turns what a person typed into an ID: a name (its ID is derived, the rule
 * of DESIGN.md §3 for volumes and snapshots alike), or the ID of an existing
 * `kind`. A ref that is both an existing one's ID and the name of another
 * existing one is refused rather than guessed.
 * @param exists whether a `kind` with this ID exists (in the caller's scope).
 * @throws InvalidArgumentError when the ref is neither a valid ID nor a
 *   valid name, or when it is ambiguous.
 */
export async function resolveRef(
  ref: string,
  kind: 'volume' | 'snapshot',
  exists: (id: string) => Promise<boolean>,
): Promise<string> {
  const byName = volumeIdForName(ref);
  if (!isHexId(ref) || ref === byName) return byName;
  const [asId, asName] = await Promise.all([exists(ref), exists(byName)]);
  if (asId && asName) {
    throw new InvalidArgumentError(
      `"${ref}" is both the ID of a ${kind} and the name of ${kind} ${byName}; refusing to guess: use the ID you mean`,
    );
  }
  return asId ? ref : byName;
}
