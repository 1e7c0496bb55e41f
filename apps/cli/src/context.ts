import type { Io } from './output.js';
import type { CliServices, GlobalOptions } from './services.js';

/** What the program needs from the outside world; tests pass fakes. */
export interface CliDeps {
  readonly io: Io;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Builds the core services for the parsed global options. */
  readonly services: (options: GlobalOptions) => CliServices;
  /** Reads a UTF-8 text file, or standard input for `-`. */
  readonly readText: (path: string) => Promise<string>;
  /** Wall clock, Unix milliseconds. */
  readonly now: () => number;
  readonly version: string;
}

/** Shared state handed to each command's registration. */
export interface CommandContext {
  readonly deps: CliDeps;
  /** The global options, parsed; call from inside an action only. */
  readonly globals: () => GlobalOptions;
  readonly services: () => CliServices;
}
