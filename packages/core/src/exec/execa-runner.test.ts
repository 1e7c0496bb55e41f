import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CommandFailedError, CommandTimeoutError, InvalidArgumentError } from '../errors.js';
import { ExecaRunner } from './execa-runner.js';
import { caught } from '../testing/caught.js';

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

describe('ExecaRunner', () => {
  const runner = new ExecaRunner({ timeoutMs: 10_000 });

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
    const withHook = new ExecaRunner({ onStderr: (event) => seen.push(event) });
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

  it('refuses an empty argv with InvalidArgumentError', async () => {
    await expect(runner.run([])).rejects.toBeInstanceOf(InvalidArgumentError);
  });
});
