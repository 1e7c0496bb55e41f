// Child processes for tests: "another process" taking the same host lock file (lock/*.test.ts), or
// a process that exits while the command runner's children run (exec/process-runner.test.ts).
// Node cannot run TypeScript, so the modules a worker imports are transpiled into a temporary
// directory beside its script.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const SRC = fileURLToPath(new URL('../', import.meta.url));
const CORE = fileURLToPath(new URL('../../', import.meta.url));

/** A worker script beside transpiled core modules, ready to run. */
export interface LockWorker {
  /** Runs the script with `args`; exit code (null: killed after 60 s) and stderr. */
  run(args: readonly string[]): Promise<{ code: number | null; stderr: string }>;
  /** Removes the temporary directory. */
  remove(): void;
}

/**
 * Writes the transpiled lock module and `script` (an ES module whose
 * imports are relative to `src/`, e.g. `./lock/file-host-lock.js`) into a
 * new temporary directory.
 */
export function lockWorker(script: string): LockWorker {
  return coreWorker(script, [
    'errors.ts',
    'naming.ts',
    'lock/file-host-lock.ts',
    'lock/lock-directory.ts',
    'os/errno.ts',
  ]);
}

/**
 * As lockWorker, with the given `src/` files (each with every module it
 * imports for its values) transpiled instead.
 */
export function coreWorker(script: string, files: readonly string[]): LockWorker {
  const dir = mkdtempSync(join(tmpdir(), 'lvstamp-core-worker-'));
  for (const file of files) {
    const source = readFileSync(join(SRC, file), 'utf8');
    const output = ts.transpileModule(source, {
      compilerOptions: {
        module: ts.ModuleKind.ESNext,
        target: ts.ScriptTarget.ES2022,
        verbatimModuleSyntax: true,
      },
    }).outputText;
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file.replace(/\.ts$/, '.js')), output);
  }
  writeFileSync(join(dir, 'package.json'), '{"type":"module"}');
  symlinkSync(join(CORE, 'node_modules'), join(dir, 'node_modules'));
  const worker = join(dir, 'worker.js');
  writeFileSync(worker, script);
  return {
    run: (args) =>
      new Promise((resolve) => {
        execFile(
          process.execPath,
          [worker, ...args],
          { timeout: 60_000 },
          (error, _stdout, stderr) => {
            const code = error === null ? 0 : typeof error.code === 'number' ? error.code : null;
            resolve({ code, stderr });
          },
        );
      }),
    remove: () => {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
