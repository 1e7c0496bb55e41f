import type { GcOutcome, GcPlan, GcPlanEntry } from './types.js';
import { formatDuration, formatTime } from './util.js';

/**
 * The plan as a table for people, shared by `lvstamp gc` and `lvstamp-gc
 * node`: one row per device with its action, the DESIGN.md §6 rule and the
 * reason (warnings marked), plus the outcome column once the plan was applied.
 * When the plan quarantines or holds quarantined LVs (DESIGN.md §6
 * "Quarantine"), a QUARANTINE column says where each is in its window.
 * @returns header (upper case) and rows of cells, in plan order.
 */
export function planTable(
  plan: GcPlan,
  outcomes: readonly GcOutcome[],
): { header: string[]; rows: string[][] } {
  const outcomeOf = new Map(outcomes.map((o) => [o.entry, o]));
  const applied = outcomes.length > 0;
  const quarantine = plan.entries.some(
    (e) => e.target === 'quarantined' || e.action.startsWith('quarantine-'),
  );
  return {
    header: [
      'DEVICE',
      'ACTION',
      'RULE',
      ...(quarantine ? ['QUARANTINE'] : []),
      'REASON',
      ...(applied ? ['OUTCOME'] : []),
    ],
    rows: plan.entries.map((e) => {
      const o = outcomeOf.get(e);
      return [
        e.device,
        e.action,
        String(e.rule),
        ...(quarantine ? [windowCell(e, plan.plannedAtMs)] : []),
        `${e.severity === 'warn' ? 'WARNING: ' : ''}${e.reason}`,
        ...(applied
          ? [o === undefined ? '-' : `${o.outcome}${o.detail ? `: ${o.detail}` : ''}`]
          : []),
      ];
    }),
  };
}

/**
 * Where an entry is in its quarantine window: `since <time>, <left> left`,
 * `since <time>, expired`, `since <time>` (no window in this run), `starts
 * now` for a quarantine, `-` for everything else.
 */
function windowCell(e: GcPlanEntry, nowMs: number): string {
  if (e.action === 'quarantine-volume' || e.action === 'quarantine-snapshot') return 'starts now';
  if (e.target !== 'quarantined') return '-';
  if (e.quarantinedAtMs === null) return 'no quarantine time';
  const since = `since ${formatTime(e.quarantinedAtMs)}`;
  if (e.expiresAtMs === null) return since;
  return e.expiresAtMs <= nowMs
    ? `${since}, expired`
    : `${since}, ${formatDuration(e.expiresAtMs - nowMs)} left`;
}
