#!/bin/bash
# run-e2e.sh [vitest args...]: the e2e suite (the test:e2e script of @lvstamp/test-e2e).
# Runs vitest directly when this host has device-mapper and we are root; otherwise boots the test VM
# once (test-e2e/vm/run-in-vm.sh) and runs the suite inside it. A missing prerequisite is a failure
# (exit != 0), never a skip. Exit code = the suite's exit code. A JSON report lands in
# test-e2e/results/e2e.json (the VM writes it back through a read-write share).
set -uo pipefail
PKG=$(cd "$(dirname "$0")/.." && pwd)
cd "$PKG"
fail() { echo "run-e2e: FAIL: $*" >&2; exit 1; }

for tool in node lvm dmsetup losetup blkid mkfs.ext4 mkfs.xfs mount; do
  command -v "$tool" >/dev/null || fail "'$tool' is missing (scripts/bootstrap.sh installs lvm2 e2fsprogs xfsprogs util-linux)"
done
[ -x node_modules/.bin/vitest ] || fail "vitest is not installed (pnpm install)"
mkdir -p results && rm -f results/e2e.json
VITEST=(node_modules/.bin/vitest run --reporter=default --reporter=json --outputFile.json=results/e2e.json "$@")

host_has_dm() {
  [ "$(id -u)" = 0 ] && [ -e /dev/mapper/control ] &&
    grep -qw device-mapper /proc/misc /proc/devices 2>/dev/null
}

start=$(date +%s)
if [ "${LVSTAMP_E2E_FORCE_VM:-0}" != 1 ] && host_has_dm; then
  echo "run-e2e: host has device-mapper and root: running the e2e suite directly"
  "${VITEST[@]}"
  rc=$?
else
  echo "run-e2e: host has no device-mapper (or not root): booting the test VM once, running the suite inside"
  command -v qemu-system-x86_64 >/dev/null || fail "qemu-system-x86_64 is missing (apt-get install qemu-system-x86)"
  printf -v cmd '%q ' "${VITEST[@]}"
  VM_RW="$PKG/results" VM_ENV="CI" VM_MEM=${VM_MEM:-4G} VM_TIMEOUT=${VM_TIMEOUT:-3000} \
    "$PKG/vm/run-in-vm.sh" "set -o pipefail; echo \"run-e2e: in the VM: kernel \$(uname -r), \$(lvm version | head -1 | tr -s ' ')\"; $cmd"
  rc=$?
fi
echo "run-e2e: exit $rc after $(($(date +%s) - start)) s"
exit $rc
