// Locks: the host lock (across processes; in one, shared by the work on different volumes) and the driver's per-key mutex.
export * from './host-lock.js';
export * from './keyed-mutex.js';
export * from './file-host-lock.js';
