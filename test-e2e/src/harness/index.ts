// The e2e harness: loop-backed VGs with guaranteed cleanup, the CLI runner, plain commands.
export { CleanupRegistry, cleanups, installCleanupHooks } from './cleanup.js';
export {
  TEST_VG_PREFIX,
  adoptLoopVg,
  assertOwnedVg,
  createLoopVg,
  createTempDir,
  loopDevicesOf,
  mountPoints,
  mounts,
  newTestVgName,
  parseDmTable,
  teardownLoopVg,
  unmountUnder,
  vgExists,
  type DmTableLine,
  type LoopVg,
  type LoopVgOptions,
  type MountEntry,
} from './loop-vg.js';
export { CLI_MAIN, REPO_ROOT, runCli, runCliJson, type CliOptions, type CliResult } from './cli.js';
export { sh, shOk, type ShOptions, type ShResult } from './sh.js';
export { hasDeviceMapperAndRoot } from './environment.js';
