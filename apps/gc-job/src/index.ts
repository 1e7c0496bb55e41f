// Public surface of @lvstamp/gc-job: the program and its parts, for tests and the e2e suite.
export { buildProgram, runGc, type GcJobDeps, type Output } from './program.js';
export * from './config.js';
export * from './errors.js';
export type * from './kube/api.js';
export {
  createKubeApi,
  loadKubeConfig,
  toKubeApiError,
  type KubeCredentials,
} from './kube/client.js';
export { buildLiveSet, listAll, type LiveSet } from './live-set.js';
export * from './node-run.js';
export * from './cluster-run.js';
export * from './jobs.js';
export { renderClusterReport, renderNodeReport } from './report.js';
export { createLogger } from './log.js';
