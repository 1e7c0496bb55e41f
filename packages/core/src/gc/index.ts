// Public surface of the GC (DESIGN.md §6): inventory, pure planner, executor.
export { takeInventory } from './inventory.js';
export { planGc, validatePolicy } from './planner.js';
export { applyGcPlan, type GcApplyOptions } from './executor.js';
export type * from './ports.js';
export type * from './types.js';
export { GcService, type GcPlanRequest, type LiveSetSource } from './service.js';
export { planTable } from './plan-table.js';
