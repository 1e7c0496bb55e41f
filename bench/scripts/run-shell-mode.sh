#!/bin/bash
# run-shell-mode.sh [--cycles N]: `node bench/dist/main.js shell-mode` (lvm shell mode against a
# process per call, bench/README.md "lvm shell mode"), directly as root on a host with
# device-mapper, else inside the throw-away test VM (test-e2e/vm/run-in-vm.sh). Prints its tables;
# exit code = the evaluation's (1 when a step misbehaved or the cleanup failed).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
[ -f bench/dist/main.js ] || { echo "run-shell-mode: bench not built (pnpm build)" >&2; exit 1; }
CMD=(node bench/dist/main.js shell-mode "$@")
if [ "$(id -u)" = 0 ] && [ -e /dev/mapper/control ] && grep -qw device-mapper /proc/misc /proc/devices 2>/dev/null; then
  exec "${CMD[@]}"
fi
printf -v cmd '%q ' "${CMD[@]}"
VM_MEM=${VM_MEM:-3G} VM_TIMEOUT=${VM_TIMEOUT:-3600} exec "$ROOT/test-e2e/vm/run-in-vm.sh" "$cmd"
