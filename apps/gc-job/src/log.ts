import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger };

/**
 * The job's pino logger: JSON lines on `destination` (standard error by
 * default, so that standard output holds only the report).
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino({ level, base: { app: 'lvstamp-gc' } }, destination ?? pino.destination(2));
}
