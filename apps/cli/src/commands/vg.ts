import { renderTable } from '@lvstamp/app-kit';
import type { Command } from 'commander';
import { UsageError } from '../errors.js';
import { progress, writeJson } from '../output.js';
import type { CommandContext } from '../context.js';
import { formatBytes, parseSize } from '../quantity.js';

/** `lvstamp vg create|list|remove`. */
export function registerVolumeGroupCommands(program: Command, ctx: CommandContext): void {
  const vg = program.command('vg').description('manage volume groups for lvstamp');
  const { io } = ctx.deps;

  vg.command('create')
    .description('create a volume group on DEVICEs, or on a new loop-backed FILE (--loop, --size)')
    .argument('<name>', 'volume group name')
    .argument('[devices...]', 'block devices to use as physical volumes')
    .option('--loop <file>', 'create FILE (sparse) and back the volume group with a loop device')
    .option('--size <size>', 'size of the loop file, e.g. 1Gi (only with --loop)')
    .addHelpText(
      'after',
      '\nExamples:\n  lvstamp vg create demo --loop /var/tmp/demo.img --size 2Gi\n  lvstamp vg create data /dev/sdb /dev/sdc',
    )
    .action(async (name: string, devices: string[], opts: { loop?: string; size?: string }) => {
      const admin = ctx.services().volumeGroups;
      if (opts.loop !== undefined) {
        if (devices.length > 0)
          throw new UsageError('give either --loop FILE or DEVICEs, not both');
        if (opts.size === undefined) throw new UsageError('--loop needs --size, e.g. --size 2Gi');
        const sizeBytes = parseSize(opts.size);
        progress(
          io,
          `creating ${formatBytes(sizeBytes)} loop file ${opts.loop} and volume group ${name}`,
        );
        const result = await admin.createOnLoop({ name, file: opts.loop, sizeBytes });
        if (ctx.globals().json) writeJson(io, result);
        else
          io.stdout.write(`volume group ${name} created on ${result.loopDevice} (${opts.loop})\n`);
        return;
      }
      if (opts.size !== undefined) throw new UsageError('--size applies only with --loop');
      if (devices.length === 0) throw new UsageError('give DEVICEs, or --loop FILE --size SIZE');
      progress(io, `creating volume group ${name} on ${devices.join(', ')}`);
      const result = await admin.create({ name, devices });
      if (ctx.globals().json) writeJson(io, result);
      else io.stdout.write(`volume group ${name} created on ${devices.join(', ')}\n`);
    });

  vg.command('list')
    .description('list volume groups with their size, free space and extent size')
    .action(async () => {
      const admin = ctx.services().volumeGroups;
      const groups = await admin.list();
      if (ctx.globals().json) {
        writeJson(io, groups);
        return;
      }
      io.stdout.write(
        renderTable(
          ['name', 'size', 'free', 'extent', 'lvstamp'],
          groups.map((g) => [
            g.name,
            formatBytes(g.sizeBytes),
            formatBytes(g.freeBytes),
            formatBytes(g.extentSizeBytes),
            admin.isLvstampGroup(g) ? 'yes' : 'no',
          ]),
        ),
      );
    });

  vg.command('remove')
    .description('remove an empty volume group created by lvstamp and detach its loop devices')
    .argument('<name>', 'volume group name')
    .action(async (name: string) => {
      progress(io, `removing volume group ${name}`);
      const result = await ctx.services().volumeGroups.remove(name);
      if (ctx.globals().json) writeJson(io, result);
      else {
        const loops = result.detachedLoopDevices;
        io.stdout.write(
          `volume group ${name} removed${loops.length ? `; detached ${loops.join(', ')} (backing files kept)` : ''}\n`,
        );
      }
    });
}
