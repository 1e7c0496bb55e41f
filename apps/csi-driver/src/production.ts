import { readFile } from 'node:fs/promises';
import { createNodeServices } from '@lvstamp/core';
import type { DriverDeps } from './program.js';

/** The real world: the core on this host, files, signals. */
export async function productionDeps(): Promise<DriverDeps> {
  const pkg = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return {
    version: pkg.version,
    readText: (path) => readFile(path, 'utf8'),
    createCore: ({ lockFile, logger }) =>
      createNodeServices({
        lockFile,
        logger: {
          warn: (message, fields) => {
            logger.warn(fields ?? {}, message);
          },
        },
      }),
    stderr: process.stderr,
    stopSignal: () =>
      new Promise((resolve) => {
        for (const signal of ['SIGTERM', 'SIGINT'] as const) {
          process.once(signal, () => {
            resolve(signal);
          });
        }
      }),
  };
}
