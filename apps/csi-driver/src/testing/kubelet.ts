// A fake kubelet plugin watcher and socket helpers for the registration and /healthz tests
// (excluded from the build).
import { rename } from 'node:fs/promises';
import { request } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { loadRegistrationService } from '../proto.js';

/**
 * The `:authority` a kubelet 1.37 sends on the registration socket: its plugin watcher dials the
 * bare socket path with grpc-go, which %-encodes everything outside RFC 3986's authority
 * characters (grpc-go `encodeAuthority`, grpc/grpc-go#6428). Node's HTTP/2 server accepts that
 * form; it resets the raw path (docs/kubernetes.md).
 */
export function kubeletAuthority(socketPath: string): string {
  return socketPath.replace(
    /[^A-Za-z0-9\-_.~!$&'()*+,;=:[\]@]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`,
  );
}

/** The two calls the kubelet's plugin watcher makes, over the unix socket. */
export interface FakeKubelet {
  getInfo(): Promise<Record<string, unknown>>;
  notify(registered: boolean, error?: string): Promise<Record<string, unknown>>;
  close(): void;
}

/** Dials a registration socket as the kubelet does (insecure, %-encoded path as authority). */
export function fakeKubelet(socketPath: string): FakeKubelet {
  const Registration = loadRegistrationService();
  const client = new Registration(`unix://${socketPath}`, grpc.credentials.createInsecure(), {
    'grpc.default_authority': kubeletAuthority(socketPath),
  }) as grpc.Client & Record<string, unknown>;
  const call = (method: string, body: object) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const fn = client[method] as (
        request: object,
        options: grpc.CallOptions,
        callback: (error: grpc.ServiceError | null, response: Record<string, unknown>) => void,
      ) => void;
      fn.call(client, body, { deadline: Date.now() + 10_000 }, (error, response) => {
        if (error) reject(error);
        else resolve(response);
      });
    });
  return {
    getInfo: () => call('GetInfo', {}),
    notify: (registered, error = '') =>
      call('NotifyRegistrationStatus', { plugin_registered: registered, error }),
    close: () => {
      client.close();
    },
  };
}

/**
 * What the kubelet's plugin watcher does with a new socket that answers: GetInfo, then
 * NotifyRegistrationStatus(registered).
 * @returns GetInfo's answer and NotifyRegistrationStatus's.
 */
export async function registerLikeKubelet(
  socketPath: string,
): Promise<{ info: Record<string, unknown>; notified: Record<string, unknown> }> {
  const kubelet = fakeKubelet(socketPath);
  try {
    const info = await kubelet.getInfo();
    return { info, notified: await kubelet.notify(true) };
  } finally {
    kubelet.close();
  }
}

/**
 * Leaves a socket file nobody listens on at `path`, as a killed process does: a listener is
 * moved there, then closed (libuv removes only the name it bound).
 */
export async function staleSocket(path: string): Promise<void> {
  const bound = `${path}.bound`;
  const server = createNetServer();
  await new Promise<void>((resolve) => server.listen(bound, resolve));
  await rename(bound, path);
  await new Promise<void>((resolve) => {
    server.close(() => {
      resolve();
    });
  });
}

/** GET over HTTP on 127.0.0.1, as the kubelet's probe or a Prometheus scrape does: status and body. */
export function httpGet(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, body });
      });
    })
      .on('error', reject)
      .end();
  });
}
