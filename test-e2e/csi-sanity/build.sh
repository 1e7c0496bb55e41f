#!/bin/bash
# Builds csi-sanity, the Kubernetes CSI conformance suite (kubernetes-csi/csi-test), when the cached
# binary is missing, from the vendored source the CI machines share read-only at ../shared/csi-test/
# relative to the repository root (its build.sh: offline, Debian's golang-go). Same idea as the
# kube-apiserver build of the gc-job tests (apps/gc-job/test/kube/build.sh).
#
# Cache (outside the repository, keyed by the csi-test version):
#   ${LVSTAMP_CSI_SANITY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lvstamp-csi-sanity}/<version>/csi-sanity
# Prints the binary's path on the last line of stdout.
# Env: LVSTAMP_CSI_TEST_SRC overrides the source folder (default <repo>/../shared/csi-test).
# Needs root for apt-get when Go is missing (CI and the development machines run as root).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
VERSION=v5.3.1
CACHE=${LVSTAMP_CSI_SANITY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lvstamp-csi-sanity}
BIN=$CACHE/$VERSION/csi-sanity

if [ -x "$BIN" ]; then
  echo "== cached: $BIN ($("$BIN" --version 2>&1 | head -1))" >&2
  echo "$BIN"
  exit 0
fi

SRC=${LVSTAMP_CSI_TEST_SRC:-$ROOT/../shared/csi-test}
if [ ! -f "$SRC/build.sh" ] || [ ! -f "$SRC/csi-test-$VERSION.tar.xz" ]; then
  cat >&2 <<MSG
csi-sanity: $BIN is not built, and its source is missing:
  expected $SRC/build.sh and $SRC/csi-test-$VERSION.tar.xz
  (the csi-test $VERSION source with its vendored dependencies, shared read-only at
  ../shared/csi-test relative to the repository root; set LVSTAMP_CSI_TEST_SRC to use another
  folder, or LVSTAMP_CSI_SANITY_CACHE to point at a folder holding $VERSION/csi-sanity)
MSG
  exit 1
fi
if ! command -v go >/dev/null; then
  echo "== installing Debian's golang-go to build csi-sanity" >&2
  apt-get -o DPkg::Lock::Timeout=600 install -y golang-go >&2
fi
mkdir -p "$(dirname "$BIN")"
start=$SECONDS
# Build next to the cache entry, then move: an interrupted build never leaves a half binary.
bash "$SRC/build.sh" "$BIN.partial" >&2
mv "$BIN.partial" "$BIN"
echo "== built $BIN in $((SECONDS - start)) s" >&2
echo "$BIN"
