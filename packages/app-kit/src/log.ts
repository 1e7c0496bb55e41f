import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';

export type { DestinationStream, Logger };

/** Options of `createJsonLogger`. */
export interface JsonLoggerOptions {
  /** The program's name, in every line's `app` field (e.g. `lvstamp-csi`). */
  readonly app: string;
  /** pino level name: fatal, error, warn, info, debug, trace or silent. */
  readonly level: string;
  /** Paths whose values are replaced by `[redacted]` (pino `redact`). */
  readonly redact?: readonly string[];
}

/**
 * The one log line shape of every lvstamp program (docs/logging.md): one JSON object per line,
 * `{"level":"info","time":"2026-01-02T03:04:05.678Z","app":"lvstamp-csi","msg":"…",…fields}`.
 * `level` is the level's name (not pino's number), `time` an ISO 8601 UTC instant with
 * milliseconds. `pid` and `hostname` are left out: in a container they are 1 and the pod's name.
 * @param destination where lines go: a stream, or file descriptor 1 (standard output, the
 *   default) or 2 (standard error).
 */
export function createJsonLogger(
  options: JsonLoggerOptions,
  destination: DestinationStream | 1 | 2 = 1,
): Logger {
  const config: LoggerOptions = {
    level: options.level,
    base: { app: options.app },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    ...(options.redact === undefined
      ? {}
      : { redact: { paths: [...options.redact], censor: '[redacted]' } }),
  };
  return pino(
    config,
    typeof destination === 'number' ? pino.destination(destination) : destination,
  );
}
