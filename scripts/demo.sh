#!/bin/bash
# demo.sh: THE demo command (root `pnpm demo`, README): bootstrap, build, then `lvstamp demo` (the
# whole volume life cycle on a loop-backed VG) - directly when this host has device-mapper and we are
# root, otherwise inside the test VM (test-e2e/vm/run-in-vm.sh), saying which. Exit code = the demo's.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
export TURBO_TELEMETRY_DISABLED=1 TURBO_NO_UPDATE_NOTIFIER=1
bash scripts/bootstrap.sh || exit 1
pnpm exec turbo run build --output-logs=errors-only || { echo "demo: build failed" >&2; exit 1; }
CLI=$ROOT/apps/cli/dist/lvstamp.mjs
[ -f "$CLI" ] || { echo "demo: $CLI is missing after the build" >&2; exit 1; }

start=$SECONDS
if [ "$(id -u)" = 0 ] && [ -e /dev/mapper/control ] && grep -qw device-mapper /proc/misc /proc/devices 2>/dev/null; then
  echo "demo: this host has device-mapper and root: running lvstamp demo directly"
  node "$CLI" demo "$@"
  rc=$?
else
  echo "demo: this host has no device-mapper (or we are not root): running lvstamp demo inside the test VM"
  args=''
  [ $# -gt 0 ] && printf -v args ' %q' "$@"
  VM_MEM=${VM_MEM:-3G} "$ROOT/test-e2e/vm/run-in-vm.sh" "node $(printf %q "$CLI") demo$args"
  rc=$?
fi
echo "demo: exit $rc after $((SECONDS - start)) s"
exit $rc
