/**
 * What a volume command says when the volume it names is not live but held
 * in quarantine (DESIGN.md §6 "Quarantine"): where, and the two commands
 * that end it. Nothing here changes anything; a quarantined volume is never
 * restored or removed implicitly.
 */
import {
  FailedPreconditionError,
  isHexId,
  NotFoundError,
  volumeIdForName,
  type QuarantinedLv,
} from '@lvstamp/core';
import type { CommandContext } from './context.js';

/** The IDs a volume ref can mean: the ID it is, and the ID of the name it is. */
function idsOf(ref: string): string[] {
  const ids = isHexId(ref.toLowerCase()) ? [ref.toLowerCase()] : [];
  try {
    ids.push(volumeIdForName(ref));
  } catch {
    // Not a valid volume name: only the ID reading is left.
  }
  return ids;
}

/**
 * Where `ref`'s volume is quarantined in the scope, as a sentence naming
 * `<vg>/lvstamp_q_<id>` and `lvstamp quarantine restore` / `purge`; null
 * when it is not (or the look-up fails: the caller's own error stands).
 */
export async function quarantinedLine(
  ctx: CommandContext,
  ref: string,
  vgNames: readonly string[],
): Promise<string | null> {
  const ids = idsOf(ref);
  if (ids.length === 0) return null;
  let held: QuarantinedLv[];
  try {
    const { quarantined } = await ctx
      .services()
      .quarantine.list({ vgNames, ownerId: ctx.globals().ownerId });
    held = quarantined.filter((q) => q.kind === 'volume' && ids.includes(q.id));
  } catch {
    return null;
  }
  const [first] = held;
  if (first === undefined) return null;
  const devices = held.map((q) => `${q.vgName}/${q.lvName}`);
  // restore and purge act only on LVs with this owner's tags (DESIGN.md §2.3): never promise them for a look-alike
  if (!held.some((q) => q.owned)) {
    return (
      `volume ${ref} is not live: an LV named as its quarantined copy is there, ${devices.join(', ')}, ` +
      "but without this owner's tags; lvstamp quarantine restore and purge leave it alone (lvstamp quarantine inspect shows it)"
    );
  }
  return (
    `volume ${ref} is not live: it is in quarantine as ${devices.join(', ')}; ` +
    `lvstamp quarantine restore ${first.id} brings it back, ` +
    `lvstamp quarantine purge ${devices.join(' ')} --apply removes it`
  );
}

/**
 * Runs a volume command; a NotFoundError whose volume is quarantined
 * becomes a NotFoundError that says so (quarantinedLine). Exit code as before (1).
 */
export async function orQuarantined<T>(
  ctx: CommandContext,
  ref: string,
  vgNames: () => Promise<readonly string[]>,
  run: () => Promise<T>,
): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (!(error instanceof NotFoundError)) throw error;
    const line = await quarantinedLine(ctx, ref, await vgNames().catch(() => []));
    if (line === null) throw error;
    throw new NotFoundError(line, { cause: error });
  }
}

/**
 * A delete that found no live volume: when it is quarantined, a refusal
 * (exit 1: the volume was not deleted, and a quarantined one is only ever
 * removed by `lvstamp quarantine purge`); otherwise nothing.
 * @throws FailedPreconditionError naming the quarantined LV.
 */
export async function refuseDeleteOfQuarantined(
  ctx: CommandContext,
  ref: string,
  vgNames: readonly string[],
): Promise<void> {
  const line = await quarantinedLine(ctx, ref, vgNames);
  if (line !== null) throw new FailedPreconditionError(`not deleted: ${line}`);
}
