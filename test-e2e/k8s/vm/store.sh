#!/bin/bash
# store.sh: inside the test VM (run by test-e2e/k8s/run.sh when the image store is missing).
# Makes the containerd image store once: an ext4 filesystem on STORE_DISK (a disk image kept in
# the cache outside the repository), containerd with the node's configuration on it, every
# archive of IMAGES imported and unpacked, containerd stopped, the filesystem unmounted. Later
# runs attach that disk with their writes discarded and import only what changed since.
# Env: IMAGES (OCI archives) LOGS STORE_DISK
set -u
. "$(dirname "$0")/cluster.sh"
trap 'for f in $STATE/*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null; done' EXIT
mkdir -p $STATE /var/lib/containerd
mkfs.ext4 -q -F -L lvstamp-images -E lazy_itable_init=1,lazy_journal_init=1 "$STORE_DISK" || { log "mkfs.ext4 $STORE_DISK failed"; exit 1; }
mount -t ext4 "$STORE_DISK" /var/lib/containerd || { log "cannot mount $STORE_DISK"; exit 1; }
containerd_start && images_import $IMAGES || exit 1
kill "$(cat $STATE/containerd.pid)"
for i in $(seq 1 60); do kill -0 "$(cat $STATE/containerd.pid)" 2>/dev/null || break; sleep 1; done
kill -0 "$(cat $STATE/containerd.pid)" 2>/dev/null && { log "containerd did not stop within 60 s"; exit 1; }
sync && umount /var/lib/containerd || { log "cannot unmount the image store"; exit 1; }
log "image store ready: $(blockdev --getsize64 "$STORE_DISK") bytes on $STORE_DISK"
