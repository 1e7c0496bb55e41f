#!/bin/bash
# Builds csi-sanity, the Kubernetes CSI conformance suite (github.com/kubernetes-csi/csi-test), from
# its Go module at the version pinned in test-e2e/parts/versions.env (CSI_TEST_VERSION), through
# test-e2e/parts/build.sh, which caches it outside the repository:
#   ${LVSTAMP_PARTS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lvstamp-parts}/csi-sanity-<version>/csi-sanity
# Quick when cached (no go command runs). Prints the binary's path on the last line of stdout.
set -euo pipefail
PARTS=$(cd "$(dirname "$0")/../parts" && pwd)
DIR=$(bash "$PARTS/build.sh" csi-sanity)
BIN=$DIR/csi-sanity
[ -x "$BIN" ] || {
  echo "csi-sanity: $BIN is missing after test-e2e/parts/build.sh" >&2
  exit 1
}
echo "== csi-sanity: $BIN ($("$BIN" --version 2>&1 | head -1))" >&2
echo "$BIN"
