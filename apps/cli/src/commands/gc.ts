import { formatDuration, messageOf, renderTable, ReportedFailure } from '@lvstamp/app-kit';
import {
  FailedPreconditionError,
  InvalidArgumentError,
  isHexId,
  planTable,
  snapshotIdForName,
  volumeIdForName,
  type GcOutcome,
  type GcPlan,
} from '@lvstamp/core';
import type { Command } from 'commander';
import { progress, writeJson, type Io } from '../output.js';
import type { CommandContext } from '../context.js';
import { describeScope } from '../scope.js';
import { parseDuration } from '../quantity.js';

interface GcOptions {
  live?: string;
  liveSnapshots?: string;
  minAge: string;
  maxDelete: string;
  apply: boolean;
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
    .option('--live <file>', 'file with one live volume name or ID per line; - for standard input')
    .option(
      '--live-snapshots <file>',
      'file with one live snapshot name or ID per line (the --live file rules); without it every snapshot is kept',
    )
    .option('--min-age <duration>', 'grace period: keep volumes younger than this', '1h')
    .option('--max-delete <n>', 'remove at most N devices in this run', '10')
    .option('--apply', 'carry out the plan (default: print it only)', false)
    .option('--allow-empty-live-set', 'accept an empty live set while stamped volumes exist', false)
    .option(
      '--vg <vg>',
      'look only in this volume group (default: those tagged lvstamp or holding lvstamp volumes)',
    )
    .addHelpText(
      'after',
      '\nA device is removed only when its name has the lvstamp prefix AND its sector-0 header is valid,\n' +
        "matches the name and carries this installation's owner ID, it is not open, not in the live set,\n" +
        'and older than the grace period. Everything else is kept, with the reason printed.\n' +
        'Only the volume groups named with --vg (or else those tagged lvstamp or holding lvstamp volumes)\n' +
        "are scanned; inactive LVs with this owner's tags are activated (lvchange --activate y; snapshots,\n" +
        'which skip a plain activation: lvchange -ay -K) to read them.\n' +
        '\nThe live set must hold every PV of the driver AND pvc-<uid> of every PVC: a claim being provisioned\n' +
        'has no PV yet, and a node clock that was behind makes its new volume look old (README).\n' +
        '\nSnapshots (lvstamp_snap_<id>) are judged against their own live set (--live-snapshots, e.g. from\n' +
        '`lvstamp-gc live-set --snapshots`): without it every snapshot is kept with a warning.\n' +
        '\nExample:\n  lvstamp-gc live-set > live.txt && lvstamp gc --live live.txt --min-age 2h',
    )
    .action(async (opts: GcOptions) => {
      const minAgeMs = parseDuration(opts.minAge);
      const maxDeletions = parseCount(opts.maxDelete);
      const liveSet =
        opts.live === undefined ? new Set<string>() : await readLiveSet(ctx, opts.live);
      const snapshotLiveSet =
        opts.liveSnapshots === undefined
          ? undefined
          : await readLiveSet(ctx, opts.liveSnapshots, 'snapshot');
      const gc = ctx.services().gc;
      progress(io, 'taking inventory of volumes and data devices');
      const { plan, vgNames, activated } = await gc.plan({
        liveSet,
        allowEmptyLiveSet: opts.allowEmptyLiveSet,
        ...(snapshotLiveSet === undefined ? {} : { snapshotLiveSet }),
        policy: { ownerId: ctx.globals().ownerId, minAgeMs, maxDeletions, dryRun: !opts.apply },
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
          volumeGroups: vgNames,
          activated,
          plan,
          outcomes,
        });
      } else {
        printPlan(io, plan, minAgeMs, outcomes);
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
 * Reads a snapshot live set: one snapshot name or snapshot ID per line,
 * with parseLiveSet's rules (a line counts in every form; 32 hex digits
 * count as an ID and as a name), names mapped with snapshotIdForName.
 * @returns snapshot IDs (32 hex digits).
 * @throws InvalidArgumentError (with the line number) for an invalid name.
 */
export function parseSnapshotLiveSet(text: string): Set<string> {
  return parseIds(text, snapshotIdForName, 'snapshot live set');
}

/**
 * Reads a live set: one volume name or volume ID per line. Keeping more is
 * the safe side, so nothing on a line is ignored: a line counts as a name
 * exactly as written and also with surrounding white space and a trailing
 * CR removed; a line starting with `#` is a name too; a line of 32 hex digits
 * counts both as an ID and as a name, in either case (an ID in capitals is
 * also taken in lower case); a line holding `/` also counts by its part after
 * the last `/` (`persistentvolume/pvc-1`, as `kubectl get pv -o name` prints
 * it). Only empty lines are skipped.
 * @returns volume IDs (32 hex digits).
 * @throws InvalidArgumentError (with the line number) for a line that is not
 *   a valid volume name (over 256 bytes, or holding NUL).
 */
export function parseLiveSet(text: string): Set<string> {
  return parseIds(text, volumeIdForName, 'live set');
}

function parseIds(text: string, idForName: (name: string) => string, what: string): Set<string> {
  const ids = new Set<string>();
  const lines = text.split('\n');
  lines.forEach((line, index) => {
    const trimmed = line.trim();
    const forms = new Set(
      [line, line.replace(/\r$/, ''), trimmed, trimmed.slice(trimmed.lastIndexOf('/') + 1)].filter(
        (form) => form !== '',
      ),
    );
    for (const form of forms) {
      if (isHexId(form.toLowerCase())) ids.add(form.toLowerCase());
      try {
        ids.add(idForName(form));
      } catch (error) {
        const why = error instanceof Error ? error.message : 'invalid';
        throw new InvalidArgumentError(`${what} line ${index + 1}: ${why}; refusing to run`);
      }
    }
  });
  return ids;
}

function printPlan(io: Io, plan: GcPlan, minAgeMs: number, outcomes: readonly GcOutcome[]): void {
  const { header, rows } = planTable(plan, outcomes);
  io.stdout.write(renderTable(header, rows));
  const removals = plan.entries.filter((e) => e.action !== 'keep').length;
  const mode = plan.dryRun
    ? 'dry run: nothing was removed (use --apply)'
    : `${outcomes.filter((o) => o.outcome === 'removed').length} removed`;
  io.stdout.write(
    `${plan.entries.length} devices, ${removals} to remove, grace period ${formatDuration(minAgeMs)}` +
      `${plan.capped ? ', deletion cap reached' : ''}; ${mode}\n`,
  );
}
