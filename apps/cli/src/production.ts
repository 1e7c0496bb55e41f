import { readFile } from 'node:fs/promises';
import { checkHostCanActivate, createNodeServices, OncePerRunWarnLogger } from '@lvstamp/core';
import type { CliDeps } from './context.js';
import { warningLine } from './output.js';
import type { CliServices, GlobalOptions } from './services.js';

/** The real world: the core on this host, stdout/stderr, the wall clock. */
export async function productionDeps(): Promise<CliDeps> {
  const pkg = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return {
    io: { stdout: process.stdout, stderr: process.stderr },
    env: process.env,
    services: productionServices,
    readText: (path) => (path === '-' ? readStdin() : readFile(path, 'utf8')),
    now: Date.now,
    version: pkg.version,
  };
}

/**
 * The warnings of this command on stderr, each stderr line of lvm once
 * (OncePerRunWarnLogger: a missing PV makes lvm repeat its warning in every
 * command); main.ts writes the count of the rest at the end.
 */
export const cliWarnings = new OncePerRunWarnLogger({
  warn: (message, fields) => process.stderr.write(warningLine(message, fields)),
});

function productionServices(options: GlobalOptions): CliServices {
  const node = createNodeServices({ lockFile: options.lockFile, logger: cliWarnings });
  return {
    volumes: node.volumes,
    snapshots: node.snapshots,
    volumeGroups: node.volumeGroups,
    gc: node.gc,
    quarantine: node.quarantine,
    inspector: node.inspector,
    filesystems: node.filesystems,
    canActivate: async () => {
      const check = await checkHostCanActivate();
      return check.ok
        ? check
        : { ok: false, reason: `${check.reason}; "pnpm demo" runs it in a VM where needed` };
    },
  };
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
