import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { formatDuration, messageOf, ReportedFailure } from '@lvstamp/app-kit';
import type { GcOutcome, GcPlan } from '@lvstamp/core';
import type { Command } from 'commander';
import type { Io } from '../output.js';
import type { CommandContext } from '../context.js';
import { formatBytes, formatCapacity } from '../quantity.js';
import type { CliServices } from '../services.js';
import { isoTime } from './quarantine-list.js';

const MiB = 1024 * 1024;
const GRACE_MS = 3_000;
/** The quarantine window of `lvstamp gc` and the CronJob by default (DESIGN.md §6 "Quarantine"). */
const QUARANTINE_MS = 7 * 86_400_000;

/**
 * `lvstamp demo`: the whole life cycle on a throw-away loop-backed volume
 * group: create, stamp, attach, format, mount, grow, garbage-collect (the
 * leak quarantined, then purged), delete.
 */
export function registerDemoCommand(program: Command, ctx: CommandContext): void {
  program
    .command('demo')
    .description(
      'run the whole life cycle on a temporary loop-backed volume group (needs root and device-mapper)',
    )
    .option('--dir <dir>', 'where to put the loop file and mount point', tmpdir())
    .action(async (opts: { dir: string }) => {
      const services = ctx.services();
      const check = await services.canActivate();
      if (!check.ok)
        throw new ReportedFailure(
          `the demo needs real volumes and cannot run here: ${check.reason}`,
        );
      await runDemo(services, ctx.deps.io, {
        dir: opts.dir,
        ownerId: ctx.globals().ownerId,
        now: ctx.deps.now,
      });
    });
}

interface DemoOptions {
  readonly dir: string;
  readonly ownerId: string;
  readonly now: () => number;
}

async function runDemo(s: CliServices, io: Io, opts: DemoOptions): Promise<void> {
  const started = opts.now();
  let stepNo = 0;
  const step = async <T>(title: string, fn: () => Promise<T>): Promise<T> => {
    stepNo += 1;
    io.stdout.write(`\n[${stepNo}] ${title}\n`);
    const t0 = opts.now();
    const value = await fn();
    io.stdout.write(`    done in ${opts.now() - t0} ms\n`);
    return value;
  };
  const say = (text: string): void => {
    io.stdout.write(`    ${text.split('\n').join('\n    ')}\n`);
  };
  /** Applies a GC or purge plan and says each outcome. */
  const applied = async (plan: GcPlan): Promise<readonly GcOutcome[]> => {
    const outcomes = await s.gc.apply(plan);
    for (const o of outcomes)
      say(`${o.entry.device}: ${o.outcome}${o.detail ? `: ${o.detail}` : ''}`);
    return outcomes;
  };

  const workDir = await mkdtemp(join(opts.dir, 'lvstamp-demo-'));
  const vgName = `lvstamp_demo_${workDir.slice(-6).replace(/[^A-Za-z0-9]/g, 'x')}`;
  const loopFile = join(workDir, 'pv0.img');
  const mountPoint = join(workDir, 'mnt-a');
  const cleanup: (() => Promise<unknown>)[] = [];
  let failure: unknown;
  try {
    await step(
      `create volume group ${vgName} on a 1 GiB sparse loop file ${loopFile}`,
      async () => {
        const r = await s.volumeGroups.createOnLoop({
          name: vgName,
          file: loopFile,
          sizeBytes: 1024 * MiB,
        });
        cleanup.unshift(() => s.volumeGroups.remove(vgName));
        say(`loop device ${r.loopDevice}`);
      },
    );

    // The demo's own volume group is the whole scope of every call (DESIGN.md §2.3).
    const scope = { vgNames: [vgName], ownerId: opts.ownerId };
    const a = await step(
      'create volume pvc-demo-a (200Mi): lvcreate lvstamp_new_<id>, write the header, rename',
      () =>
        s.volumes.create({
          name: 'pvc-demo-a',
          requiredBytes: 200 * MiB,
          vgName,
          ownerId: opts.ownerId,
        }),
    );
    cleanup.unshift(() => s.volumes.delete(a.volume.volumeId, scope, { wipe: 'none' }));
    say(
      `${a.volume.lvName}: LV ${formatBytes(a.volume.sizeBytes)}, capacity ${formatCapacity(a.volume.capacityBytes)}`,
    );
    const b = await step('create volume pvc-demo-b (64Mi)', () =>
      s.volumes.create({
        name: 'pvc-demo-b',
        requiredBytes: 64 * MiB,
        vgName,
        ownerId: opts.ownerId,
      }),
    );
    cleanup.unshift(() => s.volumes.delete(b.volume.volumeId, scope, { wipe: 'none' }));
    say(
      `${b.volume.lvName}: LV ${formatBytes(b.volume.sizeBytes)}, capacity ${formatCapacity(b.volume.capacityBytes)}`,
    );

    await step('read both headers back from sector 0', async () => {
      for (const v of [a, b]) {
        const report = await s.inspector.inspect(v.volume.volumeId, () => Promise.resolve(scope));
        const d = report.decode;
        say(
          d.status === 'ok'
            ? `${report.devicePath}: ok, name ${d.header.name}, id ${d.header.volumeId}, requested ${formatBytes(d.header.requestedBytes)}, data at ${d.header.dataOffsetBytes} bytes`
            : `${report.devicePath}: ${d.status}: ${report.explanation}`,
        );
      }
    });

    const device = await step(
      'attach pvc-demo-a: a device-mapper linear map over the data area',
      () => s.volumes.attach(a.volume.volumeId, scope),
    );
    cleanup.unshift(() => s.volumes.detach(a.volume.volumeId));
    say(`data device ${device.path}`);

    await step(`format ext4 and mount on ${mountPoint}`, async () => {
      await s.filesystems.format(device.path, 'ext4');
      await mkdir(mountPoint, { recursive: true });
      await s.filesystems.mount(device.path, mountPoint, { fsType: 'ext4' });
      cleanup.unshift(() => s.filesystems.unmount(mountPoint));
      const u = await s.filesystems.usage(mountPoint);
      say(
        `filesystem size ${formatBytes(u.totalBytes)}, available ${formatBytes(u.availableBytes)}`,
      );
    });

    await step('write a file and read it back', async () => {
      const file = join(mountPoint, 'hello.txt');
      const text = `hello from lvstamp, ${new Date(opts.now()).toISOString()}\n`;
      await writeFile(file, text);
      const back = await readFile(file, 'utf8');
      if (back !== text)
        throw new ReportedFailure('the file read back differs from what was written');
      say(`${file}: ${back.trim()}`);
    });

    await step('grow pvc-demo-a online to 400Mi: lvextend, reload the map, resize2fs', async () => {
      const r = await s.volumes.expand(a.volume.volumeId, 400 * MiB, scope);
      const u = await s.filesystems.usage(mountPoint);
      say(
        `capacity ${formatCapacity(r.status.volume.capacityBytes)}; filesystem size now ${formatBytes(u.totalBytes)}`,
      );
      const back = await readFile(join(mountPoint, 'hello.txt'), 'utf8');
      say(`file still reads: ${back.trim()}`);
    });

    const liveSet = new Set([a.volume.volumeId]);
    const bId = b.volume.volumeId;
    const bCreatedAt = b.header.status === 'ok' ? b.header.header.createdAtMs : opts.now();
    const wait = Math.max(0, GRACE_MS - (opts.now() - bCreatedAt));
    await step(
      `simulate a leak: pvc-demo-b is left out of the live set; ` +
        (wait > 0
          ? `wait ${formatDuration(wait + 1_000)} to age it past a ${formatDuration(GRACE_MS)} grace period`
          : `it is already older than a ${formatDuration(GRACE_MS)} grace period`),
      async () => {
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait + 1_000));
      },
    );

    for (const apply of [false, true]) {
      const title = apply
        ? `gc --apply with live set {pvc-demo-a}: quarantine, ${formatDuration(QUARANTINE_MS)} (lvstamp gc's default)`
        : 'gc (dry run) with live set {pvc-demo-a}';
      await step(title, async () => {
        const { plan } = await s.gc.plan({
          liveSet,
          allowEmptyLiveSet: false,
          policy: {
            ownerId: opts.ownerId,
            minAgeMs: GRACE_MS,
            maxDeletions: 10,
            quarantineMs: QUARANTINE_MS,
            dryRun: !apply,
          },
          nowMs: opts.now(),
          vgNames: scope.vgNames,
        });
        for (const e of plan.entries) say(`${e.device}: ${e.action} (rule ${e.rule}): ${e.reason}`);
        if (apply) {
          const outcomes = await applied(plan);
          const quarantinedB = outcomes.some(
            (o) =>
              o.outcome === 'quarantined' &&
              o.entry.target === 'volume' &&
              o.entry.volumeId === bId,
          );
          if (!quarantinedB) {
            throw new ReportedFailure('gc did not quarantine the leaked volume pvc-demo-b');
          }
        }
      });
    }
    await step('list --quarantined: the leak, put aside with its data', async () => {
      const { quarantined } = await s.quarantine.list({
        vgNames: scope.vgNames,
        ownerId: opts.ownerId,
      });
      for (const q of quarantined) {
        say(
          `${q.vgName}/${q.lvName}: ${q.kind} ${q.id}, ${formatBytes(q.sizeBytes)}, ` +
            `quarantined ${q.quarantinedAtMs === null ? '(no time tag)' : isoTime(q.quarantinedAtMs)}`,
        );
      }
      say(
        `until ${formatDuration(QUARANTINE_MS)} have passed, "lvstamp quarantine restore pvc-demo-b" gives it back;\n` +
          'a later gc run removes it after that; the demo purges it now',
      );
    });
    await step('quarantine purge --apply: remove it now, under the same two checks', async () => {
      const { plan } = await s.gc.planPurge({
        ownerId: opts.ownerId,
        olderThanMs: 0,
        nowMs: opts.now(),
        dryRun: false,
        vgNames: scope.vgNames,
      });
      const outcomes = await applied(plan);
      const removedB = outcomes.some(
        (o) =>
          o.outcome === 'removed' &&
          o.entry.target === 'quarantined' &&
          o.entry.kind === 'volume' &&
          o.entry.id === bId,
      );
      if (!removedB) {
        throw new ReportedFailure('quarantine purge did not remove pvc-demo-b');
      }
    });
    const remaining = await s.volumes.list(scope);
    say(`volumes left: ${remaining.map((v) => v.name ?? v.volume.lvName).join(', ')}`);
  } catch (error) {
    failure = error;
  } finally {
    stepNo += 1;
    io.stdout.write(
      `\n[${stepNo}] tear down: unmount, detach, delete volumes, remove the volume group and loop device\n`,
    );
    for (const undo of cleanup) {
      try {
        await undo();
      } catch (error) {
        io.stderr.write(`    cleanup step failed: ${messageOf(error)}\n`);
        failure ??= error;
      }
    }
    await rm(workDir, { recursive: true, force: true });
  }
  if (failure !== undefined)
    throw failure instanceof Error ? failure : new Error('the demo failed', { cause: failure });
  io.stdout.write(
    `\ndemo finished in ${formatDuration(opts.now() - started)} (${opts.now() - started} ms)\n`,
  );
}
