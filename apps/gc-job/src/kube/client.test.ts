import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiException } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ConfigError, KubeApiError } from '../errors.js';
import { loadKubeConfig, toKubeApiError } from './client.js';

const status = (code: number, message: string) =>
  new ApiException(
    code,
    'Unknown API Status Code!',
    JSON.stringify({ kind: 'Status', message, code }),
    {},
  );

describe('toKubeApiError', () => {
  it.each([
    [
      403,
      'forbidden',
      'cannot list persistentvolumes: forbidden (HTTP 403); the ServiceAccount lacks this permission (see deploy/kubernetes/gc/rbac.yaml): nope',
    ],
    [
      410,
      'expired',
      "cannot list persistentvolumes: the list's continue token expired (HTTP 410); the list changed too much while it was read: nope",
    ],
    [500, 'server-error', 'cannot list persistentvolumes: API server error (HTTP 500): nope'],
    [
      503,
      'unavailable',
      'cannot list persistentvolumes: API server unreachable or unavailable (HTTP 503): nope',
    ],
    [504, 'timeout', 'cannot list persistentvolumes: timed out (HTTP 504): nope'],
  ])('HTTP %i → %s with the Status message', (code, kind, message) => {
    const error = toKubeApiError('list persistentvolumes', 1000, status(code, 'nope'));
    expect(error).toBeInstanceOf(KubeApiError);
    expect([error.kind, error.status, error.message]).toEqual([kind, code, message]);
  });

  it('our deadline (AbortError) is a timeout; a refused connection is unavailable', () => {
    const abort = Object.assign(new Error('The user aborted a request.'), { name: 'AbortError' });
    expect(toKubeApiError('list csinodes', 1500, abort).message).toBe(
      'cannot list csinodes: timed out: timed out after 1500 ms',
    );
    const refused = Object.assign(new Error('request to https://127.0.0.1:1/ failed'), {
      name: 'FetchError',
      code: 'ECONNREFUSED',
    });
    const e = toKubeApiError('list csinodes', 1500, refused);
    expect([e.kind, e.status, e.message]).toEqual([
      'unavailable',
      null,
      'cannot list csinodes: API server unreachable or unavailable: request to https://127.0.0.1:1/ failed (ECONNREFUSED)',
    ]);
  });
});

describe('loadKubeConfig', () => {
  const dir = mkdtempSync(join(tmpdir(), 'lvstamp-gc-kc-'));

  it('refuses to fall back to a default cluster when there is no kubeconfig at all', () => {
    expect(() => loadKubeConfig({ source: 'kubeconfig', path: undefined }, { HOME: dir })).toThrow(
      new ConfigError(
        `no kubeconfig: not in a pod, KUBECONFIG is unset and ${join(dir, '.kube', 'config')} does not exist; pass --kubeconfig FILE`,
      ),
    );
  });

  it('names the file that cannot be read or parsed', () => {
    const missing = join(dir, 'missing');
    expect(() => loadKubeConfig({ source: 'kubeconfig', path: missing }, {})).toThrow(
      /^cannot load the kubeconfig .*missing: ENOENT/,
    );
    const garbage = join(dir, 'garbage');
    writeFileSync(garbage, 'a: b: c\n  - [');
    expect(() =>
      loadKubeConfig({ source: 'kubeconfig', path: undefined }, { KUBECONFIG: garbage }),
    ).toThrow(ConfigError);
    expect(() => loadKubeConfig({ source: 'kubeconfig', path: garbage }, {})).toThrow(
      /kubeconfig .*garbage/,
    );
  });

  it('refuses a kubeconfig without a current cluster', () => {
    const empty = join(dir, 'empty');
    writeFileSync(empty, 'apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n');
    expect(() => loadKubeConfig({ source: 'kubeconfig', path: empty }, {})).toThrow(
      /names no current context or cluster/,
    );
  });
});
