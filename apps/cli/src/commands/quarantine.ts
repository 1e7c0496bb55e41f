import {
  DURATION_SYNTAX,
  formatDuration,
  messageOf,
  printable,
  renderTable,
  ReportedFailure,
} from '@lvstamp/app-kit';
import {
  FS_TYPES,
  NotFoundError,
  quarantineTagsOf,
  planTable,
  type GcOutcome,
  type QuarantinedKind,
  type RestoredLv,
  type WipePolicy,
} from '@lvstamp/core';
import { Option, type Command } from 'commander';
import { wipeOption } from './wipe-option.js';
import { progress, writeJson } from '../output.js';
import type { CommandContext } from '../context.js';
import { commandScope, describeScope } from '../scope.js';
import { formatBytes, parseDuration } from '../quantity.js';
import {
  checkRecipeOptions,
  chooseVolumeMode,
  recipeOrWhyNot,
  snapshotBindHint,
  type DataAreaProbe,
} from './pv-recipe.js';
import { isoTime, listQuarantined } from './quarantine-list.js';
import { purgeRef, quarantineRef } from './quarantine-refs.js';

const VG_HELP = 'volume group (default: those tagged lvstamp or holding lvstamp volumes)';

/**
 * `lvstamp quarantine list|inspect|restore|purge` (DESIGN.md §6
 * "Quarantine"): what the GC put aside instead of removing, and the way back.
 */
export function registerQuarantineCommands(program: Command, ctx: CommandContext): void {
  const { io } = ctx.deps;
  const quarantine = program
    .command('quarantine')
    .description(
      'volumes and snapshots the GC quarantined instead of removing: list, inspect, restore, purge',
    )
    .addHelpText(
      'after',
      '\nThe GC (lvstamp gc --quarantine, the CronJob LVSTAMP_GC_QUARANTINE, 7d by default) renames an\n' +
        'orphan volume lvstamp_q_<id> (a snapshot lvstamp_qs_<id>), tags it lvstamp.quarantined=<time>\n' +
        'and deactivates it; its data and header are untouched. A later GC run removes it once the window\n' +
        'passed. Until then: lvstamp quarantine restore <PV name or ID>.',
    );

  quarantine
    .command('list')
    .description('list quarantined volumes and snapshots (same as lvstamp list --quarantined)')
    .option('--vg <vg>', VG_HELP)
    .addHelpText(
      'after',
      "\nA thick LV's size is the space it holds. A thin LV (every snapshot) shows its size as\n" +
        '`virtual`: it holds only the pool chunks it wrote, which lvm does not report while it is\n' +
        'inactive; the total counts only thick LVs as held and sums the thin ones apart.',
    )
    .action(async (opts: { vg?: string }) => {
      await listQuarantined(ctx, opts.vg);
    });

  quarantine
    .command('inspect')
    .description('show a quarantined volume (or --snapshot) and its sector-0 header')
    .argument('<ref>', 'volume name (e.g. the PV name pvc-…) or ID')
    .option('--snapshot', 'the reference names a snapshot', false)
    .option('--vg <vg>', VG_HELP)
    .action(async (ref: string, opts: { snapshot: boolean; vg?: string }) => {
      const { kind, id, vg, byLvName } = quarantineRef(ref, opts);
      const scope = await commandScope(io, ctx.services().volumes, vg);
      const report = await ctx
        .services()
        .quarantine.inspect(kind, id, { vgNames: scope.vgNames, ownerId: ctx.globals().ownerId })
        .catch(snapshotHint(kind, byLvName));
      if (ctx.globals().json) {
        writeJson(io, report);
        return;
      }
      const { lv, header } = report;
      const lines = [
        `${lv.kind}: ${lv.id}`,
        `lv:       ${lv.vgName}/${lv.lvName} (${formatBytes(lv.sizeBytes)})`,
        `since:    ${lv.quarantinedAtMs === null ? unreadableSince(lv.tags) : isoTime(lv.quarantinedAtMs)}`,
        `owned:    ${lv.owned ? 'yes (tags lvstamp and this owner)' : 'NO: not this owner, never restored'}`,
        `tags:     ${lv.tags.join(',') || '-'}`,
        `header:   ${header.status}`,
      ];
      if (header.status === 'ok') {
        lines.push(
          `name:     ${header.header.name}`,
          `created:  ${isoTime(header.header.createdAtMs)}`,
          `owner:    ${header.header.ownerId}`,
        );
      } else {
        lines.push(`reason:   ${header.reason}`);
      }
      // A header's name is read from disk: escaped, it cannot drive the terminal or add a line.
      io.stdout.write(`${lines.map(printable).join('\n')}\n`);
    });

  quarantine
    .command('restore')
    .description('give a quarantined volume (or --snapshot) its name back and print how to bind it')
    .argument('<ref>', 'volume name (e.g. the PV name pvc-…) or ID')
    .option('--snapshot', 'the reference names a snapshot', false)
    .option('--vg <vg>', VG_HELP)
    .option(
      '--storage-class <name>',
      'StorageClass of the old claim, for the printed PersistentVolume',
    )
    .option(
      '--node <name>',
      "this node's Kubernetes name (the driver's --node-id, often not the host name), for the node affinity",
    )
    .addOption(
      new Option(
        '--volume-mode <mode>',
        'volumeMode of the printed PersistentVolume when blkid cannot tell, or Block over a filesystem',
      ).choices(['Block', 'Filesystem']),
    )
    .addOption(
      new Option(
        '--fs-type <type>',
        'with --volume-mode Filesystem when the data area cannot be probed',
      ).choices([...FS_TYPES]),
    )
    .addHelpText(
      'after',
      "\nRefused when a volume (snapshot) with that ID exists again, when the LV lacks this owner's tags,\n" +
        "or when its sector-0 header is not this owner's header of that ID. Runs under the host lock.\n" +
        'A restore of an ID that is restored already (no quarantined LV left, the live LV with the tags\n' +
        'and header of this owner) changes nothing and exits 0: run it again to print the PersistentVolume.\n' +
        '\nThe PersistentVolume is printed with --storage-class and --node. Its volumeMode comes from the\n' +
        'data area (blkid -p behind the header): ext4 or xfs there gives Filesystem with that fsType;\n' +
        'nothing, or anything else, gives Block, which is never formatted (a raw-block volume bound as\n' +
        'Filesystem would be formatted when staged: its data carries no signature). The output says which\n' +
        'and why. Create it (and a claim bound to it) before the next GC run: until a PV references it,\n' +
        'the restored volume is an orphan again. A GC run with a quarantine window (the default, 7d)\n' +
        'quarantines it again, its window starting anew; a run with --quarantine 0\n' +
        '(LVSTAMP_GC_QUARANTINE=0) removes it at once, data and all: the grace period (--min-age) counts\n' +
        'from the creation time in its header, not from the restore.',
    )
    .action(
      async (
        ref: string,
        opts: {
          snapshot: boolean;
          vg?: string;
          storageClass?: string;
          node?: string;
          volumeMode?: 'Block' | 'Filesystem';
          fsType?: string;
        },
      ) => {
        checkRecipeOptions(opts);
        const { kind, id, vg, byLvName } = quarantineRef(ref, opts);
        const scope = await commandScope(io, ctx.services().volumes, vg);
        const restored = await ctx
          .services()
          .quarantine.restore(kind, id, { vgNames: scope.vgNames, ownerId: ctx.globals().ownerId })
          .catch(snapshotHint(kind, byLvName));
        const mode =
          kind === 'volume' ? chooseVolumeMode(await probeDataArea(ctx, restored), opts) : null;
        if (ctx.globals().json) {
          writeJson(io, { ...restored, volumeMode: mode });
          return;
        }
        const what =
          `${kind} ${restored.id} as ${restored.vgName}/${restored.lvName}` +
          // a snapshot's header is its source volume's: say whose name it is
          ` (${kind === 'snapshot' ? 'of volume ' : 'name '}"${restored.header.name}"` +
          `${restored.capacityBytes === null ? '' : `, ${formatBytes(restored.capacityBytes)}`})`;
        io.stdout.write(
          restored.alreadyRestored
            ? `already restored: ${printable(what)}; nothing was changed\n`
            : `restored ${printable(what)}\n`,
        );
        if (mode !== null) io.stdout.write(recipeOrWhyNot(restored, mode, opts));
        if (kind === 'snapshot') io.stdout.write(snapshotBindHint(restored.id));
        // an option of the person's own was refused: the volume is back, but a script must see it
        if (mode?.mode === null && (opts.volumeMode !== undefined || opts.fsType !== undefined)) {
          throw new ReportedFailure(
            'the volume is restored, but no PersistentVolume was printed (the reason above); run the restore again with the options it names',
          );
        }
      },
    );

  quarantine
    .command('purge')
    .description('remove quarantined volumes and snapshots now (dry run unless --apply)')
    .argument(
      '[lv...]',
      "only these quarantined LVs, each [<vg>/]lvstamp_q_<id> (lvstamp_qs_<id>) as quarantine list shows it, or [<vg>/] a volume's PV name or ID (default: all)",
    )
    .option('--older-than <duration>', 'only those quarantined at least this long ago', '0s')
    .addOption(wipeOption('before removing a thick quarantined volume'))
    .addOption(new Option('--apply', 'remove them').default(false, 'print the plan only'))
    .option('--vg <vg>', VG_HELP)
    .addHelpText(
      'after',
      "\nRemoves only LVs that carry lvstamp and this owner's tag and a quarantine time, whose sector-0\n" +
        "header is this owner's with the name's ID (a snapshot: its source's), and that are not open.\n" +
        'Everything else is kept, with the reason printed. Naming an LV picks exactly that one, e.g. the\n' +
        'quarantined copy of an ID that exists again (which restore refuses): lvstamp quarantine purge\n' +
        'vg0/lvstamp_q_<id> --apply. A name that is no quarantined LV in the scope removes nothing (exit 1);\n' +
        'a named LV that is kept (the reason printed) exits 1 too, in a dry run as when applied.\n' +
        `Durations: ${DURATION_SYNTAX}.`,
    )
    .action(
      async (
        lvs: string[],
        opts: { olderThan: string; wipe: WipePolicy; apply: boolean; vg?: string },
      ) => {
        const olderThanMs = parseDuration(opts.olderThan);
        const refs = lvs.map((lv) => purgeRef(lv, opts.vg));
        const named = refs.map(({ vg, lvName }) => (vg === undefined ? lvName : `${vg}/${lvName}`));
        const groups = new Set([
          ...(opts.vg === undefined ? [] : [opts.vg]),
          ...refs.flatMap(({ vg }) => (vg === undefined ? [] : [vg])),
        ]);
        if (groups.size > 0) await ctx.services().volumes.requireVolumeGroups([...groups]);
        const gc = ctx.services().gc;
        const { plan, vgNames } = await gc.planPurge({
          ownerId: ctx.globals().ownerId,
          olderThanMs,
          nowMs: ctx.deps.now(),
          dryRun: !opts.apply,
          wipe: opts.wipe,
          ...(opts.vg === undefined ? {} : { vgNames: [opts.vg] }),
          ...(named.length === 0 ? {} : { lvs: named }),
        });
        progress(
          io,
          describeScope({ vgNames, source: opts.vg === undefined ? 'discovered' : '--vg' }),
        );
        let outcomes: readonly GcOutcome[] = [];
        if (opts.apply && plan.entries.some((e) => e.action !== 'keep')) {
          outcomes = await gc.apply(plan);
        }
        if (ctx.globals().json) {
          writeJson(io, {
            dryRun: plan.dryRun,
            olderThanMs,
            wipe: opts.wipe,
            volumeGroups: vgNames,
            plan,
            outcomes,
          });
        } else {
          const { header, rows } = planTable(plan, outcomes);
          io.stdout.write(renderTable(header, rows));
          const planned = plan.entries.filter((e) => e.action !== 'keep').length;
          io.stdout.write(
            `${plan.entries.length} quarantined, ${planned} to remove (older than ${formatDuration(olderThanMs)}); ` +
              (plan.dryRun
                ? 'dry run: nothing was removed (use --apply)\n'
                : `${outcomes.filter((o) => o.outcome === 'removed').length} removed\n`),
          );
        }
        const failed = outcomes.filter((o) => o.outcome === 'failed').length;
        if (failed > 0)
          throw new ReportedFailure(
            `${failed} of the planned removals failed; see the table above`,
          );
        // Named LVs are the ones asked for: one kept (not provably ours, open, its group
        // broken...) is a failure a script must see, not a quiet exit 0.
        const kept = lvs.length === 0 ? 0 : plan.entries.filter((e) => e.action === 'keep').length;
        if (kept > 0)
          throw new ReportedFailure(
            `${kept} of the named LVs ${plan.dryRun ? 'would be' : 'were'} kept, not removed; see the reasons above`,
          );
      },
    );
}

/**
 * Why a quarantined LV has no quarantine time: no `lvstamp.quarantined=`
 * tag, or one that is no Unix time in seconds, or several (the tags named).
 */
function unreadableSince(tags: readonly string[]): string {
  const found = quarantineTagsOf(tags);
  if (found.length === 0) return 'no quarantine tag';
  return `unreadable quarantine tag${found.length > 1 ? 's' : ''} ${found.join(', ')} (want one lvstamp.quarantined=<Unix seconds>)`;
}

/**
 * The hint a missing quarantined volume gets: a snapshot's name maps to
 * another ID (DESIGN.md §3), and its LV has another prefix.
 */
function snapshotHint(kind: QuarantinedKind, byLvName: boolean): (error: unknown) => never {
  return (error) => {
    if (error instanceof NotFoundError && kind === 'volume') {
      const hint = byLvName
        ? "a snapshot's LV is lvstamp_qs_<id>"
        : 'for a snapshot, add --snapshot';
      throw new NotFoundError(`${error.message}; ${hint}`);
    }
    throw error;
  };
}

/**
 * The data area of a restored volume as blkid sees it (behind the header,
 * at its data offset), or `unknown` with the reason (no active device, a
 * failed probe): chooseVolumeMode decides from it.
 */
async function probeDataArea(ctx: CommandContext, restored: RestoredLv): Promise<DataAreaProbe> {
  if (restored.devicePath === null) return { kind: 'unknown', reason: 'the LV is not active' };
  try {
    return await ctx.services().filesystems.probe(restored.devicePath, {
      offsetBytes: restored.header.dataOffsetBytes,
    });
  } catch (error) {
    return { kind: 'unknown', reason: messageOf(error) };
  }
}
