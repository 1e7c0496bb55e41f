#!/bin/bash
# run.sh: the CSI conformance suite, csi-sanity, against the BUILT driver (apps/csi-driver/dist/
# lvstamp-csi.mjs) on real lvm2: builds csi-sanity when missing (build.sh), then boots the test VM
# once (test-e2e/vm/run-in-vm.sh) and runs in-vm.sh there. No focus or skip flags: every spec runs;
# a spec skipped by a capability lvstamp does not offer is listed by name; a failed spec fails the
# run (exit != 0). JUnit report: test-e2e/results/csi-sanity.xml (written back from the VM).
# Where the host has device-mapper and root, in-vm.sh runs directly, as run-e2e.sh does.
set -uo pipefail
PKG=$(cd "$(dirname "$0")/.." && pwd)
ROOT=$(cd "$PKG/.." && pwd)
fail() { echo "csi-sanity: FAIL: $*" >&2; exit 1; }

[ -f "$ROOT/apps/csi-driver/dist/lvstamp-csi.mjs" ] || fail "the driver is not built (pnpm exec turbo run build)"
SANITY=$(bash "$PKG/csi-sanity/build.sh" | tail -1) || fail "csi-sanity could not be built"
[ -x "$SANITY" ] || fail "csi-sanity is missing after build.sh: $SANITY"
mkdir -p "$PKG/results" && rm -f "$PKG/results/csi-sanity.xml"

host_has_dm() {
  [ "$(id -u)" = 0 ] && [ -e /dev/mapper/control ] &&
    grep -qw device-mapper /proc/misc /proc/devices 2>/dev/null
}

start=$(date +%s)
if [ "${LVSTAMP_E2E_FORCE_VM:-0}" != 1 ] && host_has_dm; then
  echo "csi-sanity: host has device-mapper and root: running directly"
  CSI_SANITY=$SANITY RESULTS=$PKG/results bash "$PKG/csi-sanity/in-vm.sh"
  rc=$?
else
  echo "csi-sanity: host has no device-mapper (or not root): booting the test VM once"
  command -v qemu-system-x86_64 >/dev/null || fail "qemu-system-x86_64 is missing (apt-get install qemu-system-x86)"
  printf -v cmd 'CSI_SANITY=%q RESULTS=%q bash %q' "$SANITY" "$PKG/results" "$PKG/csi-sanity/in-vm.sh"
  VM_RW="$PKG/results" VM_ENV="CI" VM_MEM=${VM_MEM:-4G} VM_TIMEOUT=${VM_TIMEOUT:-3000} \
    "$PKG/vm/run-in-vm.sh" "$cmd"
  rc=$?
fi
echo "csi-sanity: exit $rc after $(($(date +%s) - start)) s"
exit $rc
