import { renderTable } from '@lvstamp/app-kit';
import { unusableGroupText, type QuarantinedLv } from '@lvstamp/core';
import type { CommandContext } from '../context.js';
import { warningLine, writeJson } from '../output.js';
import { formatBytes } from '../quantity.js';
import { commandScope } from '../scope.js';

/**
 * An ISO 8601 time for a Unix time in milliseconds, or `<ms> ms` for one no
 * Date can hold (a hand-edited quarantine tag): a listing never fails on one LV.
 */
export function isoTime(ms: number): string {
  return Number.isFinite(ms) && Math.abs(ms) <= 8.64e15 ? new Date(ms).toISOString() : `${ms} ms`;
}

/** `lvstamp list --quarantined` and `lvstamp quarantine list`. */
export async function listQuarantined(ctx: CommandContext, vg: string | undefined): Promise<void> {
  const { io } = ctx.deps;
  const scope = await commandScope(io, ctx.services().volumes, vg);
  const { quarantined: list, unusableGroups } = await ctx
    .services()
    .quarantine.list({ vgNames: scope.vgNames, ownerId: ctx.globals().ownerId });
  // A group lvm refuses to change: nothing in it can be restored or purged now (DESIGN.md §6 rule 1).
  for (const group of unusableGroups) io.stderr.write(warningLine(unusableGroupText(group)));
  if (ctx.globals().json) {
    writeJson(io, { volumeGroups: scope.vgNames, quarantined: list, unusableGroups });
    return;
  }
  io.stdout.write(
    renderTable(
      ['kind', 'id', 'vg', 'lv', 'size', 'quarantined', 'owned'],
      list.map((q: QuarantinedLv) => [
        q.kind,
        q.id,
        q.vgName,
        q.lvName,
        q.thin ? `${formatBytes(q.sizeBytes)} virtual` : formatBytes(q.sizeBytes),
        q.quarantinedAtMs === null ? '-' : isoTime(q.quarantinedAtMs),
        q.owned ? 'yes' : 'no',
      ]),
    ),
  );
  io.stdout.write(`${quarantineTotal(list)}\n`);
}

/**
 * The summary line of a quarantine listing. Only thick LVs add to the
 * bytes held: a thin LV holds the pool chunks it wrote, which lvm does not
 * report for an inactive LV, so its virtual size is summed apart and never
 * called held (the pool's own data use counts its chunks). LVs that are not
 * this owner's are counted and named as such.
 */
export function quarantineTotal(list: readonly QuarantinedLv[]): string {
  const sum = (lvs: readonly QuarantinedLv[]) => lvs.reduce((n, q) => n + q.sizeBytes, 0);
  const thick = list.filter((q) => !q.thin);
  const thin = list.filter((q) => q.thin);
  // look-alikes (no tags of this owner, another owner's) hold space too, but no purge or GC
  // of this owner ever removes them: say how many there are
  const foreign = list.filter((q) => !q.owned).length;
  const count =
    foreign === 0
      ? `${list.length} quarantined`
      : `${list.length} quarantined (${foreign} not this owner's: never purged or expired by it)`;
  const held = `${count}, ${formatBytes(sum(thick))} held`;
  if (thin.length === 0) return held;
  return (
    `${held} by ${thick.length} thick LV${thick.length === 1 ? '' : 's'}; ` +
    `${thin.length} thin LV${thin.length === 1 ? '' : 's'} of ${formatBytes(sum(thin))} virtual size ` +
    `(not counted as held: the pool chunks they hold are in the thin pool's data use)`
  );
}
