#!/bin/bash
# build-assets.sh: builds what run-in-vm.sh boots, into $VM_CACHE (default test-e2e/vm/cache,
# gitignored), only what is missing, so a repeat run costs nothing.
#   - linux-image-<ver>-amd64 (the kernel linux-image-amd64 depends on) and busybox-static are only
#     *downloaded* with apt-get download and unpacked with dpkg-deb -x; nothing is installed.
#     (linux-image-cloud-amd64 has no 9p and cannot be used.)
#   - initramfs: busybox, the modules needed to mount the host's / over 9p, init.sh and stage2.sh.
#   - vmlinux: the kernel uncompressed, so qemu boots it through PVH (saves ~4 s under TCG).
# Fails (exit != 0) with a message when a package cannot be downloaded or a tool is missing.
set -euo pipefail
VM_DIR=$(cd "$(dirname "$0")" && pwd)
CACHE=${VM_CACHE:-$VM_DIR/cache}
mkdir -p "$CACHE/debs"
cd "$CACHE"
die() { echo "build-assets: $*" >&2; exit 1; }
for tool in apt-get apt-cache dpkg-deb xz gzip; do
  command -v "$tool" >/dev/null || die "missing tool '$tool' (scripts/bootstrap.sh installs it)"
done

KPKG=${VM_KERNEL_PKG:-$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')}
[ -n "$KPKG" ] || die "cannot resolve the kernel package of linux-image-amd64 (run apt-get update)"
KVER=${KPKG#linux-image-}

fetch() { # fetch PACKAGE: download the .deb once into debs/
  ls "debs/$1"_*.deb >/dev/null 2>&1 && return 0
  (cd debs && apt-get download "$1") || die "apt-get download $1 failed (network? apt-get update?)"
}
if [ ! -f "kernel/boot/vmlinuz-$KVER" ]; then
  fetch "$KPKG"
  rm -rf kernel && mkdir kernel && dpkg-deb -x "debs/${KPKG}"_*.deb kernel
fi
if [ ! -x bb/bin/busybox ]; then
  fetch busybox-static
  rm -rf bb && mkdir bb && dpkg-deb -x debs/busybox-static_*.deb bb
fi
BB=$CACHE/bb/bin/busybox
MODDIR=kernel/lib/modules/$KVER
if [ ! -f "$MODDIR/modules.dep" ]; then
  if command -v depmod >/dev/null && depmod -V 2>/dev/null | grep -q kmod; then
    depmod -b "$CACHE/kernel" "$KVER" # kmod also writes modules.dep.bin
  else
    "$BB" depmod -b "$CACHE/kernel" "$KVER"
  fi
fi

# initramfs: rebuilt when missing or older than init.sh/stage2.sh/this script
if [ ! -s initramfs.cpio.gz ] || [ "$VM_DIR/init.sh" -nt initramfs.cpio.gz ] ||
  [ "$VM_DIR/stage2.sh" -nt initramfs.cpio.gz ] || [ "$0" -nt initramfs.cpio.gz ]; then
  rm -rf initramfs.d && mkdir -p initramfs.d/{bin,dev,proc,sys,lower,xfer,rw,newroot,lib/modules/$KVER}
  cp "$BB" initramfs.d/bin/busybox
  # dependency closure of the stage-1 modules, from modules.dep
  closure=$(awk -v want="virtio_pci 9pnet_virtio 9p overlay virtio_console" '
    { f=$1; sub(":","",f); n=f; sub(".*/","",n); sub("\\.ko.*","",n); gsub("-","_",n); dep[n]=$0 }
    END { split(want,w," "); for(i in w) q[w[i]]=1;
          changed=1; while(changed){changed=0; for(m in q){ split(dep[m],a," "); for(j=1;j in a;j++){ p=a[j]; sub(":","",p); x=p; sub(".*/","",x); sub("\\.ko.*","",x); gsub("-","_",x); if(!(x in q)){q[x]=1;changed=1} } } }
          for(m in q){ split(dep[m],a," "); p=a[1]; sub(":","",p); print p } }' "$MODDIR/modules.dep")
  for f in $closure; do
    mkdir -p "initramfs.d/lib/modules/$KVER/$(dirname "$f")"
    cp "$MODDIR/$f" "initramfs.d/lib/modules/$KVER/$f"
  done
  "$BB" depmod -b "$CACHE/initramfs.d" "$KVER"
  cp "$VM_DIR/init.sh" initramfs.d/init && chmod 755 initramfs.d/init
  cp "$VM_DIR/stage2.sh" initramfs.d/stage2.sh
  (cd initramfs.d && find . | LC_ALL=C sort | "$BB" cpio -o -H newc 2>/dev/null | gzip -1) >initramfs.cpio.gz.tmp
  mv initramfs.cpio.gz.tmp initramfs.cpio.gz
  rm -rf initramfs.d
fi

if [ ! -s "vmlinux-$KVER" ]; then
  off=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "kernel/boot/vmlinuz-$KVER" | head -1 | cut -d: -f1 || true)
  if [ -n "$off" ] && { tail -c +$((off + 1)) "kernel/boot/vmlinuz-$KVER" || true; } |
    xz -dc --single-stream >"vmlinux-$KVER.tmp" 2>/dev/null &&
    [ "$(head -c4 "vmlinux-$KVER.tmp" | od -An -c | tr -d ' ')" = '177ELF' ]; then
    mv "vmlinux-$KVER.tmp" "vmlinux-$KVER"
  else
    rm -f "vmlinux-$KVER.tmp"
    echo "build-assets: note: could not extract vmlinux; booting the compressed bzImage" >&2
    cp "kernel/boot/vmlinuz-$KVER" "vmlinux-$KVER"
  fi
fi
ln -sfn "vmlinux-$KVER" vmlinux
echo "$KVER" >kernel.version
