import { GcService } from '@lvstamp/core';
import { pino } from 'pino';
import type { GcJobDeps } from '../program.js';
import type { KubeApi } from '../kube/api.js';
import type { FakeNode } from './fake-node.js';

/** Deps for `runGc` over a fake API server and a fake node; output captured. */
export function testDeps(
  kube: KubeApi,
  node: FakeNode,
  options: { nowMs: number; env?: Record<string, string> },
): GcJobDeps & { out: () => string; err: () => string; lockFiles: string[] } {
  let out = '';
  let err = '';
  const lockFiles: string[] = [];
  let clock = options.nowMs;
  return {
    stdout: { write: (t: string) => (out += t) },
    stderr: { write: (t: string) => (err += t) },
    env: options.env ?? {},
    version: '0.0.0-test',
    createKubeApi: () => kube,
    createGc: ({ lockFile }) => {
      lockFiles.push(lockFile);
      return new GcService({ ports: node.ports(), clock: () => clock });
    },
    createLogger: () => pino({ level: 'silent' }),
    now: () => clock,
    sleep: (ms) => {
      clock += ms;
      return Promise.resolve();
    },
    out: () => out,
    err: () => err,
    lockFiles,
  };
}
