import { listQuarantined } from './quarantine-list.js';
import { printable, renderTable } from '@lvstamp/app-kit';
import {
  FailedPreconditionError,
  InvalidArgumentError,
  isHexId,
  NotFoundError,
  NotOwnedError,
  requireNoControlCharacters,
  validateVolumeName,
  type VolumeStatus,
  type WipePolicy,
} from '@lvstamp/core';
import type { Command } from 'commander';
import { UsageError } from '../errors.js';
import { wipeOption } from './wipe-option.js';
import { absentLine, progress, writeJson } from '../output.js';
import type { CommandContext } from '../context.js';
import { formatBytes, formatCapacity, parseSize } from '../quantity.js';
import { checkRef } from '../refs.js';
import { commandScope } from '../scope.js';
import { orQuarantined, refuseDeleteOfQuarantined } from '../quarantined.js';

const VG_HELP =
  'look only in this volume group (default: those tagged lvstamp or holding lvstamp volumes)';

/** What `delete --force-unowned` skips, word for word in its help and its output. */
export const FORCE_UNOWNED_SKIPS =
  'the lvstamp tag, the owner tag lvstamp.owner=<owner ID> and the sector-0 header (valid, with the volume ID of the name and this owner)';

/** `lvstamp create|list|inspect|attach|detach|resize|delete`. */
export function registerVolumeCommands(program: Command, ctx: CommandContext): void {
  const { io } = ctx.deps;
  const json = (): boolean => ctx.globals().json;
  const printCreated = (name: string, status: VolumeStatus): void => {
    if (json()) writeJson(io, statusJson(status));
    else
      io.stdout.write(
        `volume ${name} ready: id ${status.volume.volumeId}, ${formatCapacity(status.volume.capacityBytes)} ` +
          `usable on ${status.volume.vgName}/${status.volume.lvName} (${formatBytes(status.volume.sizeBytes)} LV)\n`,
      );
  };

  program
    .command('create')
    .description(
      'create a volume: an LV with a provenance header, of at least SIZE usable bytes, or a thin copy of a snapshot or volume',
    )
    .argument('<name>', 'volume name (1–128 bytes of UTF-8)')
    .option(
      '--size <size>',
      'capacity, e.g. 512Mi or 1Gi; rounded up to whole extents (a copy: default and minimum the source capacity)',
    )
    .option('--vg <vg>', 'volume group (default: the one volume group tagged lvstamp)')
    .option('--from-snapshot <snapshot>', "a copy of this snapshot's data (name or ID)")
    .option('--from-volume <volume>', "a copy (clone) of this thin volume's data (name or ID)")
    .addHelpText(
      'after',
      '\nExamples:\n  lvstamp create scratch --size 512Mi --vg demo\n  lvstamp create restored --from-snapshot nightly',
    )
    .action(
      async (
        name: string,
        opts: { size?: string; vg?: string; fromSnapshot?: string; fromVolume?: string },
      ) => {
        if (opts.fromSnapshot !== undefined && opts.fromVolume !== undefined) {
          throw new UsageError('--from-snapshot and --from-volume exclude each other');
        }
        const from = opts.fromSnapshot ?? opts.fromVolume;
        if (opts.size === undefined && from === undefined) {
          throw new UsageError("required option '--size <size>' not specified");
        }
        const requiredBytes = opts.size === undefined ? 0 : parseSize(opts.size);
        checkNewVolumeName(name);
        if (opts.fromSnapshot !== undefined) checkRef(opts.fromSnapshot, 'snapshot');
        if (opts.fromVolume !== undefined) checkRef(opts.fromVolume, 'volume');
        const services = ctx.services();
        const volumes = services.volumes;
        if (from !== undefined) {
          const scope = await commandScope(io, volumes, opts.vg);
          const owned = { ...scope, ownerId: ctx.globals().ownerId };
          const source =
            opts.fromSnapshot !== undefined
              ? {
                  kind: 'snapshot' as const,
                  id: await services.snapshots.resolveSnapshot(opts.fromSnapshot, owned),
                }
              : { kind: 'volume' as const, id: await volumes.resolve(from, scope) };
          const origin =
            source.kind === 'snapshot'
              ? await services.snapshots.findSnapshot(source.id, owned)
              : await volumes.findVolume(source.id, scope);
          if (origin === null) throw new NotFoundError(`${source.kind} ${from} does not exist`);
          progress(io, `creating volume ${name} from ${source.kind} ${from} in ${origin.vgName}`);
          const created = await services.snapshots.createVolumeFrom({
            name,
            source,
            requiredBytes,
            vgName: origin.vgName,
            scope: owned,
          });
          const status = await volumes.status(created.volumeId, { vgNames: [origin.vgName] });
          printCreated(name, status);
          return;
        }
        const vgName = opts.vg ?? (await volumes.defaultVolumeGroup());
        progress(io, `creating volume ${name} (${formatBytes(requiredBytes)}) in ${vgName}`);
        const status = await volumes.create({
          name,
          requiredBytes,
          vgName,
          ownerId: ctx.globals().ownerId,
        });
        printCreated(name, status);
      },
    );

  program
    .command('list')
    .description('list lvstamp volumes, including interrupted creates')
    .option('--vg <vg>', VG_HELP)
    .option(
      '--quarantined',
      "list the quarantined volumes and snapshots instead (a thin LV's size is virtual, never counted as held)",
      false,
    )
    .action(async (opts: { vg?: string; quarantined: boolean }) => {
      if (opts.quarantined) return listQuarantined(ctx, opts.vg);
      const volumes = ctx.services().volumes;
      const scope = await commandScope(io, volumes, opts.vg);
      const list = await volumes.list(scope);
      if (json()) {
        writeJson(io, { volumeGroups: scope.vgNames, volumes: list.map(statusJson) });
        return;
      }
      io.stdout.write(
        renderTable(
          ['name', 'id', 'vg', 'capacity', 'state', 'header', 'data device', 'mounted on'],
          list.map((s) => [
            s.name ?? '-',
            s.volume.volumeId,
            s.volume.vgName,
            formatCapacity(s.volume.capacityBytes),
            s.volume.creating ? 'creating' : s.volume.active ? 'active' : 'inactive',
            s.header.status,
            s.dataDevice?.path ?? '-',
            s.mountPoints.join(',') || '-',
          ]),
        ),
      );
    });

  program
    .command('inspect')
    .description(
      'decode the sector-0 header of a volume (NAME or ID), a block device or an image file',
    )
    .argument('<target>', 'volume name, volume ID, device path or image file')
    .option('--vg <vg>', VG_HELP)
    .action(async (target: string, opts: { vg?: string }) => {
      let scope: ReturnType<typeof commandScope> | undefined;
      const scopeOnce = () => (scope ??= commandScope(io, ctx.services().volumes, opts.vg));
      const report = await orQuarantined(
        ctx,
        target,
        async () => (await scopeOnce()).vgNames,
        () => ctx.services().inspector.inspect(target, scopeOnce),
      );
      if (json()) {
        writeJson(io, report);
        return;
      }
      const lines = [
        `target:   ${report.target}`,
        `device:   ${report.devicePath}`,
        `status:   ${report.decode.status}`,
      ];
      if (report.decode.status === 'ok') {
        const h = report.decode.header;
        lines.push(
          `version:  ${report.decode.version}`,
          `name:     ${h.name}`,
          `id:       ${h.volumeId}`,
          `owner:    ${h.ownerId}`,
          `created:  ${new Date(h.createdAtMs).toISOString()}`,
          report.decode.version === 1
            ? `requested: ${formatBytes(h.requestedBytes)} (${h.requestedBytes} bytes)`
            : `capacity: ${formatBytes(h.requestedBytes)} (${h.requestedBytes} bytes)`,
          `data offset: ${h.dataOffsetBytes} bytes`,
        );
      }
      lines.push(`meaning:  ${report.explanation}`);
      // A header's name is read from disk: escaped, it cannot drive the terminal or add a line.
      io.stdout.write(`${lines.map(printable).join('\n')}\n`);
    });

  program
    .command('attach')
    .description('create the data device (device-mapper map over the data area) and print its path')
    .argument('<volume>', 'volume name or ID')
    .option('--vg <vg>', VG_HELP)
    .action(async (ref: string, opts: { vg?: string }) => {
      checkRef(ref, 'volume');
      const volumes = ctx.services().volumes;
      const scope = await commandScope(io, volumes, opts.vg);
      const id = await volumes.resolve(ref, scope);
      const device = await orQuarantined(ctx, ref, inScope(scope), () =>
        volumes.attach(id, { ...scope, ownerId: ctx.globals().ownerId }),
      );
      if (json()) writeJson(io, device);
      else io.stdout.write(`${device.path}\n`);
    });

  program
    .command('detach')
    .description(
      'remove the data device of a volume (refused while it is open or mounted, or when the volume is not in the volume groups looked in; a data device whose LV is gone is still removed)',
    )
    .argument('<volume>', 'volume name or ID')
    .option('--vg <vg>', VG_HELP)
    .action(async (ref: string, opts: { vg?: string }) => {
      checkRef(ref, 'volume');
      const volumes = ctx.services().volumes;
      const scope = await commandScope(io, volumes, opts.vg);
      const id = await volumes.resolve(ref, scope);
      const result = await volumes.detach(id, scope);
      if (json()) writeJson(io, result);
      else io.stdout.write(result.removed ? `detached ${ref}\n` : `${ref} was not attached\n`);
    });

  program
    .command('resize')
    .description(
      'grow a volume: the LV, its data device and a mounted filesystem (online); ' +
        'at a size it already has, finishes an interrupted resize (map reload, filesystem grow)',
    )
    .argument('<volume>', 'volume name or ID')
    .requiredOption('--size <size>', 'new capacity, e.g. 1Gi; volumes only grow')
    .option('--vg <vg>', VG_HELP)
    .action(async (ref: string, opts: { size: string; vg?: string }) => {
      const requiredBytes = parseSize(opts.size);
      checkRef(ref, 'volume');
      const volumes = ctx.services().volumes;
      const scope = await commandScope(io, volumes, opts.vg);
      const id = await volumes.resolve(ref, scope);
      progress(io, `growing ${ref} to ${formatBytes(requiredBytes)}`);
      // Always through expand, as NodeExpandVolume: when the LV already has the size (an
      // interrupted resize, an lvextend by hand) the map is still reloaded and a mounted
      // filesystem still grown, so every earlier partial attempt converges (DESIGN.md §2.2).
      const result = await orQuarantined(ctx, ref, inScope(scope), () =>
        volumes.expand(id, requiredBytes, { ...scope, ownerId: ctx.globals().ownerId }),
      );
      if (json())
        writeJson(io, {
          ...statusJson(result.status),
          filesystemGrown: result.filesystemGrown,
          volumeGroups: scope.vgNames,
        });
      else
        io.stdout.write(
          `${ref}: capacity ${formatCapacity(result.status.volume.capacityBytes)}` +
            ((result.status.volume.capacityBytes ?? 0) > requiredBytes
              ? ` (more than ${formatBytes(requiredBytes)}: volumes never shrink)`
              : '') +
            (result.filesystemGrown ? `; filesystem on ${result.filesystemGrown} grown` : '') +
            '\n',
        );
    });

  program
    .command('delete')
    .description(
      "delete a volume: its data device and LV (refused while open, or when the LV does not prove it is this owner's); deleting twice succeeds",
    )
    .argument('<volume>', 'volume name or ID')
    .addOption(wipeOption('before removing a thick volume'))
    .option('--vg <vg>', VG_HELP)
    .option(
      '--force-unowned',
      `delete even when the LV does not prove it is this owner's: skips the checks of ${FORCE_UNOWNED_SKIPS}; never the volume group scope, the lvstamp_ name or the "not open" check`,
      false,
    )
    .addHelpText(
      'after',
      '\nBefore removing, every LV of the volume must carry the lvstamp tag and lvstamp.owner=<owner ID>,\n' +
        'and the finished LV a valid header with its volume ID and this owner (an lvstamp_new_ leftover of\n' +
        'an interrupted create has no header yet: tags only). A failed check removes nothing and exits 1.\n' +
        'A volume the GC quarantined (lvstamp_q_<id>) is not deleted either: exit 1, naming it and\n' +
        '`lvstamp quarantine purge` (attach, resize and inspect name it too).',
    )
    .action(async (ref: string, opts: { wipe: WipePolicy; vg?: string; forceUnowned: boolean }) => {
      checkRef(ref, 'volume');
      const volumes = ctx.services().volumes;
      const scope = await commandScope(io, volumes, opts.vg);
      const id = await volumes.resolve(ref, scope);
      if (opts.forceUnowned) progress(io, `--force-unowned: not checking ${FORCE_UNOWNED_SKIPS}`);
      progress(io, `deleting ${ref}`);
      const result = await volumes
        .delete(
          id,
          { ...scope, ownerId: ctx.globals().ownerId },
          { wipe: opts.wipe, forceUnowned: opts.forceUnowned },
        )
        .catch((error: unknown) => {
          if (error instanceof NotOwnedError) {
            throw new FailedPreconditionError(
              `${error.message} (lvstamp delete --force-unowned skips these checks)`,
            );
          }
          throw error;
        });
      if (!result.existed) await refuseDeleteOfQuarantined(ctx, ref, scope.vgNames);
      if (json())
        writeJson(io, {
          volumeId: id,
          ...result,
          volumeGroups: scope.vgNames,
          skippedChecks: opts.forceUnowned ? FORCE_UNOWNED_SKIPS : null,
        });
      else
        io.stdout.write(
          result.existed
            ? `deleted ${ref}` +
                (opts.forceUnowned
                  ? ` (--force-unowned: not checked: ${FORCE_UNOWNED_SKIPS})`
                  : '') +
                '\n'
            : absentLine(ref, ref, id, 'lvstamp list'),
        );
    });
}

/** The JSON shape of a volume for `--json`. */
export function statusJson(s: VolumeStatus): Record<string, unknown> {
  return {
    name: s.name,
    volumeId: s.volume.volumeId,
    vg: s.volume.vgName,
    lv: s.volume.lvName,
    lvSizeBytes: s.volume.sizeBytes,
    capacityBytes: s.volume.capacityBytes,
    creating: s.volume.creating,
    active: s.volume.active,
    header: s.header.status,
    ownerId: s.header.status === 'ok' ? s.header.header.ownerId : null,
    createdAt:
      s.header.status === 'ok' ? new Date(s.header.header.createdAtMs).toISOString() : null,
    dataDevice: s.dataDevice?.path ?? null,
    mountPoints: s.mountPoints,
  };
}

/**
 * The CLI's own rule for new volume names, on top of the core's (1–128
 * bytes of UTF-8, checked here first so that nothing runs before the
 * refusal): no control characters, no leading or trailing white space, and
 * not 32 hex digits — each would make the name unusable in a live-set file
 * or ambiguous with a volume ID.
 * @throws InvalidArgumentError naming the problem.
 */
export function checkNewVolumeName(name: string): void {
  validateVolumeName(name);
  requireNoControlCharacters(name, 'volume name');
  if (name !== name.trim())
    throw new InvalidArgumentError('volume name must not start or end with white space');
  if (isHexId(name)) {
    throw new InvalidArgumentError(
      'volume name must not be 32 hex digits: it would be ambiguous with a volume ID',
    );
  }
}

/** The scope's groups, for orQuarantined. */
const inScope =
  (scope: { readonly vgNames: readonly string[] }) => (): Promise<readonly string[]> =>
    Promise.resolve(scope.vgNames);
