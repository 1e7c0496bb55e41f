import { renderTable } from '@lvstamp/app-kit';
import {
  FailedPreconditionError,
  NotOwnedError,
  requireNoControlCharacters,
  validateVolumeName,
  type Snapshot,
} from '@lvstamp/core';
import type { Command } from 'commander';
import type { CommandContext } from '../context.js';
import { absentLine, progress, writeJson } from '../output.js';
import { formatBytes } from '../quantity.js';
import { checkRef } from '../refs.js';
import { commandScope } from '../scope.js';

const VG_HELP =
  'look only in this volume group (default: those tagged lvstamp or holding lvstamp volumes)';

/** What `snapshot delete --force-unowned` skips, word for word in its help and its output. */
export const SNAPSHOT_FORCE_UNOWNED_SKIPS =
  'the lvstamp tag, the owner tag lvstamp.owner=<owner ID>, the lvstamp.source tag and sector 0 (the source volume header of this owner)';

/** `lvstamp snapshot create|list|delete` (docs/DESIGN.md §5 "Snapshots"). */
export function registerSnapshotCommands(program: Command, ctx: CommandContext): void {
  const { io } = ctx.deps;
  const json = (): boolean => ctx.globals().json;
  const snapshot = program
    .command('snapshot')
    .description('read-only thin snapshots of thin volumes');

  snapshot
    .command('create')
    .description(
      'take a snapshot of a thin volume (a mounted filesystem is frozen for the moment it takes)',
    )
    .argument('<name>', 'snapshot name (1–128 bytes of UTF-8)')
    .requiredOption('--from <volume>', 'the volume (name or ID) to snapshot')
    .option('--vg <vg>', VG_HELP)
    .addHelpText('after', '\nExample:\n  lvstamp snapshot create nightly --from data')
    .action(async (name: string, opts: { from: string; vg?: string }) => {
      validateVolumeName(name, 'snapshot name');
      requireNoControlCharacters(name, 'snapshot name');
      checkRef(opts.from, 'volume');
      const { volumes, snapshots } = ctx.services();
      const scope = await commandScope(io, volumes, opts.vg);
      const sourceVolumeId = await volumes.resolve(opts.from, scope);
      progress(io, `taking snapshot ${name} of ${opts.from}`);
      const taken = await snapshots.createSnapshot({
        name,
        sourceVolumeId,
        scope: { ...scope, ownerId: ctx.globals().ownerId },
      });
      if (json()) writeJson(io, snapshotJson(taken));
      else
        io.stdout.write(
          `snapshot ${name} ready: id ${taken.snapshotId}, of volume ${taken.sourceVolumeId} ` +
            `(${formatBytes(taken.sizeBytes)}) on ${taken.vgName}/${taken.lvName}\n`,
        );
    });

  snapshot
    .command('list')
    .description("list this owner's snapshots, sorted by ID")
    .option('--source <volume>', 'only the snapshots of this volume (name or ID)')
    .option('--vg <vg>', VG_HELP)
    .action(async (opts: { source?: string; vg?: string }) => {
      if (opts.source !== undefined) checkRef(opts.source, 'volume');
      const { volumes, snapshots } = ctx.services();
      const scope = await commandScope(io, volumes, opts.vg);
      const source =
        opts.source === undefined ? undefined : await volumes.resolve(opts.source, scope);
      const list = (
        await snapshots.listSnapshots({ ...scope, ownerId: ctx.globals().ownerId })
      ).filter((s) => source === undefined || s.sourceVolumeId === source);
      if (json()) {
        writeJson(io, { volumeGroups: scope.vgNames, snapshots: list.map(snapshotJson) });
        return;
      }
      io.stdout.write(
        renderTable(
          ['id', 'source volume', 'size', 'created', 'lv'],
          list.map((s) => [
            s.snapshotId,
            s.sourceVolumeId,
            formatBytes(s.sizeBytes),
            new Date(s.createdMs).toISOString(),
            `${s.vgName}/${s.lvName}`,
          ]),
        ),
      );
    });

  snapshot
    .command('delete')
    .description(
      "delete a snapshot (refused when it does not prove it is this owner's); deleting twice succeeds",
    )
    .argument('<snapshot>', 'snapshot name or ID')
    .option('--vg <vg>', VG_HELP)
    .option(
      '--force-unowned',
      `delete even when the LV does not prove it is this owner's: skips the checks of ${SNAPSHOT_FORCE_UNOWNED_SKIPS}; never the volume group scope, the lvstamp_snap_ name or the "not open" check`,
      false,
    )
    .action(async (ref: string, opts: { vg?: string; forceUnowned: boolean }) => {
      checkRef(ref, 'snapshot');
      const { volumes, snapshots } = ctx.services();
      const scope = {
        ...(await commandScope(io, volumes, opts.vg)),
        ownerId: ctx.globals().ownerId,
      };
      const id = await snapshots.resolveSnapshot(ref, scope);
      if (opts.forceUnowned) {
        progress(io, `--force-unowned: not checking ${SNAPSHOT_FORCE_UNOWNED_SKIPS}`);
      }
      progress(io, `deleting snapshot ${ref}`);
      const result = await snapshots
        .deleteSnapshot(id, scope, { forceUnowned: opts.forceUnowned })
        .catch((error: unknown) => {
          if (error instanceof NotOwnedError) {
            throw new FailedPreconditionError(
              `${error.message} (lvstamp snapshot delete --force-unowned skips these checks)`,
            );
          }
          throw error;
        });
      if (json()) writeJson(io, { snapshotId: id, ...result, volumeGroups: scope.vgNames });
      else
        io.stdout.write(
          result.existed
            ? `deleted snapshot ${ref}\n`
            : absentLine(`snapshot ${ref}`, ref, id, 'lvstamp snapshot list'),
        );
    });
}

/** The JSON shape of a snapshot for `--json`. */
export function snapshotJson(s: Snapshot): Record<string, unknown> {
  return {
    snapshotId: s.snapshotId,
    sourceVolumeId: s.sourceVolumeId,
    sizeBytes: s.sizeBytes,
    createdAt: new Date(s.createdMs).toISOString(),
    vg: s.vgName,
    lv: s.lvName,
  };
}
