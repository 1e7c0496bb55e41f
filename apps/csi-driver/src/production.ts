import { readFile } from 'node:fs/promises';
import { createNodeServices, ProcessRunner, ObservingRunner } from '@lvstamp/core';
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
        // At debug level every external command is one line: argv, exit code, milliseconds
        // (operators tracing lvm, and the benchmarks counting lvm processes per call).
        runner: logger.isLevelEnabled('debug')
          ? new ObservingRunner(new ProcessRunner(), (event) => {
              logger.debug(
                {
                  argv: event.argv,
                  exitCode: event.exitCode,
                  durationMs: Math.round(event.durationMs),
                },
                'command',
              );
            })
          : new ProcessRunner(),
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
