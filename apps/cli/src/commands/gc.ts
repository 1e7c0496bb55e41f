import {
  DURATION_SYNTAX,
  formatDuration,
  messageOf,
  renderTable,
  ReportedFailure,
} from '@lvstamp/app-kit';
import {
  FailedPreconditionError,
  InvalidArgumentError,
  isHexId,
  MAX_NAME_BYTES,
  planTable,
  snapshotIdForName,
  volumeIdForName,
  type GcOutcome,
  type GcPlan,
  type WipePolicy,
} from '@lvstamp/core';
import { Option, type Command } from 'commander';
import { wipeOption } from './wipe-option.js';
import { progress, writeJson, type Io } from '../output.js';
import type { CommandContext } from '../context.js';
import { describeScope } from '../scope.js';
import { parseDuration } from '../quantity.js';
import { UsageError } from '../errors.js';

interface GcOptions {
  live?: string;
  liveSnapshots?: string;
  minAge: string;
  maxDelete: string;
  apply: boolean;
  quarantine: string;
  wipe: WipePolicy;
  allowEmptyLiveSet: boolean;
  vg?: string;
}

/** `lvstamp gc`: plan (and with --apply, carry out) the removal of leaked volumes. */
export function registerGcCommand(program: Command, ctx: CommandContext): void {
  const { io } = ctx.deps;
  program
    .command('gc')
    .description(
      'find volumes nothing references any more and plan their removal (dry run unless --apply)',
    )
    .option(
      '--live <file>',
      'file with one live volume name or ID per line; - for standard input (needed unless --allow-empty-live-set)',
    )
    .option(
      '--live-snapshots <file>',
      'file with one live snapshot name or ID per line (the --live file rules); without it every snapshot is kept',
    )
    .option('--min-age <duration>', 'grace period: keep volumes younger than this', '1h')
    .option('--max-delete <n>', 'remove at most N devices in this run', '10')
    .addOption(new Option('--apply', 'carry out the plan').default(false, 'print it only'))
    .option(
      '--quarantine <duration>',
      'quarantine orphans this long before removal (0: remove at once, as before quarantine existed)',
      '7d',
    )
    .addOption(wipeOption('before removing a thick volume (at once or at expiry)'))
    .option(
      '--allow-empty-live-set',
      'run without --live, or accept an empty live set while stamped volumes exist',
      false,
    )
    .option(
      '--vg <vg>',
      'look only in this volume group (default: those tagged lvstamp or holding lvstamp volumes)',
    )
    .addHelpText(
      'after',
      '\nA device is removed only when its name has the lvstamp prefix AND its sector-0 header is valid,\n' +
        "matches the name and carries this installation's owner ID, it is not open, not in the live set,\n" +
        'and older than the grace period. Everything else is kept, with the reason printed.\n' +
        '\nWith --quarantine (default 7d) an orphan is not removed but quarantined: renamed lvstamp_q_<id>\n' +
        '(a snapshot lvstamp_qs_<id>), tagged with the time and deactivated, data and header untouched;\n' +
        'a later run removes it once the window passed, with the same two signals. `lvstamp quarantine\n' +
        'restore` brings it back; with --quarantine 0 orphans are removed at once and quarantined LVs kept.\n' +
        'A thick volume is wiped (--wipe, default discard) right before its lvremove, so that the next\n' +
        'volume on its extents reads zeros; a failed wipe leaves the LV for the next run. Thin volumes and\n' +
        'lvstamp_new_ leftovers are never wiped.\n' +
        'Only the volume groups named with --vg (or else those tagged lvstamp or holding lvstamp volumes)\n' +
        "are scanned; inactive LVs with this owner's tags are activated (lvchange --activate y; snapshots,\n" +
        'which skip a plain activation: lvchange -ay -K) to read them.\n' +
        `\nDurations (--min-age, --quarantine): ${DURATION_SYNTAX}.\n` +
        '\nThe live set must hold every PV of the driver AND pvc-<uid> of every PVC: a claim being provisioned\n' +
        'has no PV yet, and a node clock that was behind makes its new volume look old (README).\n' +
        '\nLive-set file lines: a volume ID (32 hex digits), a PV name (lowercase letters, digits, - and .,\n' +
        'as Kubernetes spells object names, e.g. pvc-<uid>) or persistentvolume/<name> (kubectl -o name);\n' +
        'blank lines and lines starting with # are skipped. Any other line refuses the whole file\n' +
        '(exit 2, the line named, nothing removed): list a volume with another name by its ID.\n' +
        '\nSnapshots (lvstamp_snap_<id>) are judged against their own live set (--live-snapshots, e.g. from\n' +
        '`lvstamp-gc live-set --snapshots`): without it every snapshot is kept with a warning.\n' +
        '\nExample:\n  lvstamp-gc live-set > live.txt && lvstamp gc --live live.txt --min-age 2h',
    )
    .action(async (opts: GcOptions) => {
      const minAgeMs = parseDuration(opts.minAge);
      const maxDeletions = parseCount(opts.maxDelete);
      const quarantineMs = parseDuration(opts.quarantine);
      // no --live would be an empty live set: every volume an orphan, and no quarantined one kept
      // for its live ID (DESIGN.md §6): say it, never assume it
      if (opts.live === undefined && !opts.allowEmptyLiveSet) {
        throw new UsageError(
          'give the live set with --live FILE (one PV name or ID per line, - for standard input); to run with none, --allow-empty-live-set',
        );
      }
      const liveSet =
        opts.live === undefined ? new Set<string>() : await readLiveSet(ctx, opts.live);
      const snapshotLiveSet =
        opts.liveSnapshots === undefined
          ? undefined
          : await readLiveSet(ctx, opts.liveSnapshots, 'snapshot');
      if (opts.vg !== undefined) await ctx.services().volumes.requireVolumeGroups([opts.vg]);
      const gc = ctx.services().gc;
      progress(io, 'taking inventory of volumes and data devices');
      const { plan, vgNames, activated } = await gc.plan({
        liveSet,
        allowEmptyLiveSet: opts.allowEmptyLiveSet,
        allowEmptyLiveSetWith: '--allow-empty-live-set',
        ...(snapshotLiveSet === undefined ? {} : { snapshotLiveSet }),
        policy: {
          ownerId: ctx.globals().ownerId,
          minAgeMs,
          maxDeletions,
          quarantineMs,
          wipe: opts.wipe,
          dryRun: !opts.apply,
        },
        nowMs: ctx.deps.now(),
        ...(opts.vg === undefined ? {} : { vgNames: [opts.vg] }),
      });
      progress(
        io,
        describeScope({ vgNames, source: opts.vg === undefined ? 'discovered' : '--vg' }) +
          (activated.length > 0 ? `; activated ${activated.join(', ')}` : ''),
      );
      let outcomes: readonly GcOutcome[] = [];
      if (opts.apply && plan.entries.some((e) => e.action !== 'keep')) {
        progress(io, 'applying the plan (each device re-checked right before it is removed)');
        outcomes = await gc.apply(plan);
      }
      if (ctx.globals().json) {
        writeJson(io, {
          dryRun: plan.dryRun,
          minAgeMs,
          maxDeletions,
          quarantineMs,
          wipe: opts.wipe,
          volumeGroups: vgNames,
          activated,
          plan,
          outcomes,
        });
      } else {
        printPlan(io, plan, minAgeMs, quarantineMs, outcomes);
      }
      const failed = outcomes.filter((o) => o.outcome === 'failed').length;
      if (failed > 0)
        throw new ReportedFailure(`${failed} of the planned removals failed; see the table above`);
    });
}

function parseCount(text: string): number {
  if (!/^\d+$/.test(text))
    throw new InvalidArgumentError(`--max-delete must be a whole number, got "${text}"`);
  return Number(text);
}

async function readLiveSet(
  ctx: CommandContext,
  path: string,
  kind: 'volume' | 'snapshot' = 'volume',
): Promise<Set<string>> {
  let text: string;
  try {
    text = await ctx.deps.readText(path);
  } catch (error) {
    const why = messageOf(error);
    throw new FailedPreconditionError(
      `cannot read the ${kind === 'snapshot' ? 'snapshot ' : ''}live set from ${path === '-' ? 'standard input' : path}: ${why}; refusing to run`,
    );
  }
  return kind === 'snapshot' ? parseSnapshotLiveSet(text) : parseLiveSet(text);
}

/**
 * Reads a snapshot live set: one snapshot ID or snapshot name per line, with
 * parseLiveSet's rules except that no `kind/` prefix is taken (`kubectl get
 * volumesnapshotcontent -o name` prints content names, not snapshot names);
 * names are mapped with snapshotIdForName.
 * @returns snapshot IDs (32 hex digits).
 * @throws InvalidArgumentError naming the line number and its content for
 *   any other line: the whole file is refused.
 */
export function parseSnapshotLiveSet(text: string): Set<string> {
  return parseIds(text, snapshotIdForName, { what: 'snapshot live set', kindPrefix: null });
}

/**
 * Reads a live set: one volume per line. After a trailing CR and the white
 * space around it are removed, a line is one of:
 *
 * - empty, or starting with `#` (a comment): skipped;
 * - a volume ID, 32 hex digits in either case: taken in lower case (a line
 *   in lower case also counts as a name, below);
 * - a PersistentVolume name, as Kubernetes spells object names (RFC 1123
 *   subdomain: lowercase letters, digits, `-` and `.`, each dot-separated
 *   part starting and ending with a letter or digit, at most 253
 *   characters), e.g. `pvc-<uid>`: its volume ID (volumeIdForName); one over
 *   128 bytes names no lvstamp volume (DESIGN.md §3) and adds nothing;
 * - `persistentvolume/<such a name>`, as `kubectl get pv -o name` prints it.
 *
 * Any other line (an error message a failed command wrote into the file,
 * `persistentvolumeclaim/…`, a name with capitals, `_` or spaces) refuses
 * the whole file: one such line would otherwise pass the empty-live-set
 * guard and leave every real volume unlisted (DESIGN.md §2.4). A volume
 * whose name has another form is listed by its ID (`lvstamp list`).
 * @returns volume IDs (32 lowercase hex digits).
 * @throws InvalidArgumentError `live set line N: "…" is neither …`.
 */
export function parseLiveSet(text: string): Set<string> {
  return parseIds(text, volumeIdForName, { what: 'live set', kindPrefix: 'persistentvolume/' });
}

/** A Kubernetes object name (RFC 1123 subdomain, as Kubernetes validates it), at most 253 characters. */
const OBJECT_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const OBJECT_NAME_MAX = 253;
/** How much of a refused line the error quotes. */
const QUOTED_CHARACTERS = 80;

function parseIds(
  text: string,
  idForName: (name: string) => string,
  rules: { what: string; kindPrefix: string | null },
): Set<string> {
  const ids = new Set<string>();
  text.split('\n').forEach((line, index) => {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) return;
    if (isHexId(trimmed.toLowerCase())) ids.add(trimmed.toLowerCase());
    const name =
      rules.kindPrefix !== null && trimmed.startsWith(rules.kindPrefix)
        ? trimmed.slice(rules.kindPrefix.length)
        : trimmed;
    if (name.length <= OBJECT_NAME_MAX && OBJECT_NAME.test(name)) {
      if (Buffer.byteLength(name, 'utf8') <= MAX_NAME_BYTES) ids.add(idForName(name));
      return;
    }
    if (name === trimmed && isHexId(trimmed.toLowerCase())) return; // an ID in capitals
    const shown =
      trimmed.length > QUOTED_CHARACTERS ? `${trimmed.slice(0, QUOTED_CHARACTERS)}…` : trimmed;
    const forms =
      rules.kindPrefix === null
        ? 'a name as Kubernetes spells object names (lowercase letters, digits, "-" and ".")'
        : `a PersistentVolume name (lowercase letters, digits, "-" and ".") or ${rules.kindPrefix}<name>`;
    throw new InvalidArgumentError(
      `${rules.what} line ${index + 1}: ${JSON.stringify(shown)} is neither an ID (32 hex digits) nor ${forms}; refusing the whole file, nothing was removed`,
    );
  });
  return ids;
}

function printPlan(
  io: Io,
  plan: GcPlan,
  minAgeMs: number,
  quarantineMs: number,
  outcomes: readonly GcOutcome[],
): void {
  const { header, rows } = planTable(plan, outcomes);
  io.stdout.write(renderTable(header, rows));
  const count = (test: (action: string) => boolean) =>
    plan.entries.filter((e) => test(e.action)).length;
  const removals = count((a) => a.startsWith('remove-'));
  const quarantines = count((a) => a.startsWith('quarantine-'));
  const done = (outcome: GcOutcome['outcome']) =>
    outcomes.filter((o) => o.outcome === outcome).length;
  const mode = plan.dryRun
    ? 'dry run: nothing was removed (use --apply)'
    : `${done('removed')} removed` +
      (quarantines > 0 ? `, ${done('quarantined')} quarantined` : '');
  const window = quarantineMs > 0 ? `quarantine ${formatDuration(quarantineMs)}` : 'no quarantine';
  io.stdout.write(
    `${plan.entries.length} devices, ${removals} to remove` +
      (quarantines > 0 ? `, ${quarantines} to quarantine` : '') +
      `, grace period ${formatDuration(minAgeMs)}, ${window}` +
      `${plan.capped ? ', deletion cap reached' : ''}; ${mode}\n`,
  );
}
