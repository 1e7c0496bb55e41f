import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { createLogger } from './log.js';
import { resolveOwnerId, runDriver, type DriverDeps } from './program.js';
import { CONFIG_YAML, FakeCore, FakePaths, LogSink } from './testing/harness.js';
import { fakeKubelet, httpGet, registerLikeKubelet, staleSocket } from './testing/kubelet.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lvstamp-csi-prog-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const OWNER = 'ab'.repeat(16);
/** An endpoint and a valid owner ID: the flags every start below needs besides its subject. */
const START = ['--endpoint', 'tcp://127.0.0.1:0', '--owner-id', OWNER];
/** The fix every owner-ID refusal names. */
const FIX =
  'generate one per cluster with `openssl rand -hex 16` and set it with --owner-id or LVSTAMP_OWNER_ID ' +
  '(Kubernetes: owner-id in the ConfigMap lvstamp-csi-config, README "Deploying on a cluster", step 3)';

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
        '--owner-id',
        OWNER,
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

  it('names at start each thick device class that deletes without a wipe (DESIGN.md §5 "Wipe")', async () => {
    let signal: (name: string) => void = () => undefined;
    const stop = new Promise<string>((resolve) => {
      signal = resolve;
    });
    const d = deps(
      `deviceClasses:
  plain: { volumeGroup: vg0, wipe: none, default: true }
  wiped: { volumeGroup: vg1, wipe: discard }
  thin: { volumeGroup: vg1, type: thin, thinPool: pool0, overprovisionRatio: 2, wipe: none }
`,
      stop,
    );
    const running = runDriver([...START, '--node-id', 'n1', '--config', 'c.yaml'], d.value);
    while (!d.logs.lines.some((l) => l.msg === 'serving CSI')) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    signal('SIGTERM');
    expect(await running).toBe(0);
    const warnings = d.logs.lines.filter((l) => l.level === 'warn');
    expect(warnings.map((l) => [l.msg, l.deviceClass, l.volumeGroup])).toEqual([
      [
        'device class deletes without a wipe: the next volume on the same extents can read the old blocks (docs/DESIGN.md §5 "Wipe"; set wipe: discard or zero)',
        'plain',
        'vg0',
      ],
    ]);
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
        '--owner-id',
        OWNER,
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
      ['--endpoint', 'tcp://127.0.0.1:0', '--node-id', 'n1', '--config', 'c.yaml', '--standalone'],
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
    expect(owner.errors.join('')).toBe(
      `lvstamp-csi: the owner ID must be 32 hex digits, got "xyz": ${FIX}\n`,
    );
    const node = deps(CONFIG_YAML, never);
    expect(await runDriver([...START, '--node-id', 'n1\n', '--config', 'c.yaml'], node.value)).toBe(
      2,
    );
    expect(node.errors.join('')).toBe(
      'lvstamp-csi: --node-id must not contain control characters (newline, tab, …; found U+000A)\n',
    );
    const empty = deps(CONFIG_YAML, never);
    expect(await runDriver([...START, '--node-id', '', '--config', 'c.yaml'], empty.value)).toBe(2);
    expect(empty.errors.join('')).toBe(
      'lvstamp-csi: --node-id must name this node (the orchestrator’s node name), got ""\n',
    );
  });

  describe('the owner ID (DESIGN.md §3 "Owner ID")', () => {
    const never = new Promise<string>(() => undefined);
    const base = ['--endpoint', 'tcp://127.0.0.1:0', '--node-id', 'n1', '--config', 'c.yaml'];
    /** Runs with `args` after `base` and an environment without LVSTAMP_OWNER_ID. */
    async function refused(args: string[], env: Record<string, string> = {}) {
      const d = deps(CONFIG_YAML, never);
      // The owner ID and whether this is a pod come from env alone (CI may itself run in a pod).
      const saved = { ...process.env };
      delete process.env.LVSTAMP_OWNER_ID;
      delete process.env.KUBERNETES_SERVICE_HOST;
      Object.assign(process.env, env);
      try {
        return { code: await runDriver([...base, ...args], d.value), d };
      } finally {
        process.env = saved;
      }
    }

    it('refuses the standalone ID (32 zeros) without --standalone: exit 2, the fix named, no core built, nothing logged', async () => {
      for (const [args, env] of [
        [['--owner-id', '0'.repeat(32)], {}],
        [[], { LVSTAMP_OWNER_ID: '0'.repeat(32) }],
      ] as const) {
        const { code, d } = await refused([...args], env);
        expect(code).toBe(2);
        expect(d.errors).toEqual([
          'lvstamp-csi: refusing the standalone owner ID (32 zeros) without --standalone: it is the owner of ' +
            "volumes made by hand with `lvstamp create`, which this installation's GC would remove " +
            `as orphans; ${FIX}\n`,
        ]);
        expect(d.lockFiles).toEqual([]);
        expect(d.logs.lines).toEqual([]);
      }
    });

    it('refuses to start without an owner ID, naming the fix', async () => {
      const { code, d } = await refused([]);
      expect(code).toBe(2);
      expect(d.errors).toEqual([
        `lvstamp-csi: no owner ID: ${FIX}; or pass --standalone on a node without a cluster\n`,
      ]);
      expect(d.lockFiles).toEqual([]);
    });

    it('refuses the placeholder the kustomize base ships, naming the README step', async () => {
      const shipped = parse(
        await readFile(
          new URL('../../../deploy/kubernetes/configmap-driver.yaml', import.meta.url),
          'utf8',
        ),
      ) as { data: Record<string, string> };
      const placeholder = shipped.data['owner-id'] ?? '';
      const { code, d } = await refused([], { LVSTAMP_OWNER_ID: placeholder });
      expect(code).toBe(2);
      expect(d.errors).toEqual([
        `lvstamp-csi: the owner ID must be 32 hex digits, got "${placeholder}": ${FIX}\n`,
      ]);
      expect(d.lockFiles).toEqual([]);
    });

    it('--standalone: the standalone ID by default or given, and refused beside another ID', async () => {
      expect(resolveOwnerId(undefined, true)).toBe('0'.repeat(32));
      expect(resolveOwnerId('0'.repeat(32), true)).toBe('0'.repeat(32));
      expect(resolveOwnerId('AB'.repeat(16), false)).toBe('ab'.repeat(16));
      expect(() => resolveOwnerId('ab'.repeat(16), true)).toThrow(
        `--standalone runs with the standalone owner ID (32 zeros), got --owner-id ${'ab'.repeat(16)}: drop one of the two`,
      );
      const { code, d } = await refused(['--standalone', '--owner-id', OWNER]);
      expect(code).toBe(2);
      expect(d.lockFiles).toEqual([]);
    });

    it('refuses --standalone in a Kubernetes pod (KUBERNETES_SERVICE_HOST set), whatever the ID', async () => {
      expect(() => resolveOwnerId(undefined, true, true)).toThrow(
        `--standalone is for a node without a cluster, but this driver runs in a Kubernetes pod (KUBERNETES_SERVICE_HOST is set): ${FIX}`,
      );
      expect(resolveOwnerId('ab'.repeat(16), false, true)).toBe('ab'.repeat(16));
      const { code, d } = await refused(['--standalone'], { KUBERNETES_SERVICE_HOST: '10.96.0.1' });
      expect(code).toBe(2);
      expect(d.errors).toEqual([
        `lvstamp-csi: --standalone is for a node without a cluster, but this driver runs in a Kubernetes pod (KUBERNETES_SERVICE_HOST is set): ${FIX}\n`,
      ]);
      expect(d.lockFiles).toEqual([]);
    });
  });
});

describe('runDriver: kubelet registration and /healthz (no sidecars)', () => {
  const HOST_ENDPOINT = '/var/lib/kubelet/plugins/lvstamp.io/csi.sock';
  const never = new Promise<string>(() => undefined);
  const exists = (path: string) =>
    stat(path).then(
      () => true,
      () => false,
    );
  async function until(check: () => Promise<boolean>): Promise<void> {
    while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 10));
  }
  /** The flags every start below needs, the CSI socket in the temp directory. */
  const base = (csi: string) => [
    '--endpoint',
    `unix://${csi}`,
    '--node-id',
    'n1',
    '--config',
    'c.yaml',
    '--owner-id',
    OWNER,
  ];
  /** The flags of the DaemonSet's driver container, in a temp directory. */
  const args = (csi: string, registration: string, extra: string[] = []) => [
    ...base(csi),
    '--registration-socket',
    registration,
    '--kubelet-registration-path',
    HOST_ENDPOINT,
    ...extra,
  ];
  const portOf = (logs: LogSink, msg: string) =>
    Number(logs.lines.find((line) => line.msg === msg)?.port);
  /** Starts the driver with the DaemonSet's flags (and `extra`) until its stop signal. */
  function start(extra: string[] = [], registrationName = 'reg.sock') {
    const csi = join(dir, 'csi.sock');
    const registration = join(dir, registrationName);
    let signal: (name: string) => void = () => undefined;
    const d = deps(
      CONFIG_YAML,
      new Promise<string>((resolve) => {
        signal = resolve;
      }),
    );
    const running = runDriver(args(csi, registration, extra), d.value);
    return {
      csi,
      registration,
      d,
      running,
      stop: () => {
        signal('SIGTERM');
      },
    };
  }

  it('creates the registration socket after the CSI socket listens, answers the kubelet, serves /healthz and removes both sockets at SIGTERM', async () => {
    const { csi, registration, d, running, stop } = start(
      ['--health-address', '127.0.0.1:0'],
      'lvstamp.io-reg.sock',
    );
    await until(() => exists(registration));
    expect(d.logs.lines.map((l) => l.msg)).toEqual([
      'serving CSI',
      'serving health checks',
      'serving plugin registration',
    ]);
    // Every field is checked in registration.test.ts; here, the flags reach the answer.
    expect(await registerLikeKubelet(registration)).toMatchObject({
      info: { name: 'lvstamp.io', endpoint: HOST_ENDPOINT },
      notified: {},
    });
    const port = portOf(d.logs, 'serving health checks');
    expect(await httpGet(port, '/healthz')).toEqual({ status: 200, body: 'ok' });
    expect((await httpGet(port, '/metrics')).status).toBe(404);
    stop();
    expect(await running).toBe(0);
    expect(await exists(registration)).toBe(false);
    expect(await exists(csi)).toBe(false);
    expect(d.logs.lines.map((l) => l.msg).slice(3)).toEqual([
      'the kubelet asked for plugin info',
      'registered with the kubelet',
      'shutting down',
      'stopped',
    ]);
  });

  it('/healthz answers 503 once the registration socket is gone; metrics share its server when the addresses are equal', async () => {
    const { registration, d, running, stop } = start([
      '--health-address',
      '127.0.0.1:0',
      '--metrics-address',
      '127.0.0.1:0',
    ]);
    await until(() => exists(registration));
    const port = portOf(d.logs, 'serving health checks');
    expect(portOf(d.logs, 'serving metrics')).toBe(port);
    expect((await httpGet(port, '/metrics')).body).toContain(
      'lvstamp_volumes{device_class="fast"}',
    );
    expect(await httpGet(port, '/healthz')).toEqual({ status: 200, body: 'ok' });
    await rm(registration);
    expect(await httpGet(port, '/healthz')).toEqual({
      status: 503,
      body: `registration socket ${registration} is gone`,
    });
    stop();
    expect(await running).toBe(0);
  });

  it('exits 1 when the kubelet refuses the registration: answers it, logs its reason, removes both sockets', async () => {
    const csi = join(dir, 'csi.sock');
    const registration = join(dir, 'reg.sock');
    const d = deps(CONFIG_YAML, never);
    const running = runDriver(args(csi, registration), d.value);
    await until(() => exists(registration));
    const kubelet = fakeKubelet(registration);
    try {
      expect(
        await kubelet.notify(
          false,
          'RegisterPlugin error -- plugin validation failed with err: highest supported version',
        ),
      ).toEqual({});
    } finally {
      kubelet.close();
    }
    expect(await running).toBe(1);
    expect(await exists(registration)).toBe(false);
    expect(await exists(csi)).toBe(false);
    expect(d.logs.lines.filter((l) => l.level === 'error')).toMatchObject([
      {
        msg: 'the kubelet refused the registration',
        error:
          'RegisterPlugin error -- plugin validation failed with err: highest supported version',
      },
      {
        msg: 'shutting down: the kubelet refused the registration',
        error:
          'RegisterPlugin error -- plugin validation failed with err: highest supported version',
      },
    ]);
    expect(d.logs.lines.at(-1)?.msg).toBe('stopped');
  });

  // The CSI path refused: the registration socket is never made (it comes only after the CSI
  // socket listens). The registration path refused: the CSI socket it made is removed. Either
  // way the file that is not a socket is left as it was.
  it.each([
    ['csi.sock', 'reg.sock', ['stopped']],
    ['reg.sock', 'csi.sock', ['serving CSI', 'stopped']],
  ])(
    'exits 1 when %s is not a socket, leaving it as it was; %s is not left behind',
    async (refused, other, messages) => {
      const csi = join(dir, 'csi.sock');
      const registration = join(dir, 'reg.sock');
      await writeFile(join(dir, refused), 'not a socket');
      const d = deps(CONFIG_YAML, never);
      expect(await runDriver(args(csi, registration), d.value)).toBe(1);
      expect(d.errors).toEqual([
        `lvstamp-csi: cannot start: ${join(dir, refused)} exists and is not a socket; refusing to replace it\n`,
      ]);
      expect(await readFile(join(dir, refused), 'utf8')).toBe('not a socket');
      expect(await exists(join(dir, other))).toBe(false);
      expect(d.logs.lines.map((l) => l.msg)).toEqual(messages);
    },
  );

  it('replaces a stale registration socket left by a killed driver', async () => {
    await staleSocket(join(dir, 'reg.sock'));
    const { registration, d, running, stop } = start();
    await until(() =>
      Promise.resolve(d.logs.lines.some((l) => l.msg === 'serving plugin registration')),
    );
    expect((await registerLikeKubelet(registration)).info).toMatchObject({
      endpoint: HOST_ENDPOINT,
    });
    stop();
    expect(await running).toBe(0);
  });

  it.each([
    [
      ['--registration-socket', '/registration/r.sock'],
      '--registration-socket needs --kubelet-registration-path (the CSI socket’s path on the host, as the kubelet dials it)',
    ],
    [
      ['--kubelet-registration-path', HOST_ENDPOINT],
      '--kubelet-registration-path needs --registration-socket (where the kubelet finds the driver, in its plugins_registry directory)',
    ],
    [
      ['--registration-socket', 'r.sock', '--kubelet-registration-path', HOST_ENDPOINT],
      '--registration-socket must be an absolute path, got "r.sock"',
    ],
    [
      ['--registration-socket', '/registration/r.sock', '--kubelet-registration-path', 'csi.sock'],
      '--kubelet-registration-path must be an absolute path, got "csi.sock"',
    ],
    [
      ['--health-address', '9808'],
      '--health-address must be host:port (e.g. 0.0.0.0:9808 or :9808), got "9808"',
    ],
    [
      ['--metrics-address', '0.0.0.0:99999'],
      '--metrics-address must be host:port (e.g. 0.0.0.0:9808 or :9808), got "0.0.0.0:99999"',
    ],
  ])('exits 2 with one line, creating nothing: %j', async (flags, message) => {
    const d = deps(CONFIG_YAML, never);
    const code = await runDriver([...base(join(dir, 'csi.sock')), ...flags], d.value);
    expect(code).toBe(2);
    expect(d.errors).toEqual([`lvstamp-csi: ${message}\n`]);
    expect(d.lockFiles).toEqual([]);
    expect(await exists(join(dir, 'csi.sock'))).toBe(false);
  });

  it('exits 2 when registering without a unix endpoint or on the CSI socket itself', async () => {
    const tcp = deps(CONFIG_YAML, never);
    expect(
      await runDriver(
        [
          ...START,
          '--node-id',
          'n1',
          '--config',
          'c.yaml',
          '--registration-socket',
          '/r/r.sock',
          '--kubelet-registration-path',
          HOST_ENDPOINT,
        ],
        tcp.value,
      ),
    ).toBe(2);
    expect(tcp.errors).toEqual([
      'lvstamp-csi: registering with the kubelet needs a unix:// --endpoint (the kubelet dials a unix socket), got "tcp://127.0.0.1:0"\n',
    ]);
    const same = deps(CONFIG_YAML, never);
    const csi = join(dir, 'csi.sock');
    expect(await runDriver(args(csi, csi), same.value)).toBe(2);
    expect(same.errors).toEqual([
      `lvstamp-csi: --registration-socket must differ from the CSI endpoint's socket ${csi}\n`,
    ]);
  });
});
