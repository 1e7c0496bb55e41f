#!/bin/bash
# Build Kubernetes 1.20.2 (kube-apiserver, kube-controller-manager, kube-scheduler, kubelet) from
# Debian bookworm's `kubernetes` source package, fully offline with Debian's golang-go, for the
# Kubernetes 1.20 tier of this directory (run.sh; build-kubelet.sh patches the prepared tree).
# Nothing else uses it: the gc-job's tests run on test-e2e/parts. Rebuilds only what is missing.
#
# Cache (outside the repository, keyed by the Debian source version):
#   ${XDG_CACHE_HOME:-$HOME/.cache}/lvstamp-kube/<source version>/bin/kube-apiserver
# Prints the cache directory on the last line of stdout.
#
# Usage: build-kube-1.20.sh [kube-apiserver] [kube-controller-manager] ...
# Env: LVSTAMP_KUBE_CACHE overrides the cache root; LVSTAMP_KUBE_VERSION the version key.
# Needs root for apt-get (CI and the development machines run as root).
set -euo pipefail
ROOT=${LVSTAMP_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lvstamp-kube}
APT=(apt-get -o DPkg::Lock::Timeout=600)

source_version() {
  if [ -n "${LVSTAMP_KUBE_VERSION:-}" ]; then echo "$LVSTAMP_KUBE_VERSION"; return; fi
  local v
  v=$(apt-cache showsrc kubernetes 2>/dev/null | awk '/^Version:/{print $2; exit}')
  # Without deb-src, the binary package built from the same source carries the same version.
  [ -n "$v" ] || v=$(apt-cache policy kubernetes-client 2>/dev/null | awk '/Candidate:/{print $2; exit}')
  [ -n "$v" ] && [ "$v" != "(none)" ] || { echo "build-kube-1.20.sh: cannot find Debian's kubernetes source version" >&2; exit 1; }
  echo "$v"
}

VERSION=$(source_version)
KAPI=$ROOT/$VERSION
BIN=$KAPI/bin
CMDS=("${@:-kube-apiserver}")

missing=0
for cmd in "${CMDS[@]}"; do [ -x "$BIN/$cmd" ] || missing=1; done
if [ $missing = 0 ] && command -v etcd >/dev/null; then
  echo "== cached: $BIN (${CMDS[*]})" >&2
  echo "$KAPI"
  exit 0
fi

mkdir -p "$KAPI" "$BIN"
SRC=$(ls -d "$KAPI"/kubernetes-*/ 2>/dev/null | head -1 || true)
if ! command -v go >/dev/null || ! command -v etcd >/dev/null || [ ! -d /usr/share/gocode/src/github.com/modern-go/reflect2 ] || [ -z "$SRC" ]; then
  if ! apt-cache showsrc kubernetes 2>/dev/null | grep -q '^Package: kubernetes'; then
    # Enable deb-src for exactly the archives the machine already uses for binary packages.
    for f in /etc/apt/sources.list.d/*.sources; do
      [ -f "$f" ] || continue
      case "$f" in */lvstamp-debsrc.sources) continue ;; esac
      sed -n '/^Types: deb$/,/^$/p' "$f" | sed 's/^Types: deb$/Types: deb-src/'
      echo
    done > /etc/apt/sources.list.d/lvstamp-debsrc.sources
    "${APT[@]}" update
  fi
  "${APT[@]}" install -y dpkg-dev golang-go etcd-server etcd-client golang-github-modern-go-reflect2-dev
fi
if [ -z "$SRC" ]; then
  (cd "$KAPI" && apt-get source "kubernetes=$VERSION")
  SRC=$(ls -d "$KAPI"/kubernetes-*/ | head -1)
fi
SRC=${SRC%/}

# k8s 1.20 builds in GOPATH mode (hack/lib/init.sh sets GO111MODULE=off); module mode with
# go1.19 fails with "go: updates to go.mod needed, disabled by -mod=vendor".
export GO111MODULE=off GOFLAGS= GOPROXY=off CGO_ENABLED=0
export GOPATH=$KAPI/gopath GOCACHE=${GOCACHE:-$KAPI/gocache}
mkdir -p "$GOPATH/src/k8s.io"
[ -L "$GOPATH/src/k8s.io/kubernetes" ] || ln -s "$SRC" "$GOPATH/src/k8s.io/kubernetes"
V=v1.20.2
LD="-s -w"
for p in k8s.io/kubernetes/vendor/k8s.io/component-base/version k8s.io/kubernetes/vendor/k8s.io/client-go/pkg/version; do
  LD="$LD -X $p.gitVersion=$V -X $p.gitMajor=1 -X $p.gitMinor=20 -X $p.gitTreeState=clean -X $p.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
done
cd "$GOPATH/src/k8s.io/kubernetes"

# Vendored github.com/modern-go/reflect2 v1.0.1 crashes at runtime when built with Go >= 1.18
# ("unexpected fault address" / SIGSEGV in mapiterinit during JSON encoding of maps).
# Replace it with Debian's reflect2 1.0.2 (golang-github-modern-go-reflect2-dev).
if [ ! -f vendor/github.com/modern-go/reflect2/go_above_118.go ]; then
  R=vendor/github.com/modern-go/reflect2
  find $R -maxdepth 1 -name '*.go' -delete
  find $R -maxdepth 1 -name '*.s' -delete
  cp /usr/share/gocode/src/github.com/modern-go/reflect2/*.go /usr/share/gocode/src/github.com/modern-go/reflect2/*.s $R/
  echo "== replaced vendored reflect2 v1.0.1 with Debian's 1.0.2" >&2
fi

# The tarball lacks pkg/generated/openapi/zz_generated.openapi.go (normally made by `make` via
# Makefile.generated_files); generate it the same way with the vendored openapi-gen.
if [ ! -f pkg/generated/openapi/zz_generated.openapi.go ]; then
  start=$(date +%s)
  go build -o "$BIN/openapi-gen" ./vendor/k8s.io/kube-openapi/cmd/openapi-gen
  dirs=$(find -H . \( -not \( \( -path './_*' -o -path './.*' -o -path ./vendor \) -prune \) \) -type f -name '*.go' \
    | sed 's|^./staging/src|vendor|; s|^./||' \
    | xargs grep --color=never -l '^// *+k8s:' | xargs grep --color=never -l '+k8s:openapi-gen=' \
    | grep -v -e '^vendor/k8s.io/code-generator/' -e '^vendor/k8s.io/sample-apiserver/' \
    | xargs -n1 dirname | LC_ALL=C sort -u | sed 's|^|k8s.io/kubernetes/|' | paste -sd, -)
  "$BIN/openapi-gen" --logtostderr -i "$dirs" -p k8s.io/kubernetes/pkg/generated/openapi \
    -O zz_generated.openapi -h vendor/k8s.io/code-generator/hack/boilerplate.go.txt \
    -r "$KAPI/openapi_violations.report" >&2
  echo "== openapi generated in $(($(date +%s) - start))s" >&2
fi

for cmd in "${CMDS[@]}"; do
  [ -x "$BIN/$cmd" ] && continue
  echo "== building $cmd" >&2
  start=$(date +%s)
  go build -trimpath -ldflags "$LD" -o "$BIN/$cmd.tmp" "./cmd/$cmd"
  mv "$BIN/$cmd.tmp" "$BIN/$cmd"
  echo "== $cmd built in $(($(date +%s) - start))s" >&2
done
echo "$KAPI"
