#!/bin/bash
# build.sh PART...: builds the parts of the real-node test tiers from their Go modules, at the
# versions in versions.env, each cached outside the repository and keyed by its version:
#
#   ${LVSTAMP_PARTS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lvstamp-parts}/<part>-<version>/
#   (the k8s.io client parts: <part>-<version>-k8s-<Kubernetes pin>-<hash>/, see below)
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
#       lvmd         TopoLVM's lvmd, lvmd.proto (built only when named: the bench's peer group)
#   sidecars = external-provisioner external-resizer csi-snapshotter
#   node     = kubernetes etcd containerd runc
#   all      = node sidecars snapshot-controller csi-sanity (not helm, not lvmd)
#
# Every binary: -trimpath, stripped (-s -w), the program's own version stamped in through -X
# where it prints one, CGO_ENABLED=0 except runc. A part is built into a temporary directory
# beside its cache entry and renamed into place when complete, so an interrupted build leaves no
# half part; one lock (.lock-build) runs one build at a time, and a caller that waited finds the
# part built by the other. Each part directory holds BUILD-INFO (version, Go version, wall and CPU
# seconds of the build, the load average then; for the client parts, the shared module's
# requirements). Go runs with GODEBUG=goindex=0 (see setup_go).
#
# Kubernetes and every other module are built through a small build module generated in the
# temporary directory: it requires the part's module at its version and carries over that
# module's replace directives, turning a replace into a local folder (Kubernetes' staging
# modules, etcd's sibling modules, the snapshotter's client module) into the published module of
# the same release (k8s.io/kubernetes v1.X.Y -> k8s.io/<staging> v0.X.Y).
#
# The k8s.io client parts (CLIENT_PARTS: external-provisioner, external-resizer, csi-snapshotter,
# snapshot-controller, helm) share ONE build module instead, aligned to the Kubernetes pin: it
# requires each of their modules at its pin and k8s.io/kubernetes at versions.env's K8S_VERSION,
# with Kubernetes' replace directives (every k8s.io/<staging> module at v0.X.Y) taking the place
# of the parts' own k8s.io replaces. Each program is its pinned tag's code; only its dependencies
# move, to the newest version any of the parts (or Kubernetes) requires (minimal version
# selection), so all five use the same k8s.io/api, client-go, apimachinery, grpc, ... and Go
# compiles those packages once for the five instead of once per part. Their cache directories
# are <part>-<version>-k8s-<Kubernetes pin>-<hash of the shared module's requirements>, so a
# changed pin of any of them builds all of them anew; K8S_VERSION from the environment does not
# move them (they stay aligned to the pin).
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
K8S_PIN=$K8S_VERSION # what the client parts are aligned to, whatever K8S_VERSION asks for
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
  lvmd) echo "$TOPOLVM_VERSION" ;;
  *) return 1 ;;
  esac
}

# The parts built in the shared build module aligned to Kubernetes (see the header).
CLIENT_PARTS="external-provisioner external-resizer csi-snapshotter snapshot-controller helm"
is_client_part() { [[ " $CLIENT_PARTS " == *" $1 "* ]]; }

# client_requirements: module@version per line, the shared build module's requirements.
client_requirements() {
  echo "k8s.io/kubernetes@$K8S_PIN"
  echo "github.com/kubernetes-csi/external-provisioner/v6@$EXTERNAL_PROVISIONER_VERSION"
  echo "github.com/kubernetes-csi/external-resizer/v2@$EXTERNAL_RESIZER_VERSION"
  echo "github.com/kubernetes-csi/external-snapshotter/v8@$EXTERNAL_SNAPSHOTTER_VERSION"
  echo "helm.sh/helm/v4@$HELM_VERSION"
}

# part -> the name of its cache directory
key_of() {
  local version
  version=$(version_of "$1")
  if is_client_part "$1"; then
    echo "$1-$version-k8s-$K8S_PIN-$(client_requirements | sha256sum | cut -c1-8)"
  else
    echo "$1-$version"
  fi
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

# replace_args GOMOD LOCAL_VERSION [GOMOD LOCAL_VERSION]...: one "-replace=old[@v]=new@v" argument
# for go mod edit per replace directive of these go.mod files; a replace into a folder becomes
# <same path>@LOCAL_VERSION of its file. The first file to replace a path wins (the shared build
# module lists Kubernetes' first); two later files replacing it differently is an error.
replace_args() {
  local gomods=() i
  for ((i = 1; i <= $#; i += 2)); do gomods+=("$(go mod edit -json "${!i}")" "${@:i+1:1}"); done
  node -e '
    const args = process.argv.slice(1), chosen = new Map();
    for (let i = 0; i < args.length; i += 2) {
      for (const { Old, New } of JSON.parse(args[i]).Replace ?? []) {
        const old = Old.Version ? `${Old.Path}@${Old.Version}` : Old.Path;
        const to = New.Version ? `${New.Path}@${New.Version}` : `${Old.Path}@${args[i + 1]}`;
        const [first, by] = chosen.get(old) ?? [to, i];
        if (first !== to && by !== 0) throw new Error(`replace ${old}: ${first} and ${to}`);
        if (!chosen.has(old)) chosen.set(old, [to, i]);
      }
    }
    for (const [old, [to]] of chosen) console.log(`-replace=${old}=${to}`);' "${gomods[@]}"
}

# module_gomod MODULE VERSION: the go.mod of a downloaded module
module_gomod() {
  local src
  src=$(go_mod_dir "$1" "$2")
  [ -f "$src/go.mod" ] || die "$1@$2: module not downloaded"
  echo "$src/go.mod"
}

# build_module DIR MODULE@VERSION LOCAL_VERSION [MODULE@VERSION LOCAL_VERSION]...: writes DIR/go.mod
# requiring each MODULE@VERSION with the replace directives of their go.mod files (replace_args:
# the first module's win); a replace into a folder becomes <same path>@the LOCAL_VERSION given
# with its module.
build_module() {
  local dir=$1 i req gomods=() requires=() args
  shift
  for ((i = 1; i <= $#; i += 2)); do
    req=${!i}
    gomods+=("$(module_gomod "${req%@*}" "${req#*@}")" "${@:i+1:1}")
    requires+=("-require=$req")
  done
  args=$(replace_args "${gomods[@]}") || die "the replace directives of $* disagree"
  mkdir -p "$dir"
  (
    cd "$dir"
    go mod init lvstamp.test/parts/build >/dev/null 2>&1
    # shellcheck disable=SC2086 # one argument per replace directive
    go mod edit "${requires[@]}" $args
  )
}

# staging_version v1.X.Y: v0.X.Y, the version of Kubernetes' k8s.io/<staging> modules
staging_version() { local minor=${1#v1.}; echo "v0.${minor%%.*}.${1##*.}"; }

# client_module DIR: writes DIR/go.mod, the shared build module of the client parts: it requires
# client_requirements, with Kubernetes' replace directives first (its staging modules at
# staging_version), then each part's own (the snapshotter's client module at its release).
client_module() {
  local dir=$1 req local_version pairs=()
  for req in $(client_requirements); do
    local_version=${req#*@}
    [ "${req%@*}" != k8s.io/kubernetes ] || local_version=$(staging_version "$local_version")
    pairs+=("$req" "$local_version")
  done
  build_module "$dir" "${pairs[@]}"
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
  local out=$1 work=$2 v=$K8S_VERSION minor ldflags k
  minor=${v#v1.} && minor=${minor%%.*}
  build_module "$work" "k8s.io/kubernetes@$v" "$(staging_version "$v")"
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
  build_module "$work" "go.etcd.io/etcd/server/v3@$ETCD_VERSION" "$ETCD_VERSION"
  # The version itself is a constant in go.etcd.io/etcd/api/v3/version.
  CGO_ENABLED=0 gobuild "$work" "$out/etcd" "" "" go.etcd.io/etcd/server/v3
}

build_containerd() {
  local out=$1 work=$2 m=github.com/containerd/containerd/v2
  build_module "$work" "$m@$CONTAINERD_VERSION" "$CONTAINERD_VERSION"
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
  build_module "$work" "github.com/opencontainers/runc@$RUNC_VERSION" "$RUNC_VERSION"
  (cd "$work" && CGO_ENABLED=1 go build -trimpath -buildmode=pie -tags "seccomp urfave_cli_no_docs netgo osusergo" \
    -ldflags "-s -w -linkmode external -extldflags -static-pie" -o "$out/runc" github.com/opencontainers/runc)
}

build_external-provisioner() {
  local out=$1 work=$2 m=github.com/kubernetes-csi/external-provisioner/v6
  client_module "$work"
  CGO_ENABLED=0 gobuild "$work" "$out/" "-X main.version=$EXTERNAL_PROVISIONER_VERSION" "" $m/cmd/csi-provisioner
}

build_external-resizer() {
  local out=$1 work=$2 m=github.com/kubernetes-csi/external-resizer/v2
  client_module "$work"
  CGO_ENABLED=0 gobuild "$work" "$out/" "-X main.version=$EXTERNAL_RESIZER_VERSION" "" $m/cmd/csi-resizer
}

build_csi-snapshotter() {
  local out=$1 work=$2 m=github.com/kubernetes-csi/external-snapshotter/v8
  client_module "$work"
  CGO_ENABLED=0 gobuild "$work" "$out/" "-X main.version=$EXTERNAL_SNAPSHOTTER_VERSION" "" $m/cmd/csi-snapshotter
}

build_snapshot-controller() {
  local out=$1 work=$2 m=github.com/kubernetes-csi/external-snapshotter/v8 client
  client_module "$work"
  CGO_ENABLED=0 gobuild "$work" "$out/" "-X main.version=$EXTERNAL_SNAPSHOTTER_VERSION" "" $m/cmd/snapshot-controller
  # The CRDs of the same release: the client module's config/crd (kustomization.yaml included).
  client=$(go_mod_dir github.com/kubernetes-csi/external-snapshotter/client/v8 "$EXTERNAL_SNAPSHOTTER_VERSION")
  mkdir -p "$out/crd"
  cp "$client"/config/crd/*.yaml "$out/crd/"
  chmod 644 "$out"/crd/*.yaml
}

build_csi-sanity() {
  local out=$1 work=$2 m=github.com/kubernetes-csi/csi-test/v5
  build_module "$work" "$m@$CSI_TEST_VERSION" "$CSI_TEST_VERSION"
  CGO_ENABLED=0 gobuild "$work" "$out/" "-X main.VERSION=$CSI_TEST_VERSION" "" $m/cmd/csi-sanity
}

build_helm() {
  local out=$1 work=$2 m=helm.sh/helm/v4
  client_module "$work"
  CGO_ENABLED=0 gobuild "$work" "$out/" "-X $m/internal/version.version=$HELM_VERSION" "" $m/cmd/helm
}

build_lvmd() {
  local out=$1 work=$2 m=github.com/topolvm/topolvm src
  build_module "$work" "$m@$TOPOLVM_VERSION" "$TOPOLVM_VERSION"
  CGO_ENABLED=0 gobuild "$work" "$out/" "-X $m.Version=$TOPOLVM_VERSION" "" $m/cmd/lvmd
  # The gRPC API the bench drives lvmd over, from the same module version.
  src=$(go_mod_dir "$m" "$TOPOLVM_VERSION")
  cp "$src/pkg/lvmd/proto/lvmd.proto" "$out/lvmd.proto"
  chmod 644 "$out/lvmd.proto"
}

# CPU seconds (user + system) of this script's finished children, from /proc: a build's CPU time
# says more than its wall time on a shared machine.
children_cpu() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%d", ($16 + $17) / hz }' /proc/$$/stat; }

# ensure PART: prints the part's directory, building it first when it is not cached.
ensure() {
  local part=$1 version dir tmp start cpu lock
  version=$(version_of "$part")
  dir=$CACHE/$(key_of "$part")
  if [ ! -d "$dir" ]; then
    if [ "${LVSTAMP_PARTS_NO_BUILD:-0}" = 1 ]; then
      echo "parts: $part $version is not cached in $dir (run test-e2e/parts/build.sh $part first)" >&2
      exit 3
    fi
    mkdir -p "$CACHE"
    # One Go build at a time for this cache (one lock for every part): each one keeps every core
    # busy already, and a build after another reuses the packages it compiled at the same
    # versions from GOCACHE (every client part after the first: the k8s.io libraries, grpc, ...),
    # which two builds at once cannot.
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
      ! is_client_part "$part" || printf 'aligned_to=k8s.io/kubernetes@%s\nshared_module=%s\n' "$K8S_PIN" \
        "$(client_requirements | tr '\n' ' ' | sed 's/ $//')" >>"$tmp/out/BUILD-INFO"
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
