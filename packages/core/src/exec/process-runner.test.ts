import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CommandFailedError, CommandTimeoutError, InvalidArgumentError } from '../errors.js';
import { ProcessRunner } from './process-runner.js';
import { caught } from '../testing/caught.js';
import { coreWorker } from '../testing/lock-worker.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('ProcessRunner', () => {
  const runner = new ProcessRunner({ timeoutMs: 10_000 });

  it('returns exit 0 with stdout and stderr as printed', async () => {
    const result = await runner.run(['true']);
    expect(result).toEqual({ argv: ['true'], exitCode: 0, stdout: '', stderr: '' });
  });

  it('passes argv through without a shell', async () => {
    const result = await runner.run(['printf', '%s|', 'a b', '$HOME', '; echo no']);
    expect(result.stdout).toBe('a b|$HOME|; echo no|');
  });

  it('throws CommandFailedError with argv and exit code on `false`', async () => {
    const error = await caught(runner.run(['false']));
    expect(error).toBeInstanceOf(CommandFailedError);
    expect(error).not.toBeInstanceOf(CommandTimeoutError);
    expect(error).toMatchObject({ argv: ['false'], exitCode: 1, stdout: '', stderr: '' });
  });

  it('carries stdout, stderr and the code of a failing command', async () => {
    const argv = ['sh', '-c', 'echo out; echo x >&2; exit 3'];
    const error = await caught(runner.run(argv));
    expect(error).toBeInstanceOf(CommandFailedError);
    expect(error).toMatchObject({ argv, exitCode: 3, stdout: 'out\n', stderr: 'x\n' });
    expect((error as Error).message).toBe('sh -c echo out; echo x >&2; exit 3 exited 3: x');
  });

  it('honours allowExitCodes', async () => {
    const result = await runner.run(['sh', '-c', 'exit 2'], { allowExitCodes: [2] });
    expect(result.exitCode).toBe(2);
  });

  it('sets LC_ALL=C and LVM_SUPPRESS_FD_WARNINGS=1 over the environment', async () => {
    const result = await runner.run([
      'sh',
      '-c',
      'echo "$LC_ALL/$LVM_SUPPRESS_FD_WARNINGS/${PATH:+path}"',
    ]);
    expect(result.stdout).toBe('C/1/path\n');
  });

  it('closes stdin, so a prompt reads EOF instead of hanging', async () => {
    const result = await runner.run([
      'sh',
      '-c',
      'if read answer; then echo got; else echo eof; fi',
    ]);
    expect(result.stdout).toBe('eof\n');
  });

  it('gives the child /dev/null as stdin and pipes as stdout and stderr', async () => {
    const result = await runner.run([
      'sh',
      '-c',
      'readlink /proc/self/fd/0 /proc/self/fd/1 /proc/self/fd/2',
    ]);
    const [stdin, stdout, stderr] = result.stdout.split('\n');
    expect(stdin).toBe('/dev/null');
    expect(stdout).toMatch(/^pipe:|^socket:/);
    expect(stderr).toMatch(/^pipe:|^socket:/);
  });

  it('maps a missing program to CommandFailedError with exitCode null and the message in stderr', async () => {
    const error = await caught(runner.run(['/nonexistent/lvstamp-no-such-program', '-x']));
    expect(error).toBeInstanceOf(CommandFailedError);
    expect(error).toMatchObject({
      argv: ['/nonexistent/lvstamp-no-such-program', '-x'],
      exitCode: null,
    });
    expect((error as CommandFailedError).stderr).toContain('ENOENT');
  });

  it('kills a command past its deadline with CommandTimeoutError, and the process is dead', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lvstamp-exec-'));
    dirs.push(dir);
    const pidFile = join(dir, 'pid');
    const argv = ['sh', '-c', `echo $$ > ${pidFile}; exec sleep 5`];
    const started = Date.now();
    const error = await caught(runner.run(argv, { timeoutMs: 100 }));
    expect(Date.now() - started).toBeLessThan(3000);
    expect(error).toBeInstanceOf(CommandTimeoutError);
    expect(error).toMatchObject({ argv, exitCode: null, timeoutMs: 100, kind: 'timed-out' });
    const pid = Number(readFileSync(pidFile, 'utf8').trim());
    expect(pid).toBeGreaterThan(0);
    expect(isAlive(pid)).toBe(false);
  });

  it('reports stderr of a successful run through onStderr', async () => {
    const seen: unknown[] = [];
    const withHook = new ProcessRunner({ onStderr: (event) => seen.push(event) });
    await withHook.run(['sh', '-c', 'echo "  WARNING: something" >&2']);
    await withHook.run(['true']);
    expect(seen).toEqual([
      {
        argv: ['sh', '-c', 'echo "  WARNING: something" >&2'],
        exitCode: 0,
        stderr: '  WARNING: something\n',
      },
    ]);
  });

  it('kills a command whose output passes maxOutputBytes, and fails it', async () => {
    const small = new ProcessRunner({ timeoutMs: 10_000, maxOutputBytes: 1000 });
    const argv = ['sh', '-c', 'head -c 5000 /dev/zero; exec sleep 5'];
    const started = Date.now();
    const error = await caught(small.run(argv));
    expect(Date.now() - started).toBeLessThan(4000);
    expect(error).toBeInstanceOf(CommandFailedError);
    expect(error).not.toBeInstanceOf(CommandTimeoutError);
    expect(error).toMatchObject({ argv, exitCode: null });
    expect((error as CommandFailedError).stderr).toBe('stdout exceeded 1000 bytes');
  });

  it('fails a command that exited 0 after printing more than maxOutputBytes', async () => {
    const small = new ProcessRunner({ maxOutputBytes: 1000 });
    const error = await caught(small.run(['head', '-c', '5000', '/dev/zero']));
    expect(error).toMatchObject({ exitCode: null, stderr: 'stdout exceeded 1000 bytes' });
  });

  it('decodes UTF-8 whole when a character spans two reads', async () => {
    // 6-byte lines written in large blocks: reads of 64 KiB (not a multiple of 6) split characters.
    const result = await runner.run(['sh', '-c', 'yes \u00e9\u20ac | head -c 300000']);
    expect(result.stdout).toBe('\u00e9\u20ac\n'.repeat(50000));
  });

  it('ends a call at its deadline even while a background child holds its stdout open', async () => {
    const started = Date.now();
    const error = await caught(
      runner.run(['sh', '-c', 'sleep 5 & echo started'], { timeoutMs: 300 }),
    );
    expect(Date.now() - started).toBeLessThan(3000);
    expect(error).toBeInstanceOf(CommandTimeoutError);
  });

  it('refuses an argument with a NUL byte as CommandFailedError, nothing started', async () => {
    const error = await caught(runner.run(['printf', 'a\0b']));
    expect(error).toBeInstanceOf(CommandFailedError);
    expect(error).toMatchObject({ exitCode: null });
    expect((error as CommandFailedError).stderr).toContain('null bytes');
  });

  it('refuses a maxOutputBytes that is not a positive integer', () => {
    expect(() => new ProcessRunner({ maxOutputBytes: 0 })).toThrow(InvalidArgumentError);
  });

  it('a spawn that fails for lack of file descriptors (EMFILE) is CommandFailedError at once: no hang, no crash', async () => {
    const worker = coreWorker(
      `import { spawnSync } from 'node:child_process';
import { openSync } from 'node:fs';
import { ProcessRunner } from './exec/process-runner.js';
if (process.argv[2] !== 'child') {
  // the same script under a low descriptor limit (a shell's ulimit; Node cannot lower its own)
  const me = new URL(import.meta.url).pathname;
  const run = spawnSync('sh', ['-c', 'ulimit -n 64 && exec "$0" "$1" child', process.execPath, me], { stdio: 'inherit' });
  process.exit(run.status ?? 9);
}
try {
  for (;;) openSync('/dev/null', 'r');
} catch (error) {
  if (error.code !== 'EMFILE') throw error;
}
const started = Date.now();
try {
  await new ProcessRunner({ timeoutMs: 20000 }).run(['true']);
  console.error('ran');
  process.exit(4);
} catch (error) {
  const ok = error.name === 'CommandFailedError' && error.exitCode === null && error.stderr.includes('EMFILE');
  console.error(error.name, error.exitCode, error.stderr, Date.now() - started, 'ms');
  process.exit(ok && Date.now() - started < 5000 ? 0 : 5);
}
`,
      ['errors.ts', 'exec/outcome.ts', 'exec/process-runner.ts'],
    );
    try {
      const { code, stderr } = await worker.run([]);
      expect(code, stderr).toBe(0);
    } finally {
      worker.remove();
    }
  });

  it('kills the commands still running when this process exits', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lvstamp-exec-'));
    dirs.push(dir);
    const pidFile = join(dir, 'pid');
    const worker = coreWorker(
      `import { existsSync } from 'node:fs';
import { ProcessRunner } from './exec/process-runner.js';
void new ProcessRunner().run(['sh', '-c', 'echo $$ > ${pidFile}.tmp; mv ${pidFile}.tmp ${pidFile}; exec sleep 60']);
const started = Date.now();
while (!existsSync('${pidFile}')) {
  if (Date.now() - started > 30000) process.exit(3);
  await new Promise((resolve) => setTimeout(resolve, 20));
}
process.exit(0);
`,
      ['errors.ts', 'exec/outcome.ts', 'exec/process-runner.ts'],
    );
    try {
      expect(await worker.run([])).toMatchObject({ code: 0 });
    } finally {
      worker.remove();
    }
    expect(existsSync(pidFile)).toBe(true);
    const pid = Number(readFileSync(pidFile, 'utf8').trim());
    const deadline = Date.now() + 5000;
    while (isAlive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(isAlive(pid)).toBe(false);
  });

  it('refuses an empty argv with InvalidArgumentError', async () => {
    await expect(runner.run([])).rejects.toBeInstanceOf(InvalidArgumentError);
  });
});
