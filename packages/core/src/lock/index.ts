// Locks: the host lock across processes, and per-volume serialisation in one.
export * from './host-lock.js';
export * from './keyed-mutex.js';
export * from './file-host-lock.js';
