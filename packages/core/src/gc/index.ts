// Public surface of the GC (DESIGN.md §6): the service the apps run, its ports and results.
export type { GcExecutorPorts, LvRef } from './ports.js';
export type {
  GcOutcome,
  GcPlan,
  GcPlanEntry,
  GcQuarantinedEntry,
  GcSnapshotEntry,
} from './types.js';
export { GcService, type GcPlanRequest } from './service.js';
export type { LiveSetSource } from './live-set.js';
export { planTable } from './plan-table.js';
export { unusableGroupText } from './plan-groups.js';
export { DEFAULT_GC_WIPE } from './planner.js';
