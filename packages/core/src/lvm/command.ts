import pLimit from 'p-limit';
import { CommandFailedError, ThinTargetMissingError } from '../errors.js';
import type { CommandResult, CommandRunner, WarnLogger } from '../exec/runner.js';
import { runLogged } from '../exec/logged.js';
import type { HostLock } from '../lock/host-lock.js';
import { lvmMessage } from './vg-state.js';

// lvm2 2.03.16 when the kernel has no thin-pool or thin target and its own /sbin/modprobe
// dm-thin-pool failed: "thin-pool: Required device-mapper target(s) not detected in your kernel."
// (lvcreate of a pool) and "Can't process LV VG/LV: thin(-pool) target support missing from
// kernel?" (activation of a pool or a thin LV); fixtures/thin/recorded pool-create-no-modprobe and
// pool-activate-no-modprobe, docs/FACTS.md.
const NO_THIN_TARGET =
  /thin(-pool)?: Required device-mapper target\(s\) not detected in your kernel|thin(-pool)? target support missing from kernel/;

/** What the node's administrator does then (README "Thin device classes"). */
const NO_THIN_TARGET_HINT =
  'the kernel has no thin-pool target and lvm could not load it: load the dm_thin_pool module on ' +
  'the node (modprobe dm_thin_pool; at boot: /etc/modules-load.d), or give the driver the host’s ' +
  '/lib/modules and kmod (deploy/kubernetes/daemonset.yaml does)';

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

/**
 * lvm warnings of a successful command that are expected and say nothing to
 * a user, so never relayed: lvchange's "Combining activation change with
 * other commands is not advised." of the quarantine's one `lvchange --addtag
 * --activate n` (docs/FACTS.md: lvm2 2.03.16 commits the tags, then
 * deactivates). Each matches exactly that one line; every other warning is
 * relayed.
 */
export const LVM_KNOWN_NOISE: readonly RegExp[] = [
  /^\s*(?:WARNING: )?Combining activation change with other commands is not advised\.?\s*$/,
];

/**
 * lvm processes one LvmCommand runs at once by default. Volume work of
 * different volumes overlaps under the host lock (DESIGN.md §2.3 "The host
 * lock"); without a bound a burst of 64 starts 64 lvm processes, each
 * scanning every device, which on a small or emulated node outlasted lvm's
 * deadline. lvm serialises their metadata changes itself (its VG lock).
 */
export const DEFAULT_LVM_CONCURRENCY = 4;

/** Dependencies and settings of the lvm command layer. */
export interface LvmCommandOptions {
  readonly runner: CommandRunner;
  /** Taken around every mutating lvm command (re-entrant: a caller may already hold it). */
  readonly hostLock: HostLock;
  /** Deadline of each lvm command in milliseconds; default: the runner's. */
  readonly timeoutMs?: number;
  /** Receives lvm's stderr of successful commands (warnings). */
  readonly logger?: WarnLogger;
  /**
   * lvm processes run at once, reports and changes alike; more wait in
   * line, their deadline not yet started. Default DEFAULT_LVM_CONCURRENCY.
   */
  readonly maxConcurrent?: number;
}

/**
 * Runs lvm commands for the lvm module (DESIGN.md §2.5): each with the
 * deadline, its warnings logged, at most `maxConcurrent` at once; a change
 * (a command that writes lvm metadata or activates) only under the host
 * lock, reports without it.
 * @throws ThinTargetMissingError when lvm says the kernel has no thin-pool or
 *   thin target (and could not load it); CommandFailedError,
 *   CommandTimeoutError; LockTimeoutError for a change.
 */
export class LvmCommand {
  readonly #options: LvmCommandOptions;
  readonly #limit: pLimit.Limit;

  /** @throws TypeError when `maxConcurrent` is not a positive integer (p-limit). */
  constructor(options: LvmCommandOptions) {
    this.#options = options;
    this.#limit = pLimit(options.maxConcurrent ?? DEFAULT_LVM_CONCURRENCY);
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
    return this.#limit(() => this.#runNow(argv));
  }

  async #runNow(argv: readonly string[]): Promise<CommandResult> {
    const { runner, logger, timeoutMs } = this.#options;
    try {
      return await runLogged(
        runner,
        logger,
        argv,
        timeoutMs === undefined ? {} : { timeoutMs },
        LVM_KNOWN_NOISE,
      );
    } catch (error) {
      if (error instanceof CommandFailedError && NO_THIN_TARGET.test(error.stderr)) {
        throw new ThinTargetMissingError(
          `${NO_THIN_TARGET_HINT} (${argv.join(' ')}: ${lvmMessage(error.stderr)})`,
          { cause: error },
        );
      }
      throw error;
    }
  }
}
