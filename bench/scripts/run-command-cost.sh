#!/bin/bash
# run-command-cost.sh [--rounds N] [--metadata-only]: `node bench/dist/main.js command-cost` (each
# lvm command of a create → delete cycle timed alone, bench/README.md "What one lvm command
# costs"). As root on a host with device-mapper, or with --metadata-only on any host (no
# activation), it runs here; otherwise inside the throw-away test VM (test-e2e/vm/run-in-vm.sh).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
[ -f bench/dist/main.js ] || { echo "run-command-cost: bench not built (pnpm build)" >&2; exit 1; }
CMD=(node bench/dist/main.js command-cost "$@")
has_dm() { [ -e /dev/mapper/control ] && grep -qw device-mapper /proc/misc 2>/dev/null; }
if [ "$(id -u)" = 0 ] && { has_dm || [[ " $* " == *" --metadata-only "* ]]; }; then
  exec "${CMD[@]}"
fi
printf -v cmd '%q ' "${CMD[@]}"
VM_MEM=${VM_MEM:-3G} VM_TIMEOUT=${VM_TIMEOUT:-3600} exec "$ROOT/test-e2e/vm/run-in-vm.sh" "$cmd"
