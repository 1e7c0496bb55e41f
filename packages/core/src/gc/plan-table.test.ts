import { describe, expect, it } from 'vitest';
import { planTable } from './plan-table.js';
import type { GcOutcome, GcPlan, GcPlanEntry } from './types.js';

const keep = {
  target: 'volume',
  device: 'vg0/lvstamp_a',
  action: 'keep',
  rule: 1,
  severity: 'warn',
  reason: 'header corrupt',
} as unknown as GcPlanEntry;
const remove = {
  target: 'volume',
  device: 'vg0/lvstamp_b',
  action: 'remove-volume',
  rule: 6,
  severity: 'info',
  reason: 'orphan',
} as unknown as GcPlanEntry;
const plan = { entries: [keep, remove] } as unknown as GcPlan;

describe('planTable', () => {
  it('has one row per entry, warnings marked, no outcome column for a plan not applied', () => {
    expect(planTable(plan, [])).toEqual({
      header: ['DEVICE', 'ACTION', 'RULE', 'REASON'],
      rows: [
        ['vg0/lvstamp_a', 'keep', '1', 'WARNING: header corrupt'],
        ['vg0/lvstamp_b', 'remove-volume', '6', 'orphan'],
      ],
    });
  });

  it('adds the outcome of each applied entry, - for entries not acted on', () => {
    const outcomes: GcOutcome[] = [
      { entry: remove, outcome: 'removed', detail: 'removed LV vg0/lvstamp_b' },
    ];
    expect(planTable(plan, outcomes)).toEqual({
      header: ['DEVICE', 'ACTION', 'RULE', 'REASON', 'OUTCOME'],
      rows: [
        ['vg0/lvstamp_a', 'keep', '1', 'WARNING: header corrupt', '-'],
        ['vg0/lvstamp_b', 'remove-volume', '6', 'orphan', 'removed: removed LV vg0/lvstamp_b'],
      ],
    });
  });
});
