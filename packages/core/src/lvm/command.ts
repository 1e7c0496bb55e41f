import type { CommandResult, CommandRunner, WarnLogger } from '../exec/runner.js';
import { runLogged } from '../exec/logged.js';
import type { HostLock } from '../lock/host-lock.js';

/** Options every lvm report gets: JSON, sizes as plain byte counts (docs/FACTS.md "Reports"). */
export const REPORT_OPTIONS: readonly string[] = Object.freeze([
  '--reportformat',
  'json',
  '--units',
  'b',
  '--nosuffix',
]);

/** lvs option that prints `lv_time` as Unix seconds (lvm.conf(5) report/time_format). */
export const LV_TIME_CONFIG: readonly string[] = Object.freeze([
  '--config',
  'report/time_format="%s"',
]);

/** Dependencies and settings of the lvm command layer. */
export interface LvmCommandOptions {
  readonly runner: CommandRunner;
  /** Taken around every mutating lvm command (re-entrant: a caller may already hold it). */
  readonly hostLock: HostLock;
  /** Deadline of each lvm command in milliseconds; default: the runner's. */
  readonly timeoutMs?: number;
  /** Receives lvm's stderr of successful commands (warnings). */
  readonly logger?: WarnLogger;
}

/**
 * Runs lvm commands for the lvm module (DESIGN.md §2.5): each with the
 * deadline, its warnings logged; a change (a command that writes lvm
 * metadata or activates) only under the host lock, reports without it.
 * @throws CommandFailedError, CommandTimeoutError; LockTimeoutError for a change.
 */
export class LvmCommand {
  readonly #options: LvmCommandOptions;

  constructor(options: LvmCommandOptions) {
    this.#options = options;
  }

  /** A report (vgs, lvs, pvs): read-only, no host lock. */
  report(argv: readonly string[]): Promise<CommandResult> {
    return this.#run(argv);
  }

  /** A change, under the host lock; `reason` names it for whoever waits. */
  change(reason: string, argv: readonly string[]): Promise<CommandResult> {
    return this.#options.hostLock.withLock(reason, () => this.#run(argv));
  }

  #run(argv: readonly string[]): Promise<CommandResult> {
    const { runner, logger, timeoutMs } = this.#options;
    return runLogged(runner, logger, argv, timeoutMs === undefined ? {} : { timeoutMs });
  }
}
