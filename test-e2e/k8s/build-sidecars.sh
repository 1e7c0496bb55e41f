#!/bin/bash
# build-sidecars.sh: the CSI sidecars (external-provisioner v2.1.2, node-driver-registrar v2.1.0,
# external-resizer v1.1.0, livenessprobe v2.2.0, csi-snapshotter v5.0.1) and the cluster's
# snapshot-controller v5.0.1 (same source as csi-snapshotter), built offline with Debian's Go 1.19 from their
# vendored source tarballs in ../shared/k8s-sidecars/ (beside the clone), cached outside the
# repository keyed by the versions. Their vendored modern-go/reflect2 is already Debian's 1.0.2
# (1.0.1 crashes under Go >= 1.18). Prints the binary directory on the last line.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
need=()
for spec in external-provisioner:v2.1.2:csi-provisioner node-driver-registrar:v2.1.0:csi-node-driver-registrar \
  external-resizer:v1.1.0:csi-resizer livenessprobe:v2.2.0:livenessprobe \
  external-snapshotter:v5.0.1:csi-snapshotter external-snapshotter:v5.0.1:snapshot-controller; do
  [ -x "$SIDECARS_DIR/${spec##*:}" ] || need+=("$spec")
done
if [ ${#need[@]} -gt 0 ]; then
  command -v go >/dev/null || die "go is missing (apt-get install golang-go)"
  mkdir -p "$SIDECARS_DIR"
  src=$(mktemp -d); trap 'rm -rf "$src"' EXIT
  export CGO_ENABLED=0 GOFLAGS=-mod=vendor GOPROXY=off GOCACHE=${GOCACHE:-$HOME/.cache/go-build}
  for spec in "${need[@]}"; do
    IFS=: read -r repo tag cmd <<<"$spec"
    tarball=$SHARED/k8s-sidecars/$repo-$tag.tar.xz
    [ -f "$tarball" ] || die "sidecar source $tarball is missing (the shared build inputs beside the clone; LVSTAMP_SHARED overrides)"
    [ -d "$src/$repo-$tag" ] || tar -xJf "$tarball" -C "$src"
    s=$SECONDS
    (cd "$src/$repo-$tag" && go build -trimpath -ldflags "-s -w -X main.version=$tag" -o "$SIDECARS_DIR/$cmd.tmp" ./cmd/$cmd)
    mv "$SIDECARS_DIR/$cmd.tmp" "$SIDECARS_DIR/$cmd"
    step "built $cmd $tag in $((SECONDS - s)) s"
  done
fi
echo "$SIDECARS_DIR"
