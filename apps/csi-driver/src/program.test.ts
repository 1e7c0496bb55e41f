import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from './log.js';
import { runDriver, type DriverDeps } from './program.js';
import { CONFIG_YAML, FakeCore, FakePaths, LogSink } from './testing/harness.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lvstamp-csi-prog-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function deps(config: string, stop: Promise<string>) {
  const errors: string[] = [];
  const lockFiles: string[] = [];
  const logs = new LogSink();
  const value: DriverDeps = {
    version: '0.1.0',
    readText: (path) =>
      path === 'c.yaml' ? Promise.resolve(config) : Promise.reject(new Error(`ENOENT: ${path}`)),
    createCore: ({ lockFile }) => {
      lockFiles.push(lockFile);
      return new FakeCore();
    },
    paths: new FakePaths(),
    stderr: { write: (text: string) => errors.push(text) },
    createLogger: (level) => createLogger(level, logs),
    stopSignal: () => stop,
  };
  return { value, errors, lockFiles, logs };
}

describe('runDriver', () => {
  it('starts on a unix socket, stops on the signal and removes the socket', async () => {
    const socket = join(dir, 'csi.sock');
    let signal: (name: string) => void = () => undefined;
    const stop = new Promise<string>((resolve) => {
      signal = resolve;
    });
    const d = deps(CONFIG_YAML, stop);
    const running = runDriver(
      [
        '--endpoint',
        `unix://${socket}`,
        '--node-id',
        'n1',
        '--config',
        'c.yaml',
        '--lock-file',
        '/tmp/x.lock',
      ],
      d.value,
    );
    while (
      !(await stat(socket).then(
        () => true,
        () => false,
      ))
    ) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    signal('SIGTERM');
    expect(await running).toBe(0);
    expect(d.lockFiles).toEqual(['/tmp/x.lock']);
    expect(
      await stat(socket).then(
        () => true,
        () => false,
      ),
    ).toBe(false);
    expect(d.logs.lines.map((l) => l.msg)).toEqual(['serving CSI', 'shutting down', 'stopped']);
  });

  it('exits 2 with one line, not a stack trace, when the core cannot be built (a --lock-file not ending in .lock)', async () => {
    const { productionDeps } = await import('./production.js');
    const production = await productionDeps();
    const d = deps(CONFIG_YAML, new Promise(() => undefined));
    const code = await runDriver(
      [
        '--endpoint',
        'unix:///tmp/x.sock',
        '--node-id',
        'n1',
        '--config',
        'c.yaml',
        '--lock-file',
        '/tmp/x',
      ],
      { ...d.value, createCore: production.createCore },
    );
    expect(code).toBe(2);
    expect(d.errors).toEqual([
      'lvstamp-csi: lock path "/tmp/x" must end in .lock: lvstamp creates and removes it as a lock directory\n',
    ]);
  });

  it('exits 2 with one message per configuration mistake', async () => {
    const d = deps(
      'deviceClasses: { a: { volumeGroup: vg0, wipe: shred } }',
      new Promise(() => undefined),
    );
    const code = await runDriver(
      ['--endpoint', 'tcp://127.0.0.1:0', '--node-id', 'n1', '--config', 'c.yaml'],
      d.value,
    );
    expect(code).toBe(2);
    expect(d.errors.join('')).toBe(
      'lvstamp-csi: c.yaml: deviceClasses.a.wipe: wipe must be one of none, discard, zero\n',
    );
  });

  it('exits 2 for a missing flag, a bad endpoint or a bad owner ID', async () => {
    const never = new Promise<string>(() => undefined);
    expect(
      await runDriver(['--node-id', 'n1', '--config', 'c.yaml'], deps(CONFIG_YAML, never).value),
    ).toBe(2);
    const endpoint = deps(CONFIG_YAML, never);
    expect(
      await runDriver(
        ['--endpoint', 'http://x', '--node-id', 'n', '--config', 'c.yaml'],
        endpoint.value,
      ),
    ).toBe(2);
    expect(endpoint.errors.join('')).toContain(
      'endpoint must be unix:///path/to/csi.sock or tcp://host:port',
    );
    const owner = deps(CONFIG_YAML, never);
    const args = [
      '--endpoint',
      'tcp://127.0.0.1:0',
      '--node-id',
      'n',
      '--config',
      'c.yaml',
      '--owner-id',
      'xyz',
    ];
    expect(await runDriver(args, owner.value)).toBe(2);
    expect(owner.errors.join('')).toContain('owner ID must be 32 hex digits');
    const node = deps(CONFIG_YAML, never);
    expect(
      await runDriver(
        ['--endpoint', 'tcp://127.0.0.1:0', '--node-id', 'n1\n', '--config', 'c.yaml'],
        node.value,
      ),
    ).toBe(2);
    expect(node.errors.join('')).toBe(
      'lvstamp-csi: --node-id must not contain control characters (newline, tab, …; found U+000A)\n',
    );
    const empty = deps(CONFIG_YAML, never);
    expect(
      await runDriver(
        ['--endpoint', 'tcp://127.0.0.1:0', '--node-id', '', '--config', 'c.yaml'],
        empty.value,
      ),
    ).toBe(2);
    expect(empty.errors.join('')).toBe(
      'lvstamp-csi: --node-id must name this node (the orchestrator’s node name), got ""\n',
    );
  });
});
