import type { GcOutcome, GcPlan } from './types.js';

/**
 * The plan as a table for people, shared by `lvstamp gc` and `lvstamp-gc
 * node`: one row per device with its action, the DESIGN.md §6 rule and the
 * reason (warnings marked), plus the outcome column once the plan was applied.
 * @returns header (upper case) and rows of cells, in plan order.
 */
export function planTable(
  plan: GcPlan,
  outcomes: readonly GcOutcome[],
): { header: string[]; rows: string[][] } {
  const outcomeOf = new Map(outcomes.map((o) => [o.entry, o]));
  const applied = outcomes.length > 0;
  return {
    header: ['DEVICE', 'ACTION', 'RULE', 'REASON', ...(applied ? ['OUTCOME'] : [])],
    rows: plan.entries.map((e) => {
      const o = outcomeOf.get(e);
      return [
        e.device,
        e.action,
        String(e.rule),
        `${e.severity === 'warn' ? 'WARNING: ' : ''}${e.reason}`,
        ...(applied
          ? [o === undefined ? '-' : `${o.outcome}${o.detail ? `: ${o.detail}` : ''}`]
          : []),
      ];
    }),
  };
}
