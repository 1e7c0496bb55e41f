// Public surface of @lvstamp/core. Each area re-exports its own index.
export * from './errors.js';
export * from './naming.js';
export type * from './exec/runner.js';
export type * from './lvm/types.js';
export type * from './header/types.js';
export type * from './device/types.js';
