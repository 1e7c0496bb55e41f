// Helpers the lvstamp apps share. Exit-code and gRPC mappings stay in each app.
export { formatDuration, parseDuration } from './duration.js';
export {
  describeFailure,
  messageOf,
  oneLine,
  type ErrorClass,
  type ExitRule,
  type Failure,
} from './failure.js';
export { renderTable } from './table.js';
