import { lstat, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FailedPreconditionError } from '@lvstamp/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from './log.js';
import { loadRegistrationService } from './proto.js';
import {
  createRegistrationServer,
  registrationVerdict,
  requireSocketPathFlag,
  type RegistrationServer,
} from './registration.js';
import { LogSink } from './testing/harness.js';
import { fakeKubelet, registerLikeKubelet, staleSocket } from './testing/kubelet.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lvstamp-csi-reg-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const HOST_ENDPOINT = '/var/lib/kubelet/plugins/lvstamp.io/csi.sock';

const exists = (path: string) =>
  stat(path).then(
    () => true,
    () => false,
  );

function registration(socketPath: string): { server: RegistrationServer; logs: LogSink } {
  const logs = new LogSink();
  const server = createRegistrationServer({
    socketPath,
    kubeletEndpoint: HOST_ENDPOINT,
    driverName: 'lvstamp.io',
    logger: createLogger('info', logs),
  });
  return { server, logs };
}

/** Whether a promise settles within `ms` milliseconds. */
const settlesWithin = (promise: Promise<unknown>, ms: number) =>
  Promise.race([
    promise.then(() => true),
    new Promise<boolean>((resolve) =>
      setTimeout(() => {
        resolve(false);
      }, ms),
    ),
  ]);

describe('the pluginregistration v1 wire format', () => {
  // Hand-encoded from the kubelet's api.proto field numbers (PluginInfo: type 1, name 2,
  // endpoint 3, supported_versions 4; RegistrationStatus: plugin_registered 1, error 2), so a
  // renumbered field in proto/pluginregistration.proto fails here.
  const field = (number: number, text: string) =>
    Buffer.concat([Buffer.from([(number << 3) | 2, text.length]), Buffer.from(text)]);
  const methods = loadRegistrationService().service;

  it('serves /pluginregistration.Registration/{GetInfo,NotifyRegistrationStatus}', () => {
    expect(Object.values(methods).map((m) => m.path)).toEqual([
      '/pluginregistration.Registration/GetInfo',
      '/pluginregistration.Registration/NotifyRegistrationStatus',
    ]);
  });

  it('writes PluginInfo with the kubelet’s field numbers', () => {
    const bytes = methods.GetInfo?.responseSerialize({
      type: 'CSIPlugin',
      name: 'lvstamp.io',
      endpoint: HOST_ENDPOINT,
      supported_versions: ['1.0.0'],
    });
    expect(bytes).toEqual(
      Buffer.concat([
        field(1, 'CSIPlugin'),
        field(2, 'lvstamp.io'),
        field(3, HOST_ENDPOINT),
        field(4, '1.0.0'),
      ]),
    );
  });

  it('reads RegistrationStatus with the kubelet’s field numbers', () => {
    const bytes = Buffer.concat([Buffer.from([0x08, 0x00]), field(2, 'no handler')]);
    expect(methods.NotifyRegistrationStatus?.requestDeserialize(bytes)).toEqual({
      plugin_registered: false,
      error: 'no handler',
    });
    expect(methods.NotifyRegistrationStatus?.requestDeserialize(Buffer.from([0x08, 0x01]))).toEqual(
      { plugin_registered: true, error: '' },
    );
  });
});

describe('registrationVerdict', () => {
  it('reads registered, and a refusal with the kubelet’s reason (first line; a stand-in when empty)', () => {
    expect(registrationVerdict({ plugin_registered: true, error: '' })).toEqual({
      registered: true,
    });
    expect(
      registrationVerdict({
        plugin_registered: false,
        error: 'RegisterPlugin error -- plugin validation failed with err: x\nmore',
      }),
    ).toEqual({
      registered: false,
      error: 'RegisterPlugin error -- plugin validation failed with err: x',
    });
    expect(registrationVerdict({ plugin_registered: false, error: ' ' })).toEqual({
      registered: false,
      error: 'the kubelet gave no reason',
    });
  });
});

describe('requireSocketPathFlag', () => {
  it.each([
    ['reg.sock', '--registration-socket must be an absolute path, got "reg.sock"'],
    [
      '/registration/../x.sock',
      '--registration-socket must not contain "." or ".." segments, got "/registration/../x.sock"',
    ],
    [
      '/registration/',
      '--registration-socket must name a socket file, not a directory: "/registration/"',
    ],
    [
      '/registration/a\nb.sock',
      '--registration-socket must not contain control characters (newline, tab, …; found U+000A)',
    ],
    [
      `/${'a'.repeat(107)}`,
      '--registration-socket is 108 bytes long; a unix socket path holds at most 107 (unix(7) sun_path)',
    ],
  ])('refuses %j', (value, message) => {
    expect(() => {
      requireSocketPathFlag(value, '--registration-socket');
    }).toThrow(message);
  });

  it('accepts the DaemonSet’s paths', () => {
    requireSocketPathFlag('/registration/lvstamp.io-reg.sock', '--registration-socket');
    requireSocketPathFlag(HOST_ENDPOINT, '--kubelet-registration-path');
    requireSocketPathFlag(`/${'a'.repeat(106)}`, '--registration-socket');
  });
});

describe('createRegistrationServer', () => {
  it('answers the kubelet’s GetInfo with every field and removes its socket at stop', async () => {
    const socket = join(dir, 'lvstamp.io-reg.sock');
    const { server, logs } = registration(socket);
    await server.start();
    expect((await lstat(socket)).isSocket()).toBe(true);
    expect(await registerLikeKubelet(socket)).toEqual({
      info: {
        type: 'CSIPlugin',
        name: 'lvstamp.io',
        endpoint: HOST_ENDPOINT,
        supported_versions: ['1.0.0'],
      },
      notified: {},
    });
    expect(await settlesWithin(server.refused, 50)).toBe(false);
    await server.stop();
    expect(await exists(socket)).toBe(false);
    expect(logs.lines.map((l) => [l.msg, l.endpoint])).toEqual([
      ['serving plugin registration', HOST_ENDPOINT],
      ['the kubelet asked for plugin info', undefined],
      ['registered with the kubelet', HOST_ENDPOINT],
    ]);
  });

  it('answers a refusal, then reports the kubelet’s reason', async () => {
    const socket = join(dir, 'reg.sock');
    const { server, logs } = registration(socket);
    await server.start();
    const kubelet = fakeKubelet(socket);
    try {
      expect(await kubelet.notify(false, 'RegisterPlugin error -- no handler')).toEqual({});
    } finally {
      kubelet.close();
    }
    expect(await server.refused).toBe('RegisterPlugin error -- no handler');
    expect(logs.lines.at(-1)).toMatchObject({
      level: 'error',
      msg: 'the kubelet refused the registration',
      error: 'RegisterPlugin error -- no handler',
    });
    await server.stop();
    expect(await exists(socket)).toBe(false);
  });

  it('replaces a stale socket left by a killed driver', async () => {
    const socket = join(dir, 'reg.sock');
    await staleSocket(socket);
    expect((await lstat(socket)).isSocket()).toBe(true);
    const { server } = registration(socket);
    await server.start();
    const kubelet = fakeKubelet(socket);
    try {
      expect(await kubelet.getInfo()).toMatchObject({ name: 'lvstamp.io' });
    } finally {
      kubelet.close();
      await server.stop();
    }
  });

  it('refuses a path that is not a socket, and leaves it as it was (also at stop)', async () => {
    const file = join(dir, 'reg.sock');
    await writeFile(file, 'not mine');
    const fromFile = registration(file).server;
    await expect(fromFile.start()).rejects.toThrow(
      new FailedPreconditionError(`${file} exists and is not a socket; refusing to replace it`),
    );
    await fromFile.stop();
    expect(await readFile(file, 'utf8')).toBe('not mine');

    const directory = join(dir, 'reg-dir.sock');
    await mkdir(directory);
    const fromDirectory = registration(directory).server;
    await expect(fromDirectory.start()).rejects.toThrow(/exists and is not a socket/);
    await fromDirectory.stop();
    expect((await stat(directory)).isDirectory()).toBe(true);
  });

  it('refuses a socket a live server answers on', async () => {
    const socket = join(dir, 'reg.sock');
    const first = registration(socket).server;
    await first.start();
    try {
      await expect(registration(socket).server.start()).rejects.toThrow(
        `${socket} is in use by a live server`,
      );
      expect((await lstat(socket)).isSocket()).toBe(true);
    } finally {
      await first.stop();
    }
  });
});
