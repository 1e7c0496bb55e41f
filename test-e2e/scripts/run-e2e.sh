#!/bin/bash
# run-e2e.sh [vitest args...]: the e2e suite (the test:e2e script of @lvstamp/test-e2e).
# Runs vitest directly when this host has device-mapper and we are root; otherwise runs the suite
# inside the test VM (test-e2e/vm/run-in-vm.sh): split over LVSTAMP_E2E_SHARDS VMs at once (default
# 2 on 2 or more cores; 1 when test files are named, unless LVSTAMP_E2E_SHARDS is set), by the
# files' recorded durations (e2e-durations.json, src/harness/sequencer.ts). A missing prerequisite
# is a failure (exit != 0), never a skip. Exit code = the suite's exit code. A JSON report lands in
# test-e2e/results/e2e.json (the VM writes it back through a read-write share).
# Env: LVSTAMP_E2E_SHARD=I/N runs only shard I of N, in one VM, into results/e2e-I.json (no merged
#      report: the caller runs the other shards and scripts/merge-reports.mjs; scripts/test.sh);
#      LVSTAMP_E2E_REPORT=NAME: with LVSTAMP_E2E_SHARD, the report is results/NAME.json instead
#      (letters, digits, - and _), for a caller that runs more than one split of the files;
#      LVSTAMP_E2E_AFTER_SECONDS=S1,...,SN: what each shard's caller runs after it, in seconds, so
#      the split evens out lanes planned ahead (src/harness/shards.ts; scripts/test.sh does not).
set -uo pipefail
PKG=$(cd "$(dirname "$0")/.." && pwd)
cd "$PKG"
fail() { echo "run-e2e: FAIL: $*" >&2; exit 1; }

for tool in node lvm dmsetup losetup blkid mkfs.ext4 mkfs.xfs mount; do
  command -v "$tool" >/dev/null || fail "'$tool' is missing (scripts/bootstrap.sh installs lvm2 e2fsprogs xfsprogs util-linux)"
done
[ -x node_modules/.bin/vitest ] || fail "vitest is not installed (pnpm install)"
ONLY=${LVSTAMP_E2E_SHARD:-}
REPORT=
if [ -n "$ONLY" ]; then
  [[ $ONLY =~ ^([1-9][0-9]*)/([1-9][0-9]*)$ ]] && [ "${BASH_REMATCH[1]}" -le "${BASH_REMATCH[2]}" ] ||
    fail "LVSTAMP_E2E_SHARD must be I/N with 1 <= I <= N, got '$ONLY'"
  REPORT=${LVSTAMP_E2E_REPORT:-e2e-${ONLY%/*}}
  [[ $REPORT =~ ^[A-Za-z0-9_-]+$ ]] || fail "LVSTAMP_E2E_REPORT must be letters, digits, - and _, got '$REPORT'"
  mkdir -p results && rm -f "results/$REPORT.json"
else
  mkdir -p results && rm -f results/e2e.json results/e2e-*.json
fi
VITEST=(node_modules/.bin/vitest run --reporter=default --reporter=json --outputFile.json=results/e2e.json "$@")

host_has_dm() {
  [ "$(id -u)" = 0 ] && [ -e /dev/mapper/control ] &&
    grep -qw device-mapper /proc/misc /proc/devices 2>/dev/null
}

start=$(date +%s)
if [ "${LVSTAMP_E2E_FORCE_VM:-0}" != 1 ] && host_has_dm; then
  if [ -n "$ONLY" ]; then
    echo "run-e2e: host has device-mapper and root: running shard $ONLY of the e2e suite directly"
    node_modules/.bin/vitest run --reporter=default --reporter=json --passWithNoTests \
      "--outputFile.json=results/$REPORT.json" "--shard=$ONLY" "$@"
  else
    echo "run-e2e: host has device-mapper and root: running the e2e suite directly"
    "${VITEST[@]}"
  fi
  rc=$?
else
  command -v qemu-system-x86_64 >/dev/null || fail "qemu-system-x86_64 is missing (apt-get install qemu-system-x86)"
  SHARDS=${LVSTAMP_E2E_SHARDS:-$(($(nproc) >= 2 ? 2 : 1))}
  # The VM's bound is a guard against a hung VM only: every test has its own timeout. Generous,
  # because the emulated VM's speed varies with the machine and its load: on 2026-12-04 a warm
  # `pnpm test` here ran the files at 1.6-1.8x their recorded seconds (e2e-durations.json), and
  # its second shard, planned at about 1,860 recorded seconds, passed the old 3,000 s bound; on
  # a cold machine, beside the Go builds, files ran at 3-6x.
  VM_BOUND=${VM_TIMEOUT:-5000}
  [ $# -gt 0 ] && [ -z "${LVSTAMP_E2E_SHARDS:-}" ] && SHARDS=1
  # in_vm VITEST_ARGS...: the command the VM runs; at its end, one line with the VM's busy and idle
  # CPU seconds since boot (/proc/stat, 100 ticks a second), to tell waiting from computing
  in_vm() {
    local cmd
    printf -v cmd '%q ' "$@"
    echo "set -o pipefail; echo \"run-e2e: in the VM: kernel \$(uname -r), \$(lvm version | head -1 | tr -s ' ')\"; $cmd; rc=\$?;" \
      "read -r _ u n s i w q sq st _ </proc/stat; echo \"run-e2e: VM CPU since boot (\$(nproc) vCPU): busy \$(((u + n + s + q + sq + st) / 100)) s, idle \$((i / 100)) s, iowait \$((w / 100)) s\"; exit \$rc"
  }
  # run_shard I N CPUS [vitest args...]: shard I of N in one VM, lines prefixed [e2e I/N], into
  # results/e2e-I.json (results/$REPORT.json when LVSTAMP_E2E_SHARD set REPORT). A shard may get no
  # file (few files named): it passes; the merged report fails when no shard ran a test
  # (scripts/merge-reports.mjs).
  run_shard() {
    local i=$1 n=$2 cpus=$3
    shift 3
    VM_RW="$PKG/results" VM_ENV="CI LVSTAMP_E2E_AFTER_SECONDS" VM_MEM=${VM_MEM:-4G} \
      VM_TIMEOUT=$VM_BOUND VM_CPUS=$cpus \
      "$PKG/vm/run-in-vm.sh" "$(in_vm node_modules/.bin/vitest run --reporter=default --reporter=json \
        --passWithNoTests "--outputFile.json=results/${REPORT:-e2e-$i}.json" "--shard=$i/$n" "$@")" 2>&1 |
      sed -u "s|^|[e2e $i/$n] |"
    return "${PIPESTATUS[0]}"
  }
  if [ -n "$ONLY" ]; then
    echo "run-e2e: host has no device-mapper (or not root): shard $ONLY of the suite in one test VM, output prefixed [e2e $ONLY]"
    run_shard "${ONLY%/*}" "${ONLY#*/}" 1 "$@"
    rc=$?
  elif [ "$SHARDS" = 1 ]; then
    echo "run-e2e: host has no device-mapper (or not root): booting the test VM once, running the suite inside"
    VM_RW="$PKG/results" VM_ENV="CI" VM_MEM=${VM_MEM:-4G} VM_TIMEOUT=$VM_BOUND \
      "$PKG/vm/run-in-vm.sh" "$(in_vm "${VITEST[@]}")"
    rc=$?
  else
    # The whole suite in SHARDS VMs at once, each with its share of the CPUs and of the test
    # files: one emulated VM keeps about one core busy (lvm's processes run one after another),
    # so on 2 cores two VMs take about half the time.
    echo "run-e2e: host has no device-mapper (or not root): the suite in $SHARDS test VMs at once (vitest --shard), output prefixed [e2e i/$SHARDS]"
    "$PKG/vm/build-assets.sh" >&2 || fail "test VM asset build failed"
    pids=()
    for i in $(seq 1 "$SHARDS"); do
      run_shard "$i" "$SHARDS" $(($(nproc) / SHARDS > 0 ? $(nproc) / SHARDS : 1)) "$@" &
      pids+=($!)
    done
    rc=0
    for i in $(seq 1 "$SHARDS"); do
      wait "${pids[$((i - 1))]}"
      r=$?
      echo "run-e2e: shard $i/$SHARDS exit $r"
      [ "$r" = 0 ] || rc=$r
    done
    # one report, as with one VM: the shards' counts summed, their test files concatenated
    node scripts/merge-reports.mjs results/e2e.json \
      $(for i in $(seq 1 "$SHARDS"); do echo "results/e2e-$i.json"; done) || rc=1
  fi
fi
echo "run-e2e: exit $rc after $(($(date +%s) - start)) s"
exit $rc
