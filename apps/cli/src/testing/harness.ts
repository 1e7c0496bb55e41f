import { runCli, type CliDeps } from '../program.js';
import type { CliServices } from '../services.js';

/**
 * The CLI in-process with fake services: captured stdout and stderr, a
 * fixed clock (1,700,000,000,000 ms), the given environment, and the global options each build saw.
 */
export function harness(
  services: Partial<CliServices> = {},
  readText?: CliDeps['readText'],
  env: CliDeps['env'] = {},
) {
  const out: string[] = [];
  const err: string[] = [];
  const built: unknown[] = [];
  const deps: CliDeps = {
    io: {
      stdout: { write: (t: string) => out.push(t) },
      stderr: { write: (t: string) => err.push(t) },
    },
    env,
    services: (options) => {
      built.push(options);
      // every group a test names with --vg exists unless the test says otherwise
      const volumes = { requireVolumeGroups: () => Promise.resolve(), ...services.volumes };
      return { ...services, volumes } as CliServices;
    },
    readText: readText ?? (() => Promise.reject(new Error('ENOENT: no such file'))),
    now: () => 1_700_000_000_000,
    version: '0.1.0-test',
  };
  return {
    run: (...argv: string[]) => runCli(argv, deps),
    stdout: () => out.join(''),
    stderr: () => err.join(''),
    built,
  };
}

/**
 * What `gc.plan` answers in tests about argument parsing: a dry plan with
 * no entry, in vg0.
 */
export function emptyGcPlanAnswer() {
  return Promise.resolve({
    plan: { dryRun: true, capped: false, entries: [] },
    vgNames: ['vg0'],
    activated: [],
  });
}
