// Helpers the lvstamp apps share. Exit-code and gRPC mappings stay in each app.
export { DURATION_SYNTAX, formatDuration, parseDuration } from './duration.js';
export {
  describeFailure,
  EXIT_FAILED,
  EXIT_OK,
  EXIT_USAGE,
  messageOf,
  oneLine,
  ReportedFailure,
  type ErrorClass,
  type FailureClasses,
  type Failure,
} from './failure.js';
export { printable, renderTable } from './table.js';
export {
  createJsonLogger,
  type DestinationStream,
  type JsonLoggerOptions,
  type Logger,
} from './log.js';
