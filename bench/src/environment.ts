import { readFile } from 'node:fs/promises';
import { cpus, release, totalmem } from 'node:os';
import type { CommandRunner } from '@lvstamp/core';
import { environmentCommit } from './commit.js';
import type { BenchEnvironment } from './types.js';

/**
 * Describes the machine of this run. `vm` comes from LVSTAMP_BENCH_VM=1 (set
 * by scripts/run-bench.sh when it boots the test VM); `emulated` is true when
 * the VM runs on qemu TCG (LVSTAMP_BENCH_ACCEL=tcg) or /proc/cpuinfo names a
 * QEMU TCG CPU without the hypervisor flag a KVM guest has. `lvmd` is the
 * version of LVSTAMP_BENCH_LVMD (group peer's lvmd) when it is set.
 */
export async function collectEnvironment(
  runner: CommandRunner,
  lvmd: string | undefined = process.env.LVSTAMP_BENCH_LVMD,
): Promise<BenchEnvironment> {
  const firstLine = async (argv: string[]): Promise<string | null> => {
    try {
      return (await runner.run(argv)).stdout.split('\n')[0]?.trim() ?? null;
    } catch {
      return null;
    }
  };
  const cpuinfo = await readFile('/proc/cpuinfo', 'utf8').catch(() => '');
  const vm = process.env.LVSTAMP_BENCH_VM === '1';
  const accel = process.env.LVSTAMP_BENCH_ACCEL;
  const emulated = vm
    ? accel !== 'kvm'
    : /QEMU TCG/i.test(cpuinfo) && !/^flags\s*:.*\bhypervisor\b/m.test(cpuinfo);
  return {
    kernel: release(),
    lvm2: ((await firstLine(['lvm', 'version'])) ?? 'unknown').replace(/\s+/g, ' '),
    cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
    cpus: cpus().length,
    memoryBytes: totalmem(),
    vm,
    emulated,
    node: process.version,
    commit: await environmentCommit(),
    fio: await firstLine(['fio', '--version']),
    ...(lvmd === undefined || lvmd === '' ? {} : { lvmd: await firstLine([lvmd, '--version']) }),
  };
}
