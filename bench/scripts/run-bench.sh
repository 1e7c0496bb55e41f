#!/bin/bash
# run-bench.sh [run options...]: `pnpm bench` (full) and `pnpm bench:smoke` (--smoke). Runs
# `node bench/dist/main.js run` directly when this host has device-mapper and we are root; otherwise
# boots the test VM once (test-e2e/vm/run-in-vm.sh: qemu, stock Debian kernel, the host's root
# read-only) and runs it there. The results JSON lands in bench/results (--results-dir to change;
# the VM writes it back through a read-write share). Exit code = the run's exit code.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
fail() { echo "run-bench: FAIL: $*" >&2; exit 1; }

for tool in node lvm dmsetup losetup fio; do
  command -v "$tool" >/dev/null || PATH=$PATH:/sbin:/usr/sbin command -v "$tool" >/dev/null ||
    fail "'$tool' is missing (scripts/bootstrap.sh installs lvm2 fio ...)"
done
[ -f bench/dist/main.js ] && [ -f apps/csi-driver/dist/lvstamp-csi.mjs ] ||
  fail "bench or driver not built (pnpm build)"

# The arguments are checked here, before the VM boots (exit 2 with lvstamp-bench's one line); the
# check prints the groups the run will run.
groups=$(node bench/dist/main.js run "$@" --check-usage) || exit 2
RESULTS_DIR=$ROOT/bench/results
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case ${args[$i]} in
    --results-dir) RESULTS_DIR=$(realpath -m "${args[$((i + 1))]:-}") ;;
    --results-dir=*) RESULTS_DIR=$(realpath -m "${args[$i]#--results-dir=}") ;;
  esac
done
mkdir -p "$RESULTS_DIR"
# Group peer runs TopoLVM's lvmd (lvmd-env.sh: the `lvmd` part, built from its Go module on the
# first run and cached outside the repository). When the part cannot be built the other groups
# still run and group peer fails, naming the build's error.
if [[ " $groups " == *" peer "* ]]; then
  # shellcheck source=lvmd-env.sh
  . "$ROOT/bench/scripts/lvmd-env.sh"
  lvmd_env
  case $? in
    1) echo "run-bench: the lvmd part could not be built (above); group peer will fail" >&2 ;;
    2) fail "group peer's lvmd (above)" ;;
  esac
fi
LVSTAMP_BENCH_COMMIT=$(git rev-parse HEAD 2>/dev/null || true)
if [ -n "$LVSTAMP_BENCH_COMMIT" ] && [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  LVSTAMP_BENCH_COMMIT="$LVSTAMP_BENCH_COMMIT-dirty"
fi
export LVSTAMP_BENCH_COMMIT
# The run writes its JSON into RESULTS_DIR (the VM shares exactly this directory read-write): the
# last --results-dir wins, so ours goes last.
CMD=(node bench/dist/main.js run "$@" --results-dir "$RESULTS_DIR")
before=$(ls "$RESULTS_DIR" 2>/dev/null | wc -l)

host_has_dm() {
  [ "$(id -u)" = 0 ] && [ -e /dev/mapper/control ] &&
    grep -qw device-mapper /proc/misc /proc/devices 2>/dev/null
}

start=$(date +%s)
if [ "${LVSTAMP_BENCH_FORCE_VM:-0}" != 1 ] && host_has_dm; then
  echo "run-bench: host has device-mapper and root: benchmarking directly"
  "${CMD[@]}"
  rc=$?
else
  echo "run-bench: host has no device-mapper (or not root): booting the test VM once, benchmarking inside"
  command -v qemu-system-x86_64 >/dev/null || fail "qemu-system-x86_64 is missing (apt-get install qemu-system-x86)"
  export LVSTAMP_BENCH_VM=1 LVSTAMP_BENCH_ACCEL=${VM_ACCEL:-tcg}
  printf -v cmd '%q ' "${CMD[@]}"
  VM_RW="$RESULTS_DIR" VM_ENV="LVSTAMP_BENCH_COMMIT LVSTAMP_BENCH_VM LVSTAMP_BENCH_ACCEL LVSTAMP_BENCH_LVMD LVSTAMP_BENCH_LVMD_PROTO LVSTAMP_BENCH_LVMD_ERROR" \
    VM_MEM=${VM_MEM:-4G} VM_TIMEOUT=${VM_TIMEOUT:-5400} \
    "$ROOT/test-e2e/vm/run-in-vm.sh" "$cmd"
  rc=$?
fi
if [ "$rc" = 0 ] && [ "$(ls "$RESULTS_DIR" | wc -l)" -le "$before" ]; then
  echo "run-bench: FAIL: the run wrote no results file into $RESULTS_DIR" >&2
  rc=1
fi
echo "run-bench: exit $rc after $(($(date +%s) - start)) s"
exit $rc
