/**
 * The work queue of scripts/test.sh (its lanes, `claim`, `ready`, the
 * Kubernetes tier's turn), run for real in bash with every item's runner and
 * build.sh replaced by stubs that log when an item starts: each item runs
 * exactly once whatever the timing, the bench smoke run never starts before
 * the prefetch has ended, the tier waits for a prefetch that passed and, after
 * one that failed, for the queue to empty, and a failed item fails the lanes.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

const TEST_SH = new URL('../../../scripts/test.sh', import.meta.url);
const ITEMS = [
  'e2e-kube',
  ...Array.from({ length: 10 }, (_, i) => `e2e-${i + 1}`),
  'csi-sanity',
  'bench-smoke',
  'k8s',
];

/** The queue's part of test.sh: from `E2E_CHUNKS=` to the prefetch's comment. */
function queueFunctions(): string {
  const lines = readFileSync(TEST_SH, 'utf8').split('\n');
  const start = lines.findIndex((l) => l.startsWith('E2E_CHUNKS='));
  const end = lines.findIndex((l) => l.startsWith('# prefetch: the Go parts'));
  if (start < 0 || end < start) throw new Error('scripts/test.sh: the queue functions moved');
  return lines.slice(start, end).join('\n');
}

// The prefetch (in the background, holding its lock as test.sh's does) makes the kubernetes and
// etcd parts appear, later csi-sanity, then writes its summary; lvmd is never built.
const DRIVER = `set -uo pipefail
LOGS=$DIR/logs ROOT=$DIR
mkdir -p "$LOGS"
source "$DIR/queue.sh"
PREFETCH_LOCK=$LOGS/prefetch.lock
cached() { local p; for p in "$@"; do [ -e "$LOGS/built-$p" ] || return 1; done; }
sleep() { command sleep 0.05; }
step() {
  local when=before left=items
  prefetch_ended && when=after
  [ -n "$(ls "$QUEUE/todo")" ] || left=empty
  echo "start $1 $when $left" >>"$LOGS/events"
  command sleep "0.0$((RANDOM % 5 + 1))"
  [ "$1" != "$FAIL_ITEM" ]
}
(
  flock 8
  command sleep 0.2 && touch "$LOGS/built-kubernetes" "$LOGS/built-etcd"
  command sleep 0.3 && touch "$LOGS/built-csi-sanity"
  printf '%-22s %-18s %5ss\\n' prefetch "$PREFETCH_STATUS" 1 >"$LOGS/prefetch.summary"
) 8>"$PREFETCH_LOCK" &
command sleep 0.05
queue_init || exit 9
lane_work lane-1 >/dev/null &
a=$!
lane_work lane-2 >/dev/null &
b=$!
rc=0
wait $a || rc=1
wait $b || rc=1
[ -z "$(ls "$QUEUE/todo")" ] || rc=8
exit $rc
`;

interface Run {
  status: number | null;
  /** [item, "before" | "after" the prefetch ended, "items" | "empty" left in the queue]. */
  starts: [string, string, string][];
  stderr: string;
}

let dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  dirs = [];
});

function runQueue(prefetchStatus: string, failItem = ''): Run {
  const dir = mkdtempSync(join(tmpdir(), 'lvstamp-queue-'));
  dirs.push(dir);
  writeFileSync(join(dir, 'queue.sh'), queueFunctions());
  const result = spawnSync('bash', ['-c', DRIVER], {
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, DIR: dir, PREFETCH_STATUS: prefetchStatus, FAIL_ITEM: failItem },
  });
  let events = '';
  try {
    events = readFileSync(join(dir, 'logs', 'events'), 'utf8');
  } catch {
    // no item started: the assertions below say so
  }
  const starts = events
    .split('\n')
    .filter((l) => l.startsWith('start '))
    .map((l) => l.split(' ').slice(1) as [string, string, string]);
  return { status: result.status, starts, stderr: result.stderr };
}

describe('scripts/test.sh work queue', () => {
  it('runs every item and the tier exactly once; the bench only after the prefetch', () => {
    const run = runQueue('ok');
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.starts.map(([item]) => item).sort()).toEqual([...ITEMS].sort());
    expect(run.starts.find(([item]) => item === 'bench-smoke')?.[1]).toBe('after');
    expect(run.starts.find(([item]) => item === 'k8s')?.[1]).toBe('after');
  }, 60_000);

  it('after a failed prefetch still runs everything once, the tier once the queue is empty', () => {
    const run = runQueue('FAILED (exit 1)');
    expect(run.status).toBe(0);
    expect(run.starts.map(([item]) => item).sort()).toEqual([...ITEMS].sort());
    expect(run.starts.find(([item]) => item === 'k8s')?.slice(1)).toEqual(['after', 'empty']);
  }, 60_000);

  it('fails the lanes when one item fails, and still runs the rest', () => {
    const run = runQueue('ok', 'e2e-3');
    expect(run.status).toBe(1);
    expect(run.starts.map(([item]) => item).sort()).toEqual([...ITEMS].sort());
  }, 60_000);
});
