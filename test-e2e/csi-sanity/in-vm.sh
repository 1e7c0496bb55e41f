#!/bin/bash
# in-vm.sh: runs inside the test VM (or on a host with device-mapper, as root). Makes a 40 GiB
# sparse loop-backed volume group, starts the built lvstamp-csi on a unix socket with one thin device
# class on it (a 4 GiB pool that the driver creates at the first CreateVolume, over-provisioning
# ratio 10: csi-sanity makes many 1 GiB volumes and writes almost nothing; docs/DESIGN.md §4), runs csi-sanity (CSI_SANITY) against it with the sizes the conformance tier asks for,
# writes the JUnit report to $RESULTS/csi-sanity.xml, prints the counts and every skipped spec by
# name, and tears everything down. Exit code: csi-sanity's (non-zero when a spec failed).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
: "${CSI_SANITY:?path of the csi-sanity binary}" "${RESULTS:?directory for the JUnit report}"
WORK=$(mktemp -d /tmp/csi-sanity.XXXXXX)
VG=lvse2e$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
LOOP=
DRIVER=
cleanup() {
  [ -n "$DRIVER" ] && kill "$DRIVER" 2>/dev/null && wait "$DRIVER" 2>/dev/null
  grep -o " $WORK[^ ]*" /proc/self/mounts | sort -r | while read -r m; do umount -l "$m"; done
  for map in $(dmsetup ls 2>/dev/null | awk '/^lvstamp-/{print $1}'); do dmsetup remove --noudevsync "$map" 2>/dev/null; done
  vgremove -ff -y "$VG" >/dev/null 2>&1
  [ -n "$LOOP" ] && { pvremove -ff -y "$LOOP" >/dev/null 2>&1; losetup -d "$LOOP"; }
  rm -rf "$WORK"
}
trap cleanup EXIT

truncate -s 40G "$WORK/pv.img"
LOOP=$(losetup --find --show "$WORK/pv.img") || exit 1
pvcreate -q "$LOOP" && vgcreate -q "$VG" "$LOOP" || exit 1
cat >"$WORK/config.yaml" <<CONF
deviceClasses:
  sanity: { volumeGroup: $VG, type: thin, thinPool: sanitypool, thinPoolSize: 4294967296, overprovisionRatio: 10, wipe: none, default: true }
CONF
node "$ROOT/apps/csi-driver/dist/lvstamp-csi.mjs" --endpoint "unix://$WORK/csi.sock" \
  --node-id csi-sanity-node --config "$WORK/config.yaml" --lock-file "$WORK/host.lock" \
  --owner-id "$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')" \
  --log-level warn >"$WORK/driver.log" 2>&1 &
DRIVER=$!
for _ in $(seq 1 1200); do [ -S "$WORK/csi.sock" ] && break; kill -0 "$DRIVER" 2>/dev/null || break; sleep 0.1; done
[ -S "$WORK/csi.sock" ] || { echo "in-vm: lvstamp-csi did not start:" >&2; cat "$WORK/driver.log" >&2; exit 1; }

echo "in-vm: kernel $(uname -r), $(lvm version | head -1 | tr -s ' '), $("$CSI_SANITY" --version 2>&1 | head -1)"
start=$(date +%s)
"$CSI_SANITY" --csi.endpoint "unix://$WORK/csi.sock" \
  --csi.testvolumesize 1073741824 --csi.testvolumeexpandsize 2147483648 \
  --csi.mountdir "$WORK/mount" --csi.stagingdir "$WORK/staging" \
  --ginkgo.junit-report "$RESULTS/csi-sanity.xml" --ginkgo.no-color --ginkgo.timeout 2h
rc=$?
echo "in-vm: csi-sanity exit $rc after $(($(date +%s) - start)) s"
node "$ROOT/test-e2e/csi-sanity/summary.mjs" "$RESULTS/csi-sanity.xml" || rc=1
if [ "$rc" != 0 ]; then echo "in-vm: driver log (last 80 lines):"; tail -n 80 "$WORK/driver.log"; fi
exit $rc
