// The volume module: the life cycle of DESIGN.md §5 over the lvm module.
export type * from './types.js';
export * from './service.js';
export * from './snapshot-service.js';
export { ThickVolumeError } from './source.js';
export type { ExpandOptions } from './expand.js';
export type { RemovableLv } from './delete.js';
export { WIPE_POLICIES, WIPE_STRENGTH, strongestWipe } from './wipe.js';
export type { WipeTarget } from './wipe.js';
export * from './inspect.js';
export * from './header-reading.js';
export type * from './header-io.js';
export * from './size.js';
export * from './thin-capacity.js';
export * from './quarantine.js';
export type { QuarantinedLook } from './quarantine-lookup.js';
export type { QuarantinedLv } from './quarantine-list.js';
export type { RestoredLv } from './quarantine-restore.js';
