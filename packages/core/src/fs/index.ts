// Filesystem helpers: probe, format, mount/unmount, grow, usage (DESIGN.md §1, STYLE.md mount-utils).
export * from './types.js';
export {
  DEFAULT_MOUNTINFO_PATH,
  isReadonlyMount,
  mountsAt,
  parseMountInfo,
  readMountInfo,
} from './mountinfo.js';
export {
  DEFAULT_FS_COMMAND_TIMEOUT_MS,
  FilesystemManager,
  mkfsArgv,
  parseBlkidExport,
  usageFromStatfs,
  type FilesystemManagerOptions,
  type StatfsFields,
} from './filesystem.js';
