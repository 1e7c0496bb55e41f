import { createJsonLogger, type DestinationStream, type Logger } from '@lvstamp/app-kit';

export type { Logger };

/**
 * The job's logger: JSON lines of the shared shape (docs/logging.md; `app` lvstamp-gc) on
 * `destination` (standard error by default, so that standard output holds only the report).
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return createJsonLogger({ app: 'lvstamp-gc', level }, destination ?? 2);
}
