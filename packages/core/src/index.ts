// Public surface of @lvstamp/core. Each area re-exports its own index.
export * from './errors.js';
export * from './naming.js';
export type * from './exec/runner.js';
export type * from './lvm/types.js';
export * from './gc/index.js';
export * from './header/index.js';
export * from './device/index.js';
export * from './fs/index.js';
// gc/types.ts and device/types.ts both declare the same { major, minor } shape.
export type { DeviceNumber } from './device/index.js';
export * from './exec/index.js';
export * from './lock/index.js';
export * from './lvm/index.js';
export * from './vg/index.js';
export * from './volumes/index.js';
export * from './node.js';
