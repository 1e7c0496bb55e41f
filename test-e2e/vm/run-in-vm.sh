#!/bin/bash
# run-in-vm.sh 'shell command': boots a throwaway qemu VM (stock Debian kernel) whose root is the
# host's / (9p, read-only) under a tmpfs overlay, runs the command there as root in the same working
# directory, streams its stdout/stderr and exits with its exit code (124 on timeout, 125 when the VM
# cannot be prepared, 255 when the guest died; the console log is printed then).
# Env: VM_ACCEL=tcg|kvm (tcg)  VM_CPU_MODEL (Westmere; qemu's -cpu under tcg)  VM_MEM (3G)  VM_CPUS (nproc)  VM_TIMEOUT seconds (3600)
#      VM_RW="/abs/dir ..."  host dirs mounted read-write at the same path in the guest (results)
#      VM_ENV="NAME ..."     host variables exported into the guest
#      VM_DISKS="4G ..."     empty sparse virtio disks -> /dev/vda, /dev/vdb (deleted afterwards); an
#                            entry SIZE/DRIVE/DEVICE sets qemu's -drive options (default discard=unmap)
#                            and virtio-blk-pci properties, e.g. 64M/discard=ignore or
#                            64M/discard=unmap/discard=off,write-zeroes=off (a disk without discard)
#      VM_IMAGES="/abs/f.raw ..." existing raw disk images, after VM_DISKS (-> the next /dev/vdX):
#                            the guest's writes are discarded at exit (qemu snapshot=on); a
#                            name prefixed "rw:" is written through instead
#      VM_NET=tap:IFNAME  one virtio NIC (eth0 in the guest) on the existing tap device IFNAME
#                            (in qemu's network namespace); VM_NET=user: qemu user networking;
#                            unset: no NIC
#      VM_DEBUG=1 print the guest console log; VM_KEEP=1 keep the transfer dir under vm/tmp
set -u
VM_DIR=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
CACHE=${VM_CACHE:-$VM_DIR/cache}
[ $# -ge 1 ] || { echo "usage: $0 'command'" >&2; exit 2; }
command -v qemu-system-x86_64 >/dev/null ||
  { echo "run-in-vm: qemu-system-x86_64 is missing (apt-get install qemu-system-x86)" >&2; exit 125; }
VM_CACHE=$CACHE "$VM_DIR/build-assets.sh" >&2 || { echo "run-in-vm: asset build failed" >&2; exit 125; }

VM_ACCEL=${VM_ACCEL:-tcg}; VM_MEM=${VM_MEM:-3G}; VM_CPUS=${VM_CPUS:-$(nproc)}; VM_TIMEOUT=${VM_TIMEOUT:-3600}
VM_RW=${VM_RW:-}
MODULES="loop dm-mod" # everything else loads on demand (kernel request_module, lvm -> busybox modprobe)
[ -n "${VM_DISKS:-}${VM_IMAGES:-}" ] && MODULES="$MODULES virtio_blk"
[ -n "${VM_NET:-}" ] && MODULES="$MODULES virtio_net"
mkdir -p "$VM_DIR/tmp" && XFER=$(mktemp -d "$VM_DIR/tmp/xfer.XXXXXX") || exit 125
chmod 755 "$XFER"
printf '%s\n' "$*" >"$XFER/cmd.sh"
: >"$XFER/env.sh"
for v in ${VM_ENV:-}; do [ -n "${!v+x}" ] && printf 'export %s=%q\n' "$v" "${!v}" >>"$XFER/env.sh"; done
cat >"$XFER/vm.conf" <<CONF
VM_XFER='$XFER'
VM_DIR='$CACHE'
VM_CWD='$PWD'
VM_RW='$VM_RW'
VM_MODULES='$MODULES'
VM_TMPFS_SIZE='${VM_TMPFS_SIZE:-80%}'
VM_OVERLAY=1
VM_LVM_NOUDEV=1
CONF
case $VM_ACCEL in
  kvm) ACCEL=(-accel kvm -cpu host) ;;
  # Westmere rather than max under TCG: with max, glibc and V8 pick AVX2/AVX-512 code paths that
  # TCG emulates slowly; measured on 2 idle cores, one e2e file (lifecycle, 1 vCPU per VM, two
  # VMs at once) took 196 s with max and 171 s and 165 s with Westmere (qemu64: 164 s; vitest durations)
  *) ACCEL=(-accel tcg,thread=multi -cpu "${VM_CPU_MODEL:-Westmere}") ;;
esac
EXTRA=(); n=0
for d in $VM_RW; do
  [ -d "$d" ] || { echo "run-in-vm: VM_RW dir $d missing" >&2; exit 125; }
  EXTRA+=(-virtfs "local,path=$d,mount_tag=rw$n,security_model=none,multidevs=remap"); n=$((n + 1))
done
i=0
for spec in ${VM_DISKS:-}; do
  IFS=/ read -r sz drive props <<<"$spec"
  truncate -s "$sz" "$XFER/disk$i.raw" || exit 125
  EXTRA+=(-drive "file=$XFER/disk$i.raw,if=none,id=disk$i,format=raw,cache=unsafe,${drive:-discard=unmap}"
    -device "virtio-blk-pci,drive=disk$i${props:+,$props}"); i=$((i + 1))
done
for f in ${VM_IMAGES:-}; do
  case $f in
    rw:*) f=${f#rw:}; mode=cache=unsafe ;;
    *) mode=snapshot=on ;;
  esac
  [ -f "$f" ] || { echo "run-in-vm: VM_IMAGES file $f missing" >&2; exit 125; }
  EXTRA+=(-drive "file=$f,if=none,id=disk$i,format=raw,$mode,discard=unmap" -device "virtio-blk-pci,drive=disk$i")
  i=$((i + 1))
done
case ${VM_NET:-} in
  '') ;;
  tap:?*) EXTRA+=(-netdev "tap,id=net0,ifname=${VM_NET#tap:},script=no,downscript=no" -device virtio-net-pci,netdev=net0) ;;
  user) EXTRA+=(-netdev user,id=net0 -device virtio-net-pci,netdev=net0) ;;
  *) echo "run-in-vm: VM_NET=$VM_NET: tap:IFNAME or user" >&2; exit 125 ;;
esac
for p in out err; do mkfifo "$XFER/$p.in" "$XFER/$p.out"; done
# hold a writer on each fifo so the readers open at once; closed after qemu exits => readers see EOF
exec 3<>"$XFER/out.out" 4<>"$XFER/err.out"
cat <"$XFER/out.out" 3>&- 4>&- &
CAT1=$!
cat <"$XFER/err.out" >&2 3>&- 4>&- &
CAT2=$!
timeout -k 10 "$VM_TIMEOUT" qemu-system-x86_64 -nodefaults -no-user-config -display none -vga none -no-reboot \
  -machine q35 "${ACCEL[@]}" -smp "$VM_CPUS" -m "$VM_MEM" \
  -kernel "$CACHE/vmlinux" -initrd "$CACHE/initramfs.cpio.gz" \
  -append "console=ttyS0 panic=-1 oops=panic loglevel=4 mitigations=off no_timer_check" \
  -serial "file:$XFER/console.log" \
  -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
  -virtfs "local,path=$XFER,mount_tag=xfer,security_model=none,multidevs=remap" "${EXTRA[@]}" \
  -device virtio-serial-pci \
  -chardev "pipe,id=out,path=$XFER/out" -device virtserialport,chardev=out,name=out \
  -chardev "pipe,id=err,path=$XFER/err" -device virtserialport,chardev=err,name=err \
  </dev/null 3>&- 4>&- &
QPID=$!
SIG=0
trap 'SIG=130; kill $QPID 2>/dev/null' INT
trap 'SIG=143; kill $QPID 2>/dev/null' TERM HUP
wait $QPID; QRC=$?
[ $SIG != 0 ] && wait $QPID
exec 3>&- 4>&-
wait $CAT1 $CAT2
if [ -f "$XFER/rc" ]; then RC=$(cat "$XFER/rc")
elif [ $SIG != 0 ]; then RC=$SIG
elif [ $QRC = 124 ] || [ $QRC = 137 ]; then RC=124; echo "run-in-vm: timeout after ${VM_TIMEOUT}s" >&2
else RC=255; fi
if [ "${VM_DEBUG:-0}" = 1 ] || [ ! -f "$XFER/rc" ] || [ -f "$XFER/init-error" ]; then
  echo "run-in-vm: qemu exit $QRC, guest console log:" >&2; tail -n 60 "$XFER/console.log" >&2
fi
if [ "${VM_KEEP:-0}" = 1 ]; then echo "run-in-vm: kept $XFER" >&2; else rm -rf "$XFER"; fi
exit "$RC"
