import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CSI_PROTO } from './driver.js';
import { loadClients, ServerProcess, unaryCall, waitUntilReady } from './grpc-child.js';

describe('loadClients', () => {
  it('makes one client per service of the dotted package', () => {
    const clients = loadClients(CSI_PROTO, 'csi.v1', ['Identity', 'Node'], 'unix:///nonexistent');
    expect(Object.keys(clients)).toEqual(['Identity', 'Node']);
    expect(() => unaryCall(clients.Identity, 'csi.v1.Identity', 'NoSuchMethod', {}, 1_000)).toThrow(
      'csi.v1.Identity has no method NoSuchMethod',
    );
    for (const client of Object.values(clients)) client.close();
  });

  it('names a service the proto does not have', () => {
    expect(() => loadClients(CSI_PROTO, 'csi.v1', ['Nope'], 'unix:///nonexistent')).toThrow(
      `${CSI_PROTO} has no service csi.v1.Nope`,
    );
  });
});

describe('ServerProcess and waitUntilReady', () => {
  it('hands over every output line, the last one without a newline too', async () => {
    const lines: string[] = [];
    const server = new ServerProcess(
      process.execPath,
      ['-e', 'process.stdout.write("a\\nb"); process.stderr.write("c\\n")'],
      (line, stream) => lines.push(`${stream}:${line}`),
    );
    expect(await server.exited).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(lines.sort()).toEqual(['stderr:c', 'stdout:a', 'stdout:b']);
  });

  it('fails with the output when the process exits before it is ready', async () => {
    const server = new ServerProcess(process.execPath, ['-e', 'process.exit(3)'], () => {});
    await expect(
      waitUntilReady(
        server,
        'server',
        () => Promise.resolve(false),
        () => 'its output',
      ),
    ).rejects.toThrow('server exited 3 before it was ready:\nits output');
  });

  it('says why a program could not be started, and stop() does not wait for it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lvstamp-bench-noexec-'));
    try {
      const program = join(dir, 'not-executable');
      writeFileSync(program, '#!/bin/sh\nexit 0\n', { mode: 0o644 });
      const server = new ServerProcess(program, [], () => {});
      expect(await server.exited).toBeNull();
      await expect(
        waitUntilReady(
          server,
          'lvmd',
          () => Promise.resolve(false),
          () => '',
        ),
      ).rejects.toThrow(`lvmd could not be started: spawn ${program} EACCES`);
      expect(await server.stop()).toBeNull();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
