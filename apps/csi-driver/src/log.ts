import { createJsonLogger, type DestinationStream, type Logger } from '@lvstamp/app-kit';

/** Fields that may carry secrets (CSI `secrets`, csi_secret fields) never reach a log line. */
export const REDACTED_PATHS: readonly string[] = Object.freeze([
  'secrets',
  '*.secrets',
  'request.secrets',
  'request.*.secrets',
]);

export type { Logger };

/**
 * The driver's logger: JSON lines of the shared shape (docs/logging.md; `app` lvstamp-csi) on
 * `destination` (default stdout), with `secrets` fields redacted wherever a request is logged.
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return createJsonLogger({ app: 'lvstamp-csi', level, redact: REDACTED_PATHS }, destination);
}

/** What one finished RPC left. */
export interface RpcRecord {
  /** e.g. `/csi.v1.Controller/CreateVolume`. */
  readonly method: string;
  /** The volume the call was about, when it named one. */
  readonly volumeId: string | null;
  readonly durationMs: number;
  /** gRPC code name, e.g. `OK`, `NOT_FOUND`. */
  readonly code: string;
  /** The failure's message (as sent to the client). */
  readonly message?: string;
}

/** One structured line per RPC: method, volume ID, duration, code. */
export function logRpc(logger: Logger, record: RpcRecord): void {
  const fields = {
    method: record.method,
    volumeId: record.volumeId,
    durationMs: Math.round(record.durationMs * 1000) / 1000,
    code: record.code,
    ...(record.message === undefined ? {} : { error: record.message }),
  };
  if (record.code === 'OK') logger.info(fields, 'rpc');
  else logger.warn(fields, 'rpc');
}
