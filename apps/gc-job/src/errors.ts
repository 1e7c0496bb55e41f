import { describeFailure as describeByClasses, type Failure } from '@lvstamp/app-kit';
import { InvalidArgumentError, LvstampError } from '@lvstamp/core';

/**
 * `lvstamp-gc`'s own exit code next to app-kit's 0 ok, 1 the run failed or was
 * refused, 2 bad usage or configuration: 3 (`cluster`) every node that did
 * not succeed never ran its Job (`not-started`: nothing was collected there).
 */
export const EXIT_NOT_STARTED = 3;

/** Why a Kubernetes API call failed, in the words the run's abort message uses. */
export type KubeFailureKind =
  | 'forbidden'
  | 'unauthorized'
  | 'expired'
  | 'not-found'
  | 'conflict'
  | 'invalid'
  | 'timeout'
  | 'unavailable'
  | 'server-error'
  | 'other';

/**
 * A Kubernetes API call failed (HTTP status ≥ 400, a network error, or the
 * per-request deadline). Any list failure aborts a node's run before
 * anything is deleted (DESIGN.md §2.4: a partial list is never a full list).
 */
export class KubeApiError extends Error {
  override readonly name = 'KubeApiError';
  /** HTTP status, or null when no response arrived (network error, timeout). */
  readonly status: number | null;
  readonly kind: KubeFailureKind;
  /** e.g. `list persistentvolumes`. */
  readonly operation: string;

  constructor(operation: string, status: number | null, detail: string, options?: ErrorOptions) {
    const kind = kindOf(status, detail);
    super(
      `cannot ${operation}: ${describeKind(kind, status)}${detail ? `: ${detail}` : ''}`,
      options,
    );
    this.operation = operation;
    this.status = status;
    this.kind = kind;
  }
}

/** The configuration (flags, environment) is invalid: exit 2 with the message. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

function kindOf(status: number | null, detail: string): KubeFailureKind {
  if (status === null) return /timed out|abort/i.test(detail) ? 'timeout' : 'unavailable';
  if (status === 401) return 'unauthorized';
  if (status === 403) return 'forbidden';
  if (status === 404) return 'not-found';
  if (status === 409) return 'conflict';
  if (status === 410) return 'expired';
  if (status === 422 || status === 400) return 'invalid';
  if (status === 408 || status === 504) return 'timeout';
  if (status === 503) return 'unavailable';
  if (status >= 500) return 'server-error';
  return 'other';
}

function describeKind(kind: KubeFailureKind, status: number | null): string {
  const code = status === null ? '' : ` (HTTP ${status})`;
  switch (kind) {
    case 'forbidden':
      return `forbidden${code}; the ServiceAccount lacks this permission (see deploy/kubernetes/gc/rbac.yaml)`;
    case 'unauthorized':
      return `unauthorized${code}; the credentials were rejected`;
    case 'expired':
      return `the list's continue token expired${code}; the list changed too much while it was read`;
    case 'not-found':
      return `not found${code}`;
    case 'conflict':
      return `already exists or changed${code}`;
    case 'invalid':
      return `rejected as invalid${code}`;
    case 'timeout':
      return `timed out${code}`;
    case 'unavailable':
      return `API server unreachable or unavailable${code}`;
    case 'server-error':
      return `API server error${code}`;
    case 'other':
      return `failed${code}`;
  }
}

/**
 * The one place where errors become `lvstamp-gc`'s exit codes: bad
 * configuration exits 2, a ReportedFailure its own code, a Kubernetes API
 * failure and every other core error 1, with its message on one line;
 * anything unrecognised is an internal error without a stack trace.
 */
export function describeFailure(error: unknown): Failure {
  return describeByClasses(error, {
    usage: [ConfigError, InvalidArgumentError],
    failed: [KubeApiError, LvstampError],
  });
}
