// LVM device manager: JSON report parsers and the manager over them.
export type * from './types.js';
export type * from './header-io.js';
export * from './report.js';
export * from './manager.js';
export * from './device-filter.js';
export * from './vg-state.js';
