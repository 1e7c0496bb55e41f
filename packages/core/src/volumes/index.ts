// The volume module: the life cycle of DESIGN.md §5 over the lvm module.
export * from './service.js';
export * from './snapshots.js';
export * from './inspect.js';
export * from './header-reading.js';
export * from './volume-locks.js';
export type * from './header-io.js';
export * from './size.js';
export * from './thin-capacity.js';
export * from './quarantine.js';
