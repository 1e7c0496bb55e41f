import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { createNodeServices, OncePerRunWarnLogger } from '@lvstamp/core';
import { createKubeApi, loadKubeConfig } from './kube/client.js';
import { createLogger } from './log.js';
import type { GcJobDeps } from './program.js';

/** The real world: the core on this host, the API server, stdout/stderr, the wall clock. */
export async function productionDeps(): Promise<GcJobDeps> {
  const pkg = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    version: pkg.version,
    createKubeApi: (credentials, requestTimeoutMs) =>
      createKubeApi(loadKubeConfig(credentials), { requestTimeoutMs }),
    createGc: ({ lockFile, logger }) =>
      createNodeServices({
        lockFile,
        // Each stderr line of lvm once per run: a missing PV repeats its warning in every command.
        logger: new OncePerRunWarnLogger({
          warn: (message, fields) => {
            logger.warn(fields ?? {}, message);
          },
        }),
      }).gc,
    createLogger,
    now: Date.now,
    sleep: (ms) => sleep(ms),
  };
}
