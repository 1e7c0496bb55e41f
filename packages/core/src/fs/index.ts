// Filesystem helpers: probe, format, mount/unmount, grow, usage (DESIGN.md §1, after kubernetes/mount-utils).
export type { FsType, ProbeResult } from './types.js';
export { FS_TYPES } from './types.js';
export { FilesystemManager } from './filesystem.js';
export { FREEZE_TIMEOUT_MS, thaw, withFrozen } from './freeze.js';
