#!/bin/bash
# build-kubelet.sh KAPI_DIR: the kubelet 1.20.2 with the upstream CSI :authority fix
# (kubelet-csi-authority.patch: kubernetes/kubernetes#112597, in Kubernetes 1.26), from the source
# tree that build-kube-1.20.sh prepared in KAPI_DIR. It builds from a hard-linked copy
# of that tree whose patched file is a new file (the shared tree stays unpatched), with the same
# GOPATH-mode recipe and Go cache, so it is incremental once the stock kubelet is built.
# Cached outside the repository, keyed by the source version and the patch's hash.
# Prints the binary's path on the last line.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
KAPI=${1:?usage: build-kubelet.sh KAPI_DIR}
PATCH=$HERE/kubelet-csi-authority.patch
KEY=$(basename "$KAPI")-$(sha256sum <"$PATCH" | cut -c1-12)
OUT=$K8S_CACHE/kubelet/$KEY
if [ ! -x "$OUT/kubelet" ]; then
  SRC=$(ls -d "$KAPI"/kubernetes-*/ | head -1); SRC=${SRC%/}
  [ -f "$SRC/pkg/generated/openapi/zz_generated.openapi.go" ] || die "$SRC is not prepared (run build-kube-1.20.sh)"
  GP=$K8S_CACHE/kubelet/src-$KEY/gopath
  T=$GP/src/k8s.io/kubernetes
  if [ ! -f "$T/.lvstamp-patched" ]; then
    rm -rf "$GP"; mkdir -p "$GP/src/k8s.io"
    cp -al "$SRC" "$T"
    F=pkg/volume/csi/csi_client.go
    patch -s -p1 -d "$T" -o "$T/$F.patched" <"$PATCH" || die "kubelet-csi-authority.patch does not apply"
    mv "$T/$F.patched" "$T/$F" # a new inode: the hard-linked original stays as it was
    touch "$T/.lvstamp-patched"
  fi
  export GO111MODULE=off GOFLAGS= GOPROXY=off CGO_ENABLED=0 GOPATH=$GP GOCACHE=${GOCACHE:-$KAPI/gocache}
  V=v1.20.2; LD="-s -w"
  for p in k8s.io/kubernetes/vendor/k8s.io/component-base/version k8s.io/kubernetes/vendor/k8s.io/client-go/pkg/version; do
    LD="$LD -X $p.gitVersion=$V -X $p.gitMajor=1 -X $p.gitMinor=20 -X $p.gitTreeState=clean"
  done
  mkdir -p "$OUT"
  s=$SECONDS
  (cd "$T" && go build -trimpath -ldflags "$LD" -o "$OUT/kubelet.tmp" ./cmd/kubelet) || die "kubelet build failed"
  mv "$OUT/kubelet.tmp" "$OUT/kubelet"
  step "kubelet with the CSI :authority fix built in $((SECONDS - s)) s"
fi
echo "$OUT/kubelet"
