import { readFile } from 'node:fs/promises';
import { checkHostCanActivate, createNodeServices } from '@lvstamp/core';
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

function productionServices(options: GlobalOptions): CliServices {
  const node = createNodeServices({
    lockFile: options.lockFile,
    logger: {
      warn: (message, fields) => process.stderr.write(warningLine(message, fields)),
    },
  });
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
