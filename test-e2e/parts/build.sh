#!/bin/bash
# build.sh PART...: builds the parts of the real-node test tiers from their Go modules, at the
# versions in versions.env, each cached outside the repository and keyed by its version:
#
#   ${LVSTAMP_PARTS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lvstamp-parts}/<part>-<version>/
#
# and prints each part's directory on stdout, one line per part, in the order asked. A cached part
# is not looked at again (no go command runs then). GOMODCACHE and GOCACHE live under the same
# cache root (go/mod, go/build), so nothing is written to the repository or to ~/go.
#
# PART: kubernetes   kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl
#       etcd         etcd
#       containerd   containerd ctr containerd-shim-runc-v2
#       runc         runc (cgo, static, with seccomp: installs Debian's libseccomp-dev if missing)
#       external-provisioner  csi-provisioner
#       external-resizer      csi-resizer
#       csi-snapshotter       csi-snapshotter
#       snapshot-controller   snapshot-controller, crd/*.yaml (VolumeSnapshot* and VolumeGroupSnapshot* CRDs)
#       csi-sanity   csi-sanity
#       helm         helm (built only when named)
#   sidecars = external-provisioner external-resizer csi-snapshotter
#   node     = kubernetes etcd containerd runc
#   all      = node sidecars snapshot-controller csi-sanity (not helm)
#
# Every binary: -trimpath, stripped (-s -w), the program's own version stamped in through -X
# where it prints one, CGO_ENABLED=0 except runc. A part is built into a temporary directory
# beside its cache entry and renamed into place when complete, so an interrupted build leaves no
# half part; one lock (.lock-build) runs one build at a time, and a caller that waited finds the
# part built by the other. Each part directory holds BUILD-INFO (version, Go version, wall and CPU
# seconds of the build, the load average then). Go runs with GODEBUG=goindex=0 (see setup_go).
#
# Kubernetes and every other module are built through a small build module generated in the
# temporary directory: it requires the part's module at its version and carries over that
# module's replace directives, turning a replace into a local folder (Kubernetes' staging
# modules, etcd's sibling modules, the snapshotter's client module) into the published module of
# the same release (k8s.io/kubernetes v1.X.Y -> k8s.io/<staging> v0.X.Y).
#
# Env: K8S_VERSION (e.g. v1.35.4): build the kubernetes part at that version instead of
#      versions.env's (the cache key is the version, so each version has its own entry),
#      LVSTAMP_PARTS_CACHE (cache root), LVSTAMP_PARTS_QUIET=1 (no progress lines on stderr),
#      LVSTAMP_PARTS_NO_BUILD=1 (a part that is not cached is an error, exit 3: for callers that
#      must not build, such as tests inside the test VM, which has no network).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
K8S_VERSION_ASKED=${K8S_VERSION:-}
# shellcheck source=versions.env
. "$HERE/versions.env"
if [ -n "$K8S_VERSION_ASKED" ]; then
  [[ $K8S_VERSION_ASKED =~ ^v1\.[0-9]+\.[0-9]+$ ]] || {
    echo "parts: K8S_VERSION must be v1.MINOR.PATCH, got '$K8S_VERSION_ASKED'" >&2
    exit 2
  }
  K8S_VERSION=$K8S_VERSION_ASKED
fi
CACHE=${LVSTAMP_PARTS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lvstamp-parts}

say() { [ "${LVSTAMP_PARTS_QUIET:-0}" = 1 ] || echo "parts: $*" >&2; }
die() {
  echo "parts: $*" >&2
  exit 1
}

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
}

# part -> version (the cache key)
version_of() {
  case $1 in
  kubernetes) echo "$K8S_VERSION" ;;
  etcd) echo "$ETCD_VERSION" ;;
  containerd) echo "$CONTAINERD_VERSION" ;;
  runc) echo "$RUNC_VERSION" ;;
  external-provisioner) echo "$EXTERNAL_PROVISIONER_VERSION" ;;
  external-resizer) echo "$EXTERNAL_RESIZER_VERSION" ;;
  csi-snapshotter | snapshot-controller) echo "$EXTERNAL_SNAPSHOTTER_VERSION" ;;
  csi-sanity) echo "$CSI_TEST_VERSION" ;;
  helm) echo "$HELM_VERSION" ;;
  *) return 1 ;;
  esac
}

expand() {
  local p
  for p in "$@"; do
    case $p in
    sidecars) echo external-provisioner external-resizer csi-snapshotter ;;
    node) echo kubernetes etcd containerd runc ;;
    all) echo kubernetes etcd containerd runc external-provisioner external-resizer csi-snapshotter \
      snapshot-controller csi-sanity ;;
    -h | --help) usage ;;
    *) version_of "$p" >/dev/null || die "unknown part '$p' (see build.sh --help)" && echo "$p" ;;
    esac
  done
}

# ---- Go environment: only set up when something has to be built ----
GO_READY=0
setup_go() {
  [ "$GO_READY" = 1 ] && return
  command -v go >/dev/null || die "go is missing (these parts need Go 1.26; /usr/local/go/bin on PATH)"
  export GOMODCACHE=$CACHE/go/mod GOCACHE=$CACHE/go/build GOTOOLCHAIN=local
  # goindex=0: the go command does not read its index of module-cache folders from GOCACHE. That
  # index is keyed by the folder's path alone and trusted forever; one entry written while the
  # folder was missing or incomplete makes every later build look for "latest" instead (seen
  # here: helm's build picking sigs.k8s.io/kustomize/kyaml v0.21.3, which needs Go 1.27, and
  # failing in 2 s on every run). Reading the few hundred folders directly costs seconds.
  export GODEBUG=${GODEBUG:+$GODEBUG,}goindex=0
  # -mod=mod: the generated build modules get their go.sum filled from the checksum database.
  export GOFLAGS="-mod=mod -buildvcs=false"
  mkdir -p "$GOMODCACHE" "$GOCACHE"
  GO_READY=1
}

# go_mod_dir MODULE VERSION: downloads one module (not its dependencies), prints its folder.
go_mod_dir() {
  (cd / && go mod download -json "$1@$2") | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p'
}

# build_module DIR MODULE VERSION LOCAL_VERSION: writes DIR/go.mod requiring MODULE@VERSION with
# MODULE's replace directives; a replace into a folder becomes <same path>@LOCAL_VERSION.
build_module() {
  local dir=$1 mod=$2 ver=$3 local_ver=$4 src
  src=$(go_mod_dir "$mod" "$ver")
  [ -f "$src/go.mod" ] || die "$mod@$ver: module not downloaded"
  mkdir -p "$dir"
  (
    cd "$dir"
    go mod init lvstamp.test/parts/build >/dev/null 2>&1
    go mod edit -require="$mod@$ver"
    # One "-replace=old[@v]=new@v" argument per replace directive of the part's own go.mod.
    go mod edit -json "$src/go.mod" | node -e '
      const gomod = JSON.parse(require("fs").readFileSync(0, "utf8"));
      const localVersion = process.argv[1];
      for (const { Old, New } of gomod.Replace ?? []) {
        const old = Old.Version ? `${Old.Path}@${Old.Version}` : Old.Path;
        const local = !New.Version;
        console.log(`-replace=${old}=${local ? Old.Path : New.Path}@${local ? localVersion : New.Version}`);
      }' "$local_ver" | xargs -r go mod edit
  )
}

# gobuild DIR OUT LDFLAGS TAGS PACKAGE...: go build in the build module DIR; OUT is go build's -o
# (a folder when it ends in /).
gobuild() {
  local dir=$1 out=$2 ldflags=$3 tags=$4
  shift 4
  (cd "$dir" && go build -trimpath -tags "$tags" -ldflags "-s -w $ldflags" -o "$out" "$@")
}

module_time() { # RFC 3339 time of a module version, from the proxy's .info (already downloaded)
  sed -n 's/.*"Time": *"\([^"]*\)".*/\1/p' "$GOMODCACHE/cache/download/$(echo "$1" | sed 's/[A-Z]/!\L&/g')/@v/$2.info"
}

# ---- one function per part: build_<part> OUT WORK ----
build_kubernetes() {
  local out=$1 work=$2 v=$K8S_VERSION minor patch ldflags k
  minor=${v#v1.} && minor=${minor%%.*}
  patch=${v##*.}
  build_module "$work" k8s.io/kubernetes "$v" "v0.$minor.$patch"
  # What hack/lib/version.sh stamps; without it every program reports v0.0.0 and kubelet's and
  # kubectl's version skew checks against the apiserver fail.
  ldflags=
  for k in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
    ldflags+=" -X $k.gitVersion=$v -X $k.gitMajor=1 -X $k.gitMinor=$minor"
    ldflags+=" -X $k.gitTreeState=archive -X $k.buildDate=$(module_time k8s.io/kubernetes "$v")"
  done
  CGO_ENABLED=0 gobuild "$work" "$out/" "$ldflags" selinux,notest,grpcnotrace \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kubectl
}

build_etcd() {
  local out=$1 work=$2
  build_module "$work" go.etcd.io/etcd/server/v3 "$ETCD_VERSION" "$ETCD_VERSION"
  # The version itself is a constant in go.etcd.io/etcd/api/v3/version.
  CGO_ENABLED=0 gobuild "$work" "$out/etcd" "" "" go.etcd.io/etcd/server/v3
}

build_containerd() {
  local out=$1 work=$2 m=github.com/containerd/containerd/v2
  build_module "$work" $m "$CONTAINERD_VERSION" "$CONTAINERD_VERSION"
  CGO_ENABLED=0 gobuild "$work" "$out/" "-X $m/version.Version=$CONTAINERD_VERSION" "" \
    $m/cmd/containerd $m/cmd/ctr $m/cmd/containerd-shim-runc-v2
}

build_runc() {
  local out=$1 work=$2
  # runc needs cgo (libcontainer/nsenter). Seccomp filters need libseccomp: Debian's -dev package
  # brings the static library, so the binary is static like upstream's release build.
  # (libpathrs, a Rust library, is left out: runc then uses its Go path-resolution fallback.)
  if [ ! -f /usr/include/seccomp.h ]; then
    say "installing Debian's libseccomp-dev (runc's seccomp support)"
    apt-get -o DPkg::Lock::Timeout=600 install -y libseccomp-dev >&2 ||
      die "runc: libseccomp-dev could not be installed (apt-get update first?)"
  fi
  build_module "$work" github.com/opencontainers/runc "$RUNC_VERSION" "$RUNC_VERSION"
  (cd "$work" && CGO_ENABLED=1 go build -trimpath -buildmode=pie -tags "seccomp urfave_cli_no_docs netgo osusergo" \
    -ldflags "-s -w -linkmode external -extldflags -static-pie" -o "$out/runc" github.com/opencontainers/runc)
}

build_external-provisioner() {
  local out=$1 work=$2 m=github.com/kubernetes-csi/external-provisioner/v6
  build_module "$work" $m "$EXTERNAL_PROVISIONER_VERSION" "$EXTERNAL_PROVISIONER_VERSION"
  CGO_ENABLED=0 gobuild "$work" "$out/" "-X main.version=$EXTERNAL_PROVISIONER_VERSION" "" $m/cmd/csi-provisioner
}

build_external-resizer() {
  local out=$1 work=$2 m=github.com/kubernetes-csi/external-resizer/v2
  build_module "$work" $m "$EXTERNAL_RESIZER_VERSION" "$EXTERNAL_RESIZER_VERSION"
  CGO_ENABLED=0 gobuild "$work" "$out/" "-X main.version=$EXTERNAL_RESIZER_VERSION" "" $m/cmd/csi-resizer
}

build_csi-snapshotter() {
  local out=$1 work=$2 m=github.com/kubernetes-csi/external-snapshotter/v8
  build_module "$work" $m "$EXTERNAL_SNAPSHOTTER_VERSION" "$EXTERNAL_SNAPSHOTTER_VERSION"
  CGO_ENABLED=0 gobuild "$work" "$out/" "-X main.version=$EXTERNAL_SNAPSHOTTER_VERSION" "" $m/cmd/csi-snapshotter
}

build_snapshot-controller() {
  local out=$1 work=$2 m=github.com/kubernetes-csi/external-snapshotter/v8 client
  build_module "$work" $m "$EXTERNAL_SNAPSHOTTER_VERSION" "$EXTERNAL_SNAPSHOTTER_VERSION"
  CGO_ENABLED=0 gobuild "$work" "$out/" "-X main.version=$EXTERNAL_SNAPSHOTTER_VERSION" "" $m/cmd/snapshot-controller
  # The CRDs of the same release: the client module's config/crd (kustomization.yaml included).
  client=$(go_mod_dir github.com/kubernetes-csi/external-snapshotter/client/v8 "$EXTERNAL_SNAPSHOTTER_VERSION")
  mkdir -p "$out/crd"
  cp "$client"/config/crd/*.yaml "$out/crd/"
  chmod 644 "$out"/crd/*.yaml
}

build_csi-sanity() {
  local out=$1 work=$2 m=github.com/kubernetes-csi/csi-test/v5
  build_module "$work" $m "$CSI_TEST_VERSION" "$CSI_TEST_VERSION"
  CGO_ENABLED=0 gobuild "$work" "$out/" "-X main.VERSION=$CSI_TEST_VERSION" "" $m/cmd/csi-sanity
}

build_helm() {
  local out=$1 work=$2 m=helm.sh/helm/v4
  build_module "$work" $m "$HELM_VERSION" "$HELM_VERSION"
  CGO_ENABLED=0 gobuild "$work" "$out/" "-X $m/internal/version.version=$HELM_VERSION" "" $m/cmd/helm
}

# CPU seconds (user + system) of this script's finished children, from /proc: a build's CPU time
# says more than its wall time on a shared machine.
children_cpu() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%d", ($16 + $17) / hz }' /proc/$$/stat; }

# ensure PART: prints the part's directory, building it first when it is not cached.
ensure() {
  local part=$1 version dir tmp start cpu lock
  version=$(version_of "$part")
  dir=$CACHE/$part-$version
  if [ ! -d "$dir" ]; then
    if [ "${LVSTAMP_PARTS_NO_BUILD:-0}" = 1 ]; then
      echo "parts: $part $version is not cached in $dir (run test-e2e/parts/build.sh $part first)" >&2
      exit 3
    fi
    mkdir -p "$CACHE"
    # One Go build at a time for this cache (one lock for every part): each one keeps every core
    # busy already, and a build after another reuses the packages it compiled at the same
    # versions from GOCACHE (helm after kubernetes: the k8s.io libraries at v0.37.2), which two
    # builds at once cannot.
    exec {lock}>"$CACHE/.lock-build"
    flock "$lock"
    if [ ! -d "$dir" ]; then # not built by another caller while we waited
      setup_go
      tmp=$CACHE/.tmp-$part-$version-$$
      rm -rf "$tmp" && mkdir -p "$tmp/out"
      say "building $part $version ($(go env GOVERSION))"
      start=$(date +%s) cpu=$(children_cpu)
      "build_$part" "$tmp/out" "$tmp/work" >&2 || {
        rm -rf "$tmp"
        die "building $part $version failed"
      }
      printf 'part=%s\nversion=%s\ngo=%s\nseconds=%s\ncpu_seconds=%s\nloadavg=%s\nbuilt=%s\n' \
        "$part" "$version" "$(go env GOVERSION)" "$(($(date +%s) - start))" \
        "$(($(children_cpu) - cpu))" "$(cut -d' ' -f1-3 /proc/loadavg)" "$(date -u +%FT%TZ)" >"$tmp/out/BUILD-INFO"
      mv -T "$tmp/out" "$dir"
      rm -rf "$tmp"
      say "built $part $version in $(($(date +%s) - start)) s ($(sed -n 's/^cpu_seconds=//p' "$dir/BUILD-INFO") s CPU): $dir"
    fi
    exec {lock}>&-
  fi
  echo "$dir"
}

[ $# -gt 0 ] || usage
parts=$(expand "$@")
for part in $parts; do
  ensure "$part"
done
