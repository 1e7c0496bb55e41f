// Public surface of @lvstamp/csi-driver: what tests and test-e2e build on.
export * from './capabilities.js';
export * from './config.js';
export * from './controller.js';
export type * from './csi-types.js';
export * from './errors.js';
export * from './identity.js';
export * from './lock.js';
export * from './log.js';
export * from './metrics.js';
export * from './node.js';
export * from './paths.js';
export type * from './ports.js';
export * from './program.js';
export * from './proto.js';
export * from './server.js';
export * from './sizes.js';
export * from './topology.js';
