import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createHealthRoute, isSocketFile } from './health.js';
import { parseHttpAddress, serveHttp } from './http.js';
import { createReadinessCheck } from './identity.js';
import { FakeCore, testConfig } from './testing/harness.js';
import { httpGet } from './testing/kubelet.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lvstamp-csi-health-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const READY = () => Promise.resolve({ ready: true } as const);

describe('createHealthRoute', () => {
  it('answers 200 ok when Probe is ready and every socket is there', async () => {
    const route = createHealthRoute({
      readiness: READY,
      sockets: [
        { name: 'CSI socket', path: '/csi/csi.sock' },
        { name: 'registration socket', path: '/registration/r.sock' },
      ],
      isSocket: () => Promise.resolve(true),
    });
    expect(await route()).toEqual({ status: 200, body: 'ok' });
  });

  it('answers 503 naming the first socket that is gone', async () => {
    const present = new Set(['/csi/csi.sock']);
    const route = createHealthRoute({
      readiness: READY,
      sockets: [
        { name: 'CSI socket', path: '/csi/csi.sock' },
        { name: 'registration socket', path: '/registration/r.sock' },
      ],
      isSocket: (path) => Promise.resolve(present.has(path)),
    });
    expect(await route()).toEqual({
      status: 503,
      body: 'registration socket /registration/r.sock is gone',
    });
    present.clear();
    expect(await route()).toEqual({ status: 503, body: 'CSI socket /csi/csi.sock is gone' });
  });

  it('answers 503 with Probe’s reason while a volume group is missing, 200 once it is there', async () => {
    const core = new FakeCore();
    const groups = core.groups;
    core.groups = groups.filter((g) => g.name !== 'vg1');
    const reasons: string[] = [];
    const route = createHealthRoute({
      readiness: createReadinessCheck({
        config: testConfig(),
        core,
        onNotReady: (reason) => reasons.push(reason),
      }),
      sockets: [],
    });
    expect(await route()).toEqual({ status: 503, body: 'not ready: volume group missing: vg1' });
    expect(reasons).toEqual(['volume group missing: vg1']);
    core.groups = groups;
    expect(await route()).toEqual({ status: 200, body: 'ok' });
  });

  it('answers 503 with the first line of the error when Probe fails', async () => {
    const core = new FakeCore();
    core.failNext.set('listVolumeGroups', new Error('vgs exited 5: lvm is broken\nsecond line'));
    const route = createHealthRoute({
      readiness: createReadinessCheck({ config: testConfig(), core }),
      sockets: [],
    });
    expect(await route()).toEqual({
      status: 503,
      body: 'probe failed: vgs exited 5: lvm is broken',
    });
  });
});

describe('isSocketFile', () => {
  it('is true only for a socket', async () => {
    const socket = join(dir, 's.sock');
    const server = createNetServer();
    await new Promise<void>((resolve) => server.listen(socket, resolve));
    try {
      await writeFile(join(dir, 'plain'), '');
      expect(await isSocketFile(socket)).toBe(true);
      expect(await isSocketFile(join(dir, 'plain'))).toBe(false);
      expect(await isSocketFile(dir)).toBe(false);
      expect(await isSocketFile(join(dir, 'missing'))).toBe(false);
    } finally {
      server.close();
    }
  });
});

describe('parseHttpAddress', () => {
  it.each([
    ['0.0.0.0:9808', { host: '0.0.0.0', port: 9808 }],
    [':9808', { host: '0.0.0.0', port: 9808 }],
    ['127.0.0.1:0', { host: '127.0.0.1', port: 0 }],
    ['[::]:9808', { host: '::', port: 9808 }],
    ['localhost:9809', { host: 'localhost', port: 9809 }],
  ])('reads %s', (text, address) => {
    expect(parseHttpAddress(text, '--health-address')).toEqual(address);
  });

  it.each(['9808', '0.0.0.0:65536', '0.0.0.0:', 'http://0.0.0.0:9808', '::1:9808', ''])(
    'refuses %j naming the flag',
    (text) => {
      expect(() => parseHttpAddress(text, '--health-address')).toThrow(
        `--health-address must be host:port (e.g. 0.0.0.0:9808 or :9808), got "${text}"`,
      );
    },
  );
});

describe('serveHttp', () => {
  it('serves its paths (query ignored), 404 for others, 500 with the first line of a failure', async () => {
    const { server, port } = await serveHttp(
      { host: '127.0.0.1', port: 0 },
      {
        '/healthz': () => Promise.resolve({ status: 503, body: 'not ready: x' }),
        '/metrics': () => Promise.reject(new Error('collect failed\nstack')),
      },
    );
    try {
      expect(await httpGet(port, '/healthz?verbose=1')).toEqual({
        status: 503,
        body: 'not ready: x',
      });
      expect(await httpGet(port, '/metrics')).toEqual({
        status: 500,
        body: 'metrics failed: collect failed\n',
      });
      expect(await httpGet(port, '/')).toEqual({ status: 404, body: 'not found\n' });
      expect(await httpGet(port, '/toString')).toEqual({ status: 404, body: 'not found\n' });
    } finally {
      server.close();
    }
  });
});
