// The lvm processes a daemon runs at once, sampled from /proc (bench/README.md "Peer group").
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { isLvmCommand } from './exec.js';
import { sleep } from './stats.js';

/**
 * Samples the lvm processes that `pid` has as children every 25 ms, until
 * `stop` resolves to the most seen at once. One sample is a sweep over every
 * thread's /proc/<pid>/task/<tid>/children, then a second read of each lvm
 * child found: only those still running then (stat state not Z, parent
 * `pid`) count. Each counted process started before the second read began
 * and ran until its own read, so all of them ran at that first read: a
 * sample never counts two processes that did not overlap (a sweep alone
 * does, when one ends and the next starts while the threads are read).
 */
export function lvmChildSampler(pid: number): { stop: () => Promise<number> } {
  const state = { running: true };
  let max = 0;
  const loop = (async () => {
    while (state.running) {
      max = Math.max(max, await runningLvmChildren(pid));
      await sleep(25);
    }
  })();
  return {
    stop: async () => {
      state.running = false;
      await loop;
      return max;
    },
  };
}

async function runningLvmChildren(pid: number): Promise<number> {
  const found = new Set<string>();
  const tasks = await readdir(`/proc/${pid}/task`).catch(() => [] as string[]);
  for (const tid of tasks) {
    const children = await readFile(`/proc/${pid}/task/${tid}/children`, 'utf8').catch(() => '');
    for (const child of children.split(' ').filter((c) => c !== '')) found.add(child);
  }
  let count = 0;
  for (const child of found) {
    const stat = await readFile(`/proc/${child}/stat`, 'utf8').catch(() => '');
    const parsed = parseStat(stat);
    if (
      parsed !== null &&
      parsed.state !== 'Z' &&
      parsed.ppid === pid &&
      isLvmCommand([parsed.comm])
    ) {
      count++;
    }
  }
  return count;
}

/**
 * `comm`, state and parent PID of a /proc/<pid>/stat line (proc(5): the
 * comm in parentheses may itself hold spaces and parentheses); null for
 * anything else.
 */
export function parseStat(stat: string): { comm: string; state: string; ppid: number } | null {
  const open = stat.indexOf('(');
  const close = stat.lastIndexOf(')');
  if (open < 0 || close < open) return null;
  const [state, ppid] = stat.slice(close + 2).split(' ');
  if (state === undefined || ppid === undefined || !/^\d+$/.test(ppid)) return null;
  return { comm: stat.slice(open + 1, close), state, ppid: Number(ppid) };
}

/**
 * The absolute path of `program` on PATH (then /sbin, /usr/sbin).
 * @throws Error when it is nowhere.
 */
export function findOnPath(program: string): string {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/sbin', '/usr/sbin'];
  for (const dir of dirs) {
    const path = join(dir, program);
    if (dir !== '' && existsSync(path)) return path;
  }
  throw new Error(`${program} is not on PATH`);
}
