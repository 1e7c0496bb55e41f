/**
 * The closed set of errors that the core throws. Apps map these, and only
 * these, to their own world (gRPC status codes in the CSI driver, exit codes
 * in the CLI and the GC job); anything else is an internal error.
 */

/** Base class of every error the core throws on purpose. */
export abstract class LvstampError extends Error {
  /** Stable machine-readable kind, e.g. for logs and `--json` output. */
  abstract readonly kind: string;

  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The caller's input is malformed (a bad name, size, ID, path or policy). */
export class InvalidArgumentError extends LvstampError {
  readonly kind: string = 'invalid-argument';
}

/**
 * A size the request allows cannot be met: the capacity rounded up to whole
 * extents exceeds the limit, or a size is beyond 2^53 − 1 bytes. A kind of
 * invalid argument (the CSI driver answers OUT_OF_RANGE, CSI spec
 * CreateVolume errors).
 */
export class OutOfRangeError extends InvalidArgumentError {
  override readonly kind = 'out-of-range';
}

/** The named thing (volume, volume group, device) does not exist. */
export class NotFoundError extends LvstampError {
  readonly kind = 'not-found';
}

/**
 * A volume with the same name exists but is incompatible with the request
 * (another size, another volume group). Retrying the same request fails the
 * same way.
 */
export class AlreadyExistsError extends LvstampError {
  readonly kind = 'already-exists';
}

/** The volume group lacks the free extents the request needs. */
export class OutOfSpaceError extends LvstampError {
  readonly kind = 'out-of-space';
}

/**
 * The system is not in a state that allows the operation (for example the
 * volume is open or mounted, the header does not match the name, the host
 * lacks device-mapper). Retrying without changing the state fails again.
 */
export class FailedPreconditionError extends LvstampError {
  readonly kind: string = 'failed-precondition';
}

/**
 * Which ownership check an LV failed (DESIGN.md §2.3): the lvstamp tag, the
 * owner tag of this installation, or the sector-0 header (missing or
 * unreadable, another volume ID, another owner).
 */
export type OwnershipCheck = 'tag' | 'owner-tag' | 'header' | 'header-id' | 'header-owner';

/**
 * An LV with an lvstamp name failed an ownership check right before a
 * destructive act (DESIGN.md §2.3); it was left untouched. A kind of failed
 * precondition (CSI FAILED_PRECONDITION, CLI exit 1).
 */
export class NotOwnedError extends FailedPreconditionError {
  override readonly kind = 'not-owned';
  /** `vg/lv` of the LV. */
  readonly lv: string;
  readonly check: OwnershipCheck;

  constructor(lv: string, check: OwnershipCheck, detail: string) {
    super(`${lv} is not provably this installation's volume: ${detail}; left untouched`);
    this.lv = lv;
    this.check = check;
  }
}

/**
 * The kernel has no thin-pool (or thin) device-mapper target and lvm could
 * not load the `dm_thin_pool` module itself (docs/FACTS.md, device-mapper):
 * nothing thin can be made or activated on this node until it is loaded.
 * The message names the fix; `cause` is lvm's CommandFailedError.
 */
export class ThinTargetMissingError extends FailedPreconditionError {
  override readonly kind = 'thin-target-missing';
}

/** What a finished external command left behind. */
export interface CommandOutcome {
  /** The exact argument vector, program first. */
  readonly argv: readonly string[];
  /** Exit code, or null when the process was killed by a signal. */
  readonly exitCode: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** An external command exited non-zero, was killed, or could not start. */
export class CommandFailedError extends LvstampError {
  readonly kind: string = 'command-failed';
  readonly argv: readonly string[];
  readonly exitCode: number | null;
  readonly stdout: string;
  readonly stderr: string;

  constructor(outcome: CommandOutcome, message?: string, options?: ErrorOptions) {
    super(message ?? CommandFailedError.describe(outcome), options);
    this.argv = outcome.argv;
    this.exitCode = outcome.exitCode;
    this.stdout = outcome.stdout;
    this.stderr = outcome.stderr;
  }

  /**
   * One line: the program, its exit code and all of its stderr (each
   * non-empty line trimmed, joined with ` | `), bounded by `boundText` to
   * STDERR_MESSAGE_BYTES (head and tail kept, the cut marked). lvm2 prints
   * the deciding line last and its warnings first, so neither end may be
   * dropped.
   */
  static describe(outcome: CommandOutcome): string {
    const stderr = boundText(joinLines(outcome.stderr), STDERR_MESSAGE_BYTES);
    const code = outcome.exitCode === null ? 'was killed' : `exited ${outcome.exitCode}`;
    return `${outcome.argv.join(' ')} ${code}${stderr ? `: ${stderr}` : ''}`;
  }
}

/** An external command ran past its deadline and was killed. */
export class CommandTimeoutError extends CommandFailedError {
  override readonly kind = 'timed-out';
  /** The deadline that was exceeded, in milliseconds. */
  readonly timeoutMs: number;

  constructor(outcome: CommandOutcome, timeoutMs: number, options?: ErrorOptions) {
    super(
      outcome,
      `${outcome.argv.join(' ')} timed out after ${timeoutMs} ms and was killed`,
      options,
    );
    this.timeoutMs = timeoutMs;
  }
}

/**
 * A command succeeded but printed something the parser cannot read with
 * certainty. Never read as "nothing there".
 */
export class UnparseableOutputError extends CommandFailedError {
  override readonly kind = 'unparseable-output';

  constructor(outcome: CommandOutcome, detail: string, options?: ErrorOptions) {
    super(outcome, `cannot parse the output of ${outcome.argv.join(' ')}: ${detail}`, options);
  }
}

/**
 * Why a volume group cannot take new volumes (vgs(8) `vg_attr`, lvm2's
 * messages; docs/LVM-CONFIG.md "Broken volume groups"): a PV is missing
 * (partial group), the same PV is seen on two devices, the group or its PVs
 * are read-only, the group is shared/clustered (needs lvmlockd) or exported.
 */
export type VolumeGroupProblem =
  'missing-pv' | 'duplicate-pv' | 'read-only' | 'shared' | 'exported';

/**
 * A volume group is in a state where lvm refuses changes (or reports it
 * unusable). Not the caller's fault and not healed by retrying on this node;
 * the CSI driver answers RESOURCE_EXHAUSTED so that the claim goes to
 * another node, and reports 0 capacity for the group.
 */
export class VolumeGroupUnusableError extends LvstampError {
  readonly kind = 'volume-group-unusable';
  readonly vgName: string;
  readonly problem: VolumeGroupProblem;
  /** lvm's whole message (stderr, bounded) or the attribute that told. */
  readonly detail: string;

  constructor(vgName: string, problem: VolumeGroupProblem, detail: string, options?: ErrorOptions) {
    super(`volume group ${vgName} is unusable (${problem}): ${detail}`, options);
    this.vgName = vgName;
    this.problem = problem;
    this.detail = detail;
  }
}

/**
 * A thin class's pool cannot take new volumes (DESIGN.md §4 "Thin device
 * classes"): the LV of that name is not a thin pool, its chunk zeroing is
 * off, the pool is absent and the class has no `thinPoolSize`, lvm says
 * the pool is not a thin pool or not found, or the kernel has no thin-pool
 * target (docs/FACTS.md, device-mapper). Not healed by retrying here:
 * the CSI driver answers RESOURCE_EXHAUSTED (the claim goes to another node)
 * and reports 0 capacity for the class.
 */
export class ThinPoolUnusableError extends LvstampError {
  readonly kind = 'thin-pool-unusable';
  readonly vgName: string;
  readonly poolName: string;

  constructor(vgName: string, poolName: string, detail: string, options?: ErrorOptions) {
    super(`thin pool ${vgName}/${poolName} is unusable: ${detail}`, options);
    this.vgName = vgName;
    this.poolName = poolName;
  }
}

/**
 * In-process block I/O on a device (a header read or write, zeroing a data
 * area) did not finish within its deadline: the device does not answer (a
 * suspended device-mapper map, a hung disk). The operation's outcome is
 * unknown; retried, every operation converges (docs/LVM-CONFIG.md, "Hung I/O").
 */
export class IoTimeoutError extends LvstampError {
  readonly kind = 'io-timed-out';
  /** The device (or file) path. */
  readonly device: string;
  /** What was done: `read` or `write`. */
  readonly operation: string;
  /** The deadline in milliseconds. */
  readonly timeoutMs: number;

  constructor(device: string, operation: string, timeoutMs: number, detail?: string) {
    super(
      `${operation} of ${device} did not finish within ${timeoutMs} ms: the device does not answer` +
        (detail === undefined ? '' : ` (${detail})`),
    );
    this.device = device;
    this.operation = operation;
    this.timeoutMs = timeoutMs;
  }
}

/** A lock (per volume or per host) could not be taken in time. */
export class LockTimeoutError extends LvstampError {
  readonly kind = 'lock-timeout';
}

/** Most bytes (UTF-8) of a command's stderr that an error message carries. */
export const STDERR_MESSAGE_BYTES = 4096;

/**
 * `text` when its UTF-8 encoding is at most `maxBytes` bytes; otherwise its
 * first quarter and its last part with ` [… N bytes cut …] ` between them
 * (N: the bytes left out), at most `maxBytes` bytes in all and never cutting
 * a character in two.
 * @param maxBytes at least 128.
 */
export function boundText(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes) return text;
  const budget = Math.max(0, maxBytes - CUT_MARKER_RESERVE);
  let headEnd = Math.floor(budget / 4);
  while (headEnd > 0 && isContinuation(bytes[headEnd])) headEnd -= 1;
  let tailStart = bytes.length - (budget - headEnd);
  while (tailStart < bytes.length && isContinuation(bytes[tailStart])) tailStart += 1;
  const head = bytes.subarray(0, headEnd).toString('utf8');
  const tail = bytes.subarray(tailStart).toString('utf8');
  return `${head} [… ${tailStart - headEnd} bytes cut …] ${tail}`;
}

/** Bytes kept free for the cut marker (under 40 bytes for any count below 2^53). */
const CUT_MARKER_RESERVE = 40;

/** True for a UTF-8 continuation byte (10xxxxxx): not the start of a character. */
function isContinuation(byte: number | undefined): boolean {
  return byte !== undefined && (byte & 0xc0) === 0x80;
}

/** The non-empty lines of `text`, trimmed, joined with ` | `. */
function joinLines(text: string): string {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.length > 0)
    .join(' | ');
}
