#!/bin/bash
# run-peer.sh [--cycles N] [--burst N] [--burst-rounds N] [--rpcs N]: `node bench/dist/main.js peer`,
# lvstamp-csi next to TopoLVM's lvmd on one benchmark VG (bench/README.md "Peer group"), at any size
# (`pnpm bench` runs the same as its group peer). LVSTAMP_BENCH_LVMD (an lvmd binary) and
# LVSTAMP_BENCH_LVMD_PROTO (its pkg/lvmd/proto/lvmd.proto) default to the `lvmd` part
# (test-e2e/parts/build.sh lvmd: from its Go module, cached outside the repository). As root on a
# host with device-mapper it runs here; otherwise inside the throw-away test VM
# (test-e2e/vm/run-in-vm.sh), which sees the host's root read-only, so both paths must be on it (not
# under a tmpfs).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
fail() { echo "run-peer: FAIL: $*" >&2; exit 1; }
[ -f bench/dist/main.js ] && [ -f apps/csi-driver/dist/lvstamp-csi.mjs ] ||
  fail "bench or driver not built (pnpm build)"
# The arguments are checked here, before the lvmd part and the VM (exit 2 with one line).
node bench/dist/main.js peer "$@" --check-usage || exit 2
# shellcheck source=lvmd-env.sh
. "$ROOT/bench/scripts/lvmd-env.sh"
lvmd_env || fail "no lvmd to compare with (above)"
LVSTAMP_BENCH_COMMIT=$(git rev-parse HEAD 2>/dev/null || true)
if [ -n "$LVSTAMP_BENCH_COMMIT" ] && [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  LVSTAMP_BENCH_COMMIT="$LVSTAMP_BENCH_COMMIT-dirty"
fi
export LVSTAMP_BENCH_COMMIT
CMD=(node bench/dist/main.js peer "$@")
has_dm() { [ -e /dev/mapper/control ] && grep -qw device-mapper /proc/misc 2>/dev/null; }
if [ "$(id -u)" = 0 ] && has_dm; then
  exec "${CMD[@]}"
fi
printf -v cmd '%q ' "${CMD[@]}"
export LVSTAMP_BENCH_VM=1 LVSTAMP_BENCH_ACCEL=${VM_ACCEL:-tcg}
VM_ENV="LVSTAMP_BENCH_LVMD LVSTAMP_BENCH_LVMD_PROTO LVSTAMP_BENCH_COMMIT LVSTAMP_BENCH_VM LVSTAMP_BENCH_ACCEL" VM_MEM=${VM_MEM:-4G} \
  VM_TIMEOUT=${VM_TIMEOUT:-5400} exec "$ROOT/test-e2e/vm/run-in-vm.sh" "$cmd"
