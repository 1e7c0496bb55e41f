#!/bin/bash
# measure-wipe.sh: what a read returns after each way of wiping a block device (docs/FACTS.md
# "Wiping"), on the devices a volume group sits on: a loop device over a file in the guest's tmpfs
# (where the e2e tests keep theirs), the same with discard turned off, and three virtio disks
# (qemu discard=unmap, discard=ignore, and one without discard and write-zeroes). Each case writes
# a pattern with no zero byte, wipes, and counts the bytes that are not zero on a direct read.
# Ways: `blkdiscard` (BLKDISCARD), `blkdiscard --zeroout` (BLKZEROOUT) and `fallocate --punch-hole`
# (the kernel's zeroing that may unmap, without fallback to writing zeros). Each on the raw
# device and on an LV (a dm linear map, what lvstamp wipes). On the host it boots the test VM and
# runs itself inside with --guest. Only throwaway VGs "lvswipe*" on the VM's own disks and loop
# files are used.
set -uo pipefail
PKG=$(cd "$(dirname "$0")/.." && pwd)
if [ "${1:-}" != --guest ]; then
  VM_DISKS="96M 96M/discard=ignore 96M/discard=unmap/discard=off,write-zeroes=off" \
    exec "$PKG/vm/run-in-vm.sh" "bash $PKG/scripts/measure-wipe.sh --guest"
fi
[ "$(hostname)" = vm ] || { echo "measure-wipe: --guest runs only in the test VM" >&2; exit 1; }
export LC_ALL=C LVM_SUPPRESS_FD_WARNINGS=1
MIB=64 # bytes wiped per case, in MiB
BYTES=$((MIB * 1048576))

limits() { # limits SYSNAME: the queue limits that decide the wipe
  local q=/sys/block/$1/queue
  echo "discard_max_bytes=$(cat "$q/discard_max_bytes") discard_granularity=$(cat "$q/discard_granularity") write_zeroes_max_bytes=$(cat "$q/write_zeroes_max_bytes")"
}
stat_of() { # stat_of SYSNAME: "write_ios write_sectors discard_ios discard_sectors"
  awk '{print $5, $7, $12, $14}' "/sys/block/$1/stat"
}
sysname() { # sysname DEVICE: its name under /sys/block (dm-3 for /dev/mapper/vg-lv)
  basename "$(readlink -f "/sys/dev/block/$((0x$(stat -L -c %t "$1"))):$((0x$(stat -L -c %T "$1")))")"
}

one() { # one LABEL DEVICE WAY: pattern, wipe, read back
  local label=$1 dev=$2 way=$3 sys before after t0 t1 rc argv
  sys=$(sysname "$dev")
  case $way in
    discard) argv=(blkdiscard --offset 0 --length "$BYTES" "$dev") ;;
    zeroout) argv=(blkdiscard --zeroout --offset 0 --length "$BYTES" "$dev") ;;
    punch) argv=(fallocate --punch-hole --offset 0 --length "$BYTES" "$dev") ;;
  esac
  yes lvstamp-old-tenant-block | head -c "$BYTES" | dd of="$dev" bs=1M oflag=direct iflag=fullblock conv=fsync status=none
  before=$(stat_of "$sys")
  dmesg -C
  t0=$(date +%s%N)
  "${argv[@]}" 2>/tmp/wipe.err
  rc=$?
  t1=$(date +%s%N)
  after=$(stat_of "$sys")
  local left
  left=$(dd if="$dev" bs=1M count="$MIB" iflag=direct status=none | tr -d '\000' | wc -c)
  local ms=$(((t1 - t0) / 1000000))
  read -r w0 ws0 d0 ds0 <<<"$before"
  read -r w1 ws1 d1 ds1 <<<"$after"
  printf '%-24s %-8s exit %d  non-zero bytes read back %9d of %d  %6d ms  %7s MiB/s  writes %d ios / %d MiB  discards %d ios / %d MiB\n' \
    "$label" "$way" "$rc" "$left" "$BYTES" "$ms" "$(awk -v m="$MIB" -v t="$ms" 'BEGIN { printf "%.0f", (t > 0 ? m * 1000 / t : 0) }')" \
    $((w1 - w0)) $(((ws1 - ws0) / 2048)) $((d1 - d0)) $(((ds1 - ds0) / 2048))
  echo "    \$ $(printf '%q ' "${argv[@]}")"
  [ -s /tmp/wipe.err ] && sed 's/^/    stderr: /' /tmp/wipe.err
  dmesg | grep -v '^$' | head -3 | sed 's/^/    dmesg: /'
}

device() { # device LABEL DEVICE: every way on the raw device and on an LV over it
  local label=$1 dev=$2 vg=lvswipe$RANDOM lv
  echo "== $label: $dev ($(limits "$(sysname "$dev")"))"
  for way in discard zeroout punch; do one "$label" "$dev" "$way"; done
  if ! { pvcreate -q "$dev" && vgcreate -q "$vg" "$dev" && lvcreate -q --yes -L "${MIB}m" -n data "$vg"; } >/dev/null; then
    echo "    lvm failed"
    return
  fi
  lv=$(lvs --noheadings -o lv_dm_path "$vg/data" | tr -d ' ')
  echo "== $label, LV $lv ($(limits "$(sysname "$lv")"))"
  for way in discard zeroout punch; do one "$label LV" "$lv" "$way"; done
  vgremove -q -f "$vg" >/dev/null
  pvremove -q "$dev" >/dev/null
}

echo "kernel $(uname -r), $(blkdiscard --version), $(lvm version | head -1 | tr -s ' ')"
mkdir -p /tmp/wipe
truncate -s 96M /tmp/wipe/a.img /tmp/wipe/b.img
A=$(losetup -f --show /tmp/wipe/a.img)
device "loop (tmpfs file)" "$A"
B=$(losetup -f --show /tmp/wipe/b.img)
# discard off before the LV is activated: device-mapper takes the limits of its devices at load
echo 0 >"/sys/block/$(basename "$B")/queue/discard_max_bytes"
device "loop, discard off" "$B"
device "virtio discard=unmap" /dev/vda
device "virtio discard=ignore" /dev/vdb
device "virtio no discard/wz" /dev/vdc
losetup -d "$A" "$B"
