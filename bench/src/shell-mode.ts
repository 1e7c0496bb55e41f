// `lvstamp-bench shell-mode`: lvm's shell mode (one long-lived `lvm` reading commands on stdin, as
// lvm2's D-Bus service runs it) against a process per call (the core's ProcessRunner), for the same
// create → report → remove sequence, plus its failure modes. Prints a table; the numbers and the
// recommendation are in bench/README.md ("lvm shell mode").
import { spawn } from 'node:child_process';
import { messageOf, renderTable } from '@lvstamp/app-kit';
import {
  CommandTimeoutError,
  ProcessRunner,
  lvcreateArgv,
  lvNameFor,
  newLvNameFor,
  volumeIdForName,
} from '@lvstamp/core';
import type { BenchContext } from './context.js';
import { bareCreate } from './bare-create.js';
import { cleanUp, createBenchVg, type BenchVg } from './fixture.js';
import { LvmShell } from './lvm-shell.js';
import { formatMs, median, MiB, round, sleep, timed } from './stats.js';

const J = ['--reportformat', 'json', '--units', 'b', '--nosuffix'];
const VG_FIELDS = 'vg_name,vg_uuid,vg_size,vg_free,vg_extent_size,vg_tags,vg_attr';
const LV_FIELDS =
  'vg_name,lv_name,lv_uuid,lv_size,lv_attr,lv_kernel_major,lv_kernel_minor,lv_dm_path,lv_time,lv_tags';

/** Runs one lvm command (argv[0] is the lvm command name) and returns its exit code. */
type LvmCall = (argv: readonly string[]) => Promise<number>;

/** The look-up of a create: one fullreport of the group with this volume's two LV names. */
function lookupArgv(vg: string, volumeId: string): string[] {
  const look = `lv_name="${lvNameFor(volumeId)}" || lv_name="${newLvNameFor(volumeId)}"`;
  return [
    'fullreport',
    ...J,
    '--configreport',
    'vg',
    '-o',
    VG_FIELDS,
    '--configreport',
    'lv',
    '-o',
    LV_FIELDS,
    '-S',
    look,
    '--configreport',
    'pv',
    '-o',
    'pv_uuid',
    '--configreport',
    'pvseg',
    '-o',
    'pvseg_start',
    '-S',
    'pvseg_start<0',
    '--configreport',
    'seg',
    '-o',
    'seg_start',
    '-S',
    'seg_start<0',
    vg,
  ];
}

/**
 * One create → report → remove sequence through `call`: fullreport look-up,
 * lvcreate, data area cleared and header written in-process, lvrename, lvs of
 * the volume, lvremove. Six lvm commands.
 * @returns wall time in ms.
 * @throws Error when a command exits non-zero.
 */
async function sequence(call: LvmCall, vg: BenchVg, name: string): Promise<number> {
  const must = async (argv: readonly string[]): Promise<void> => {
    const code = await call(argv);
    if (code !== 0) throw new Error(`${argv.join(' ')} exited ${code}`);
  };
  const volumeId = volumeIdForName(name);
  const start = performance.now();
  await must(lookupArgv(vg.name, volumeId));
  const finalName = await bareCreate(must, vg, name);
  await must(['lvs', ...J, '-o', LV_FIELDS, '-S', `lv_name="${finalName}"`, vg.name]);
  await must(['lvremove', '--yes', `${vg.name}/${finalName}`]);
  return performance.now() - start;
}

/** A process per call: the production runner (`lvm <command>` for fullreport). */
function processCall(runner: ProcessRunner): LvmCall {
  return async (argv) => {
    const full = argv[0] === 'fullreport' ? ['lvm', ...argv] : [...argv];
    const result = await runner.run(full, { allowExitCodes: [0, 1, 2, 3, 4, 5] });
    return result.exitCode;
  };
}

function shellCall(shell: LvmShell): LvmCall {
  return async (argv) => (await shell.run(argv)).exitCode;
}

/** One observed failure mode: what was done and what happened. */
interface Observation {
  readonly mode: string;
  readonly shell: string;
  readonly process: string;
}

/**
 * The evaluation: `cycles` sequences each way (order alternating, after a
 * warm-up each), 10 sequential look-up reports each way, 8 concurrent
 * reports each way, and the failure modes. Prints the tables on stdout.
 * @returns 0 when every step behaved as expected, else 1.
 */
export async function shellMode(context: BenchContext, cycles: number): Promise<number> {
  const vg = await createBenchVg(context.runner, { sizeBytes: 1024 * MiB });
  const runner = new ProcessRunner({ timeoutMs: 120_000 });
  const shell = new LvmShell();
  const problems: string[] = [];
  try {
    const perProcess = processCall(runner);
    const inShell = shellCall(shell);
    const firstShell = await timed(() => shell.run(['vgs', ...J, '-o', 'vg_name', vg.name]));
    await sequence(perProcess, vg, `${vg.name}-sm-warm-p`);
    await sequence(inShell, vg, `${vg.name}-sm-warm-s`);
    const processMs: number[] = [];
    const shellMs: number[] = [];
    for (let i = 0; i < cycles; i++) {
      const p = (): Promise<number> => sequence(perProcess, vg, `${vg.name}-sm-p${i}`);
      const s = (): Promise<number> => sequence(inShell, vg, `${vg.name}-sm-s${i}`);
      if (i % 2 === 0) {
        processMs.push(await p());
        shellMs.push(await s());
      } else {
        shellMs.push(await s());
        processMs.push(await p());
      }
      context.progress(
        `shell-mode ${i + 1}/${cycles}: process per call ${formatMs(processMs.at(-1) ?? 0)}, shell ${formatMs(shellMs.at(-1) ?? 0)}`,
      );
    }
    const look = lookupArgv(vg.name, volumeIdForName(`${vg.name}-absent`));
    const reportP: number[] = [];
    const reportS: number[] = [];
    for (let i = 0; i < 10; i++) {
      reportP.push((await timed(() => perProcess(look))).ms);
      reportS.push((await timed(() => inShell(look))).ms);
    }
    const vgsArgv = ['vgs', ...J, '-o', VG_FIELDS, vg.name];
    const concurrentP = await timed(() =>
      Promise.all(Array.from({ length: 8 }, () => perProcess(vgsArgv))),
    );
    const concurrentS = await timed(() =>
      Promise.all(Array.from({ length: 8 }, () => inShell(vgsArgv))),
    );

    const observations = await failureModes(vg, runner, shell, problems);

    const rows = [
      [
        'create → report → remove (6 lvm commands)',
        formatMs(median(processMs)),
        formatMs(median(shellMs)),
        `${round(median(shellMs) / median(processMs), 2)}×`,
        `median of ${cycles}; process ${processMs.map((x) => Math.round(x)).join('/')}, shell ${shellMs.map((x) => Math.round(x)).join('/')}`,
      ],
      [
        'one look-up report (fullreport)',
        formatMs(median(reportP)),
        formatMs(median(reportS)),
        `${round(median(reportS) / median(reportP), 2)}×`,
        'median of 10, sequential',
      ],
      [
        '8 concurrent vgs',
        formatMs(concurrentP.ms),
        formatMs(concurrentS.ms),
        `${round(concurrentS.ms / concurrentP.ms, 2)}×`,
        'processes run in parallel; the shell runs one command at a time',
      ],
      [
        'first command of a new shell (vgs)',
        '',
        formatMs(firstShell.ms),
        '',
        'start-up of lvm, paid again after every kill',
      ],
    ];
    process.stdout.write(
      renderTable(['measurement', 'process per call', 'lvm shell', 'shell/process', 'note'], rows),
    );
    process.stdout.write('\nfailure modes:\n');
    process.stdout.write(
      renderTable(
        ['mode', 'lvm shell', 'process per call'],
        observations.map((o) => [o.mode, o.shell, o.process]),
      ),
    );
  } catch (error) {
    problems.push(messageOf(error));
  } finally {
    await shell.stop();
    await cleanUp(context, vg);
  }
  for (const problem of [...problems, ...context.cleanupProblems]) {
    process.stderr.write(`shell-mode: ${problem}\n`);
  }
  return problems.length + context.cleanupProblems.length === 0 ? 0 : 1;
}

async function failureModes(
  vg: BenchVg,
  runner: ProcessRunner,
  shell: LvmShell,
  problems: string[],
): Promise<Observation[]> {
  const observations: Observation[] = [];
  const vgsArgv = ['vgs', ...J, '-o', 'vg_name', vg.name];

  // A failing command: its exit code and message, and the shell lives on.
  const missing = ['lvs', ...J, '-o', 'lv_name', `${vg.name}missing`];
  const pidBefore = shell.pid;
  const failed = await shell.run(missing);
  const after = await shell.run(vgsArgv);
  const processFailed = await runner.run(missing, { allowExitCodes: [5] });
  observations.push({
    mode: 'command fails (missing VG)',
    shell: `exit ${failed.exitCode}, "${failed.messages.find((m) => /not found/.test(m)) ?? failed.messages.join('; ')}"; next command exit ${after.exitCode}, same shell: ${String(shell.pid === pidBefore)}`,
    process: `exit ${String(processFailed.exitCode)}, stderr "${processFailed.stderr.trim().split('\n')[0] ?? ''}"`,
  });
  if (failed.exitCode !== 5 || after.exitCode !== 0) problems.push('failing command: unexpected');

  // An argument the shell's line splitter cannot carry.
  const odd = ['lvs', '-S', `lv_name="a'b"`, vg.name];
  let refused = '';
  try {
    await shell.run(odd);
  } catch (error) {
    refused = messageOf(error);
  }
  observations.push({
    mode: 'argument with both \' and "',
    shell: refused === '' ? 'SENT (unexpected)' : `refused before sending: ${refused}`,
    process: 'passed as one argv element',
  });
  if (refused === '') problems.push('an argument with both quotes was sent');

  // The shell dies in the middle of a command.
  const startsBefore = shell.starts;
  const pending = shell.run(vgsArgv);
  const pid = shell.pid;
  if (pid !== null) process.kill(pid, 'SIGKILL');
  let died = '';
  try {
    await pending;
    died = 'answered (the kill came late)';
  } catch (error) {
    died = messageOf(error);
  }
  const next = await shell.run(vgsArgv);
  observations.push({
    mode: 'shell killed (SIGKILL) mid-command',
    shell: `pending call: "${died}"; next call exit ${next.exitCode} in a new shell (${shell.starts - startsBefore} restart)`,
    process: 'only that call fails; nothing to restart',
  });

  // A command that hangs: another process holds the group's lvm lock (flock on lvm's lock file).
  const lockFile = `/run/lock/lvm/V_${vg.name}`;
  const holder = spawn('flock', [lockFile, 'sleep', '60'], { stdio: 'ignore' });
  await sleep(1_000);
  const create = lvcreateArgv({
    vgName: vg.name,
    lvName: 'hang',
    sizeBytes: vg.extentBytes,
    tags: [],
  });
  const shellHang = await timed(async () => {
    try {
      await shell.run(create, 5_000);
      return 'completed (lock not held?)';
    } catch (error) {
      return messageOf(error);
    }
  });
  const processHang = await timed(async () => {
    try {
      await runner.run(create, { timeoutMs: 5_000 });
      return 'completed (lock not held?)';
    } catch (error) {
      return error instanceof CommandTimeoutError ? 'CommandTimeoutError' : String(error);
    }
  });
  holder.kill('SIGKILL');
  await new Promise<void>((resolve) =>
    holder.once('exit', () => {
      resolve();
    }),
  );
  const recovered = await shell.run(vgsArgv);
  observations.push({
    mode: 'command hangs (VG lock held), deadline 5 s',
    shell: `"${shellHang.value}" after ${formatMs(shellHang.ms)}; next call exit ${recovered.exitCode} in a new shell`,
    process: `${processHang.value} after ${formatMs(processHang.ms)}`,
  });
  // Anything created while the lock was finally released must not stay behind.
  await runner.run(['lvremove', '--yes', `${vg.name}/hang`], { allowExitCodes: [0, 5] });
  return observations;
}
