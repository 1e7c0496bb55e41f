import { ApiException } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { KubeApiError } from '../errors.js';
import { toKubeApiError } from './client.js';

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
