import { createServer as createHttpServer, type Server } from 'node:http';
import { InvalidArgumentError } from '@lvstamp/core';

/** What one HTTP route answers. */
export interface HttpAnswer {
  /** HTTP status code, e.g. 200 or 503. */
  readonly status: number;
  /** Default `text/plain; charset=utf-8`. */
  readonly contentType?: string;
  readonly body: string;
}

/** Answers `GET <path>`; a rejection is answered 500 with its message (one line). */
export type HttpRoute = () => Promise<HttpAnswer>;

/** Where an HTTP server of the driver listens (metrics, /healthz). */
export interface HttpAddress {
  /** An IPv4 or IPv6 address or a host name; `0.0.0.0` when the flag gave none. */
  readonly host: string;
  /** 0–65535; 0 takes any free port. */
  readonly port: number;
}

/**
 * Reads a `host:port` flag (`--metrics-address`, `--health-address`): `0.0.0.0:9808`,
 * `:9808` (every IPv4 interface), `[::]:9808`, `localhost:9808`.
 * @param flag the flag's name, for the message.
 * @throws InvalidArgumentError naming the flag when there is no port or it is not 0–65535.
 */
export function parseHttpAddress(text: string, flag: string): HttpAddress {
  const match = /^(\[[0-9A-Fa-f:.]+\]|[^:[\]/\s]*):(\d{1,5})$/.exec(text);
  const port = Number(match?.[2]);
  if (match === null || !(port <= 65535)) {
    throw new InvalidArgumentError(
      `${flag} must be host:port (e.g. 0.0.0.0:9808 or :9808), got "${text}"`,
    );
  }
  const host = match[1] ?? '';
  return { host: host === '' ? '0.0.0.0' : host.replace(/^\[(.*)\]$/, '$1'), port };
}

/**
 * Serves `GET` on the given paths (exact match, query string ignored) at one address; any
 * other path is 404. Shared by the metrics endpoint and /healthz, which share one server when
 * their addresses are equal.
 * @returns the HTTP server and the port it listens on (the real one for port 0).
 * @throws the listen error (e.g. EADDRINUSE) when the address cannot be bound.
 */
export async function serveHttp(
  address: HttpAddress,
  routes: Readonly<Record<string, HttpRoute>>,
): Promise<{ server: Server; port: number }> {
  const server = createHttpServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const route = Object.hasOwn(routes, path) ? routes[path] : undefined;
    if (route === undefined) {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
      return;
    }
    route().then(
      (answer) =>
        res
          .writeHead(answer.status, {
            'content-type': answer.contentType ?? 'text/plain; charset=utf-8',
          })
          .end(answer.body),
      (error: unknown) =>
        res
          .writeHead(500, { 'content-type': 'text/plain; charset=utf-8' })
          .end(
            `${path.slice(1)} failed: ${error instanceof Error ? error.message.split('\n')[0] : 'unknown'}\n`,
          ),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(address.port, address.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = server.address();
  return {
    server,
    port: typeof bound === 'object' && bound !== null ? bound.port : address.port,
  };
}
