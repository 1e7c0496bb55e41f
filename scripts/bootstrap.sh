#!/bin/bash
# bootstrap.sh: makes a machine that has only Node.js (>= 20), npm and apt (as root) ready to build,
# test and demo lvstamp, and returns in about a second when it already is:
#   1. pnpm 12.4.2 (npm i -g; corepack cannot verify pnpm from this registry),
#   2. the Debian packages behind every binary the tests, the demo and the test VM use
#      (apt-get update once, only when something is missing),
#   3. pnpm install --frozen-lockfile when node_modules is missing or older than pnpm-lock.yaml.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PNPM_VERSION=12.4.2
log() { echo "bootstrap: $*"; }
die() { echo "bootstrap: FAIL: $*" >&2; exit 1; }

command -v node >/dev/null || die "Node.js is missing (>= 20 required)"
[ "$(node -p 'process.versions.node.split(".")[0]')" -ge 20 ] || die "Node.js >= 20 required, found $(node -v)"

# 2. system packages: binary -> Debian package
declare -A PKG=(
  [lvm]=lvm2 [dmsetup]=dmsetup [mkfs.ext4]=e2fsprogs [resize2fs]=e2fsprogs [mkfs.xfs]=xfsprogs
  [xfs_growfs]=xfsprogs [blkid]=util-linux [blockdev]=util-linux [flock]=util-linux [losetup]=mount
  [mount]=mount [qemu-system-x86_64]=qemu-system-x86 [xz]=xz-utils [cpio]=cpio [depmod]=kmod
  [gzip]=gzip [dpkg-deb]=dpkg [timeout]=coreutils [fio]=fio [thin_check]=thin-provisioning-tools
)
missing=()
for bin in "${!PKG[@]}"; do
  command -v "$bin" >/dev/null || PATH=$PATH:/sbin:/usr/sbin command -v "$bin" >/dev/null || missing+=("${PKG[$bin]}")
done
# the test VM downloads its kernel with apt-get download: that needs package lists
need_lists=0
if [ ! -s "$ROOT/test-e2e/vm/cache/initramfs.cpio.gz" ] &&
  [[ "$(apt-cache policy linux-image-amd64 2>/dev/null)" != *"Candidate: "[0-9]* ]]; then
  need_lists=1
fi
if [ ${#missing[@]} -gt 0 ] || [ $need_lists = 1 ]; then
  [ "$(id -u)" = 0 ] || die "need root to install Debian packages: ${missing[*]}"
  command -v apt-get >/dev/null || die "apt-get is missing; install by hand: ${missing[*]}"
  log "apt-get update"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq || die "apt-get update failed"
  if [ ${#missing[@]} -gt 0 ]; then
    mapfile -t pkgs < <(printf '%s\n' "${missing[@]}" | sort -u)
    log "apt-get install ${pkgs[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" ||
      die "apt-get install ${pkgs[*]} failed"
  fi
fi

# 1. pnpm, pinned
if [ "$(pnpm --version 2>/dev/null || true)" != "$PNPM_VERSION" ]; then
  log "npm i -g pnpm@$PNPM_VERSION"
  npm i -g --no-fund --no-audit "pnpm@$PNPM_VERSION" >/dev/null || die "npm i -g pnpm@$PNPM_VERSION failed"
  hash -r
  [ "$(pnpm --version)" = "$PNPM_VERSION" ] || die "pnpm on PATH is $(pnpm --version), not $PNPM_VERSION"
fi

# 3. dependencies
cd "$ROOT"
if [ ! -f node_modules/.modules.yaml ] || [ pnpm-lock.yaml -nt node_modules/.modules.yaml ]; then
  log "pnpm install --frozen-lockfile"
  pnpm install --frozen-lockfile || die "pnpm install --frozen-lockfile failed"
  touch node_modules/.modules.yaml
fi
log "ready (node $(node -v), pnpm $(pnpm --version))"
