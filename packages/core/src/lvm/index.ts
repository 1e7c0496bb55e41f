// The lvm command module: argv builders, report parsers, typed lvm calls.
export type * from './types.js';
export * from './command.js';
export * from './report.js';
export * from './volume-groups.js';
export * from './logical-volumes.js';
export * from './thin-pools.js';
export * from './lvm.js';
export * from './device-filter.js';
export * from './vg-state.js';
export * from './thin-snapshots.js';
