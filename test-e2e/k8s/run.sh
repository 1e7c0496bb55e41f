#!/bin/bash
# run.sh: the Kubernetes tier. Builds (or takes from the caches outside the repository) every
# part: Kubernetes 1.20.2 from Debian's source package (build-kube-1.20.sh), the
# kubelet with the CSI :authority fix (build-kubelet.sh), the CSI sidecars (build-sidecars.sh), the
# images (build-images.sh: the driver image from apps/csi-driver/Dockerfile, pause, busybox, one
# per sidecar); then boots the test VM once and runs vm/node-test.sh there: a one-node cluster,
# `kubectl apply -k` of an overlay over deploy/kubernetes (README "Deploying on a cluster"), the
# scenarios. Ends with "N passed, N failed"; exit code 0 only when all passed.
# Env: LVSTAMP_SHARED (../shared beside the clone: the sidecars' source tarballs),
#      LVSTAMP_K8S_CACHE, VM_MEM (6G), VM_TIMEOUT (3600 s: the tier shares the machine with csi-sanity in `pnpm test`), K8S_ONLY (scenario functions to run, for
#      debugging: the rest are skipped and the run fails; test-e2e/k8s/README.md).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
cd "$REPO"
T0=$SECONDS
timed() { local s=$SECONDS; "$@"; local rc=$?; step "$1 ${2:-}: $((SECONDS - s)) s"; return $rc; }

# the tier's Debian packages (etcd and Go come with build-kube-1.20.sh)
declare -A PKG=([buildah]=buildah [debootstrap]=debootstrap [containerd]=containerd [ctr]=containerd
  [runc]=runc [iptables]=iptables [gcc]=gcc [patch]=patch [openssl]=openssl [jq]=jq [mkfs.ext4]=e2fsprogs
  [numfmt]=coreutils [qemu-system-x86_64]=qemu-system-x86)
missing=()
for t in "${!PKG[@]}"; do
  command -v $t >/dev/null || PATH=$PATH:/usr/sbin:/sbin command -v $t >/dev/null || missing+=("${PKG[$t]}")
done
[ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
[ -f /usr/include/stdio.h ] || missing+=(libc6-dev)
if [ ${#missing[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || die "missing Debian packages (as root: apt-get install ${missing[*]})"
  step "apt-get install ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 ||
    die "apt-get install ${missing[*]} failed"
fi
# kustomize components (deploy/kubernetes/components) need kubectl >= 1.21 (its kustomize >= v4)
kv=$(kubectl version --client -o json 2>/dev/null | jq -r '.clientVersion.minor' | tr -dc 0-9)
[ -n "$kv" ] && [ "$kv" -ge 21 ] || die "kubectl >= 1.21 is needed (kustomize components); found: $(kubectl version --client 2>&1 | head -1)"
[ -f apps/csi-driver/dist/lvstamp-csi.mjs ] || die "build first (pnpm build)"

KAPI=$(timed bash "$HERE/build-kube-1.20.sh" kube-apiserver kube-controller-manager kube-scheduler kubelet | tail -1)
[ -x "$KAPI/bin/kube-apiserver" ] || die "Kubernetes binaries missing after build-kube-1.20.sh"
KUBELET=$(timed bash "$HERE/build-kubelet.sh" "$KAPI" | tail -1)
[ -x "$KUBELET" ] || die "patched kubelet missing"
ARCHIVES=$(timed bash "$HERE/build-images.sh" base pause busybox sidecars driver gc) || die "image build failed"
ALL_IMAGES=$(echo "$ARCHIVES" | awk '$1 != "base" {print $2}' | tr '\n' ' ')

# PKI for the test cluster (local-test only: self-signed CA, static admin token)
PKI=$K8S_CACHE/pki
if [ ! -f $PKI/sa.pub ]; then
  rm -rf $PKI.tmp && mkdir -p $PKI.tmp && (
    cd $PKI.tmp
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=lvstamp-k8s-ca" -keyout ca.key -out ca.crt 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" -keyout apiserver.key -out apiserver.csr 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,IP:10.99.0.1,IP:10.0.0.1,DNS:localhost,DNS:vm,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n' >ext.cnf
    openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 -extfile ext.cnf -out apiserver.crt 2>/dev/null
    openssl genrsa -out sa.key 2048 2>/dev/null && openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  ) && mv $PKI.tmp $PKI || die "PKI generation failed"
fi
echo "lvstamp-k8s-admin-token,admin,admin-uid,system:masters" >$PKI/tokens.csv

# The user's overlays (README "Deploying on a cluster"): image names and the owner ID, and the
# components for a slow node, for snapshots (README "Snapshots") and for a cluster before 1.21
# (CronJob as batch/v1beta1)
RUN=$(mktemp -d "$K8S_CACHE/run.XXXXXX")
trap 'rm -rf "$RUN"' EXIT
OVERLAY=$RUN/overlay GC_OVERLAY=$RUN/overlay-gc; mkdir -p $OVERLAY $GC_OVERLAY
OWNER=$(openssl rand -hex 16)
# the driver's config as shipped with its example thin class uncommented (README "Snapshots"),
# its pool created by the first thin CreateVolume with thinPoolSize 1 GiB of the 8 GiB test VG
DRIVER_CONFIG=$(awk '/^  config.yaml: \|/ {on = 1; next} on && /^  [^ ]/ {on = 0} on' deploy/kubernetes/configmap-driver.yaml |
  sed -e 's/^    //' -e 's/^\( *\)# \(thin: {.*type: thin.*}\)$/\1\2/' -e '/^ *#/d' -e 's/thinPoolSize: [0-9]*/thinPoolSize: 1073741824/')
echo "$DRIVER_CONFIG" | grep -q '^  thin: {.*type: thin, thinPool: pool0, thinPoolSize: 1073741824' ||
  die "no thin class to uncomment in deploy/kubernetes/configmap-driver.yaml: $DRIVER_CONFIG"
rel() { realpath --relative-to="$1" "$2"; }
{
  echo "resources: [$(rel $OVERLAY deploy/kubernetes)]"
  echo "components: [$(rel $OVERLAY deploy/kubernetes/components/slow-nodes), $(rel $OVERLAY deploy/kubernetes/components/snapshots)]"
  echo "images:"
  echo "  - { name: ghcr.io/lvstamp/lvstamp-csi, newName: ${DRIVER_IMAGE%:*}, newTag: ${DRIVER_IMAGE##*:} }"
  for s in csi-provisioner csi-node-driver-registrar csi-resizer livenessprobe csi-snapshotter; do
    t=$(sidecar_tag $s); echo "  - { name: registry.k8s.io/sig-storage/$s, newName: ${t%:*}, newTag: ${t##*:} }"
  done
  echo "patches:"
  echo "  - target: { kind: ConfigMap, name: lvstamp-csi-config }"
  echo "    patch: |"
  echo "      - { op: replace, path: /data/owner-id, value: '$OWNER' }"
  echo "      - op: replace"
  echo "        path: /data/config.yaml"
  echo "        value: |"
  echo "$DRIVER_CONFIG" | sed 's/^/          /'
  # not a user setting: the stand-in external-provisioner v2.1.2 reads its namespace from
  # POD_NAMESPACE (v2.2 and later, as shipped: NAMESPACE) for the CSIStorageCapacity owner
  echo "  - target: { kind: DaemonSet, name: lvstamp-csi-node }"
  echo "    patch: '[{\"op\": \"test\", \"path\": \"/spec/template/spec/containers/2/name\", \"value\": \"csi-provisioner\"}, {\"op\": \"add\", \"path\": \"/spec/template/spec/containers/2/env/-\", \"value\": {\"name\": \"POD_NAMESPACE\", \"valueFrom\": {\"fieldRef\": {\"fieldPath\": \"metadata.namespace\"}}}}]'"
} >$OVERLAY/kustomization.yaml
# the GC: its image (also named in LVSTAMP_GC_IMAGE, for the per-node Jobs) and a grace period of
# 5 s instead of 1 h, so the test's leaked volume is old enough at once
cat >$GC_OVERLAY/kustomization.yaml <<YAML
resources: [$(rel $GC_OVERLAY deploy/kubernetes/gc)]
components: [$(rel $GC_OVERLAY deploy/kubernetes/components/cronjob-batch-v1beta1)]
images:
  - { name: ghcr.io/lvstamp/lvstamp, newName: ${GC_IMAGE%:*}, newTag: ${GC_IMAGE##*:} }
patches:
  - target: { kind: CronJob, name: lvstamp-gc }
    patch: |
      kind: CronJob
      metadata: { name: lvstamp-gc }
      spec:
        jobTemplate:
          spec:
            template:
              spec:
                containers:
                  - name: gc
                    env:
                      - { name: LVSTAMP_GC_IMAGE, value: $GC_IMAGE }
                      - { name: LVSTAMP_GC_MIN_AGE, value: 5s }
                      - { name: LVSTAMP_GC_QUARANTINE, value: '0' }
YAML
# The cluster's snapshot support (README "Snapshots"), installed before the driver: the
# snapshot.storage.k8s.io/v1 CRDs and the common snapshot-controller of external-snapshotter
# v5.0.1, from its source tarball (client/config/crd, deploy/kubernetes/snapshot-controller), with
# what README adds: --enable-distributed-snapshotting and get/list/watch on nodes. Test-only: one
# replica instead of two (one node) and the locally built image.
SNAP_OVERLAY=$RUN/overlay-snapshots; mkdir -p $SNAP_OVERLAY
ES=external-snapshotter-v5.0.1
[ -f "$SHARED/k8s-sidecars/$ES.tar.xz" ] || die "$SHARED/k8s-sidecars/$ES.tar.xz is missing (CRDs, snapshot-controller manifests)"
tar -xJf "$SHARED/k8s-sidecars/$ES.tar.xz" -C $RUN $ES/client/config/crd $ES/deploy/kubernetes/snapshot-controller ||
  die "cannot extract the CRDs and snapshot-controller manifests from $ES.tar.xz"
t=$(sidecar_tag snapshot-controller)
cat >$SNAP_OVERLAY/kustomization.yaml <<YAML
resources: [../$ES/client/config/crd, ../$ES/deploy/kubernetes/snapshot-controller]
images:
  - { name: gcr.io/k8s-staging-sig-storage/snapshot-controller, newName: ${t%:*}, newTag: ${t##*:} }
patches:
  - target: { kind: Deployment, name: snapshot-controller }
    patch: |
      - { op: replace, path: /spec/replicas, value: 1 }
      - { op: test, path: /spec/template/spec/containers/0/name, value: snapshot-controller }
      - { op: add, path: /spec/template/spec/containers/0/args/-, value: --enable-distributed-snapshotting }
  - target: { kind: ClusterRole, name: snapshot-controller-runner }
    patch: |
      - { op: add, path: /rules/-, value: { apiGroups: [''], resources: [nodes], verbs: [get, list, watch] } }
YAML
for o in $SNAP_OVERLAY $OVERLAY $GC_OVERLAY; do
  kubectl kustomize $o >$o.yaml || die "kustomize of $o failed"
done
grep -q -- '--enable-distributed-snapshotting' $SNAP_OVERLAY.yaml || die "the snapshot overlay does not enable distributed snapshotting"
grep -q 'apiVersion: batch/v1beta1' $GC_OVERLAY.yaml || die "the GC overlay does not render a batch/v1beta1 CronJob"

LOGS=$REPO/test-e2e/results/k8s
rm -rf "$LOGS" && mkdir -p "$LOGS"

# The node's image store (vm/store.sh): a containerd store on a disk image, made once in its own VM
# boot and keyed by the images that rarely change (base, pause, busybox, sidecars) and containerd's
# version; each test run attaches it with its writes discarded and imports only the blobs it lacks
# (a changed driver or gc image: its top layers), instead of every image over 9p.
blobs_of() { tar -tf "$1" | sed -n 's|^blobs/sha256/||p' | grep .; }
STORE_KEY=$({
  echo store-v1; containerd --version | awk '{print $3}'
  for a in $(echo "$ARCHIVES" | awk '$1 ~ /^(base|pause|busybox|csi-|livenessprobe|snapshot-controller)/ {print $2}'); do tar -xOf "$a" index.json; done
} | sha256sum | cut -c1-16)
STORE=$K8S_CACHE/store/containerd-$STORE_KEY.raw
# thin HAVE ARCHIVE...: prints the archives to import, each without the blobs listed in the file
# HAVE or in an archive before it (copies under $RUN; none for an archive with nothing new)
thin() {
  local have=$RUN/have.blobs a t missing drop
  cp "$1" "$have"; shift
  for a in "$@"; do
    missing=$(blobs_of "$a" | grep -vxFf "$have")
    [ -z "$missing" ] && continue
    t=$RUN/thin-$(basename "$a")
    drop=$(blobs_of "$a" | grep -xFf "$have" | sed 's|^|blobs/sha256/|')
    if [ -z "$drop" ]; then t=$a; else cp "$a" "$t" && tar --delete -f "$t" $drop || die "cannot thin $a"; fi
    echo "$missing" >>"$have"
    echo "$t"
  done
}
if [ ! -s "$STORE" ] || [ ! -s "$STORE.blobs" ]; then
  s=$SECONDS
  mkdir -p "$K8S_CACHE/store" && rm -f "$K8S_CACHE"/store/containerd-* && truncate -s 6G "$STORE.tmp" || die "cannot make $STORE.tmp"
  : >$RUN/none.blobs
  IMAGES=$(thin $RUN/none.blobs $ALL_IMAGES | tr '\n' ' ') STORE_DISK=/dev/vda
  step "making the image store $STORE (one VM boot; imports $(du -chL $IMAGES | tail -1 | cut -f1))"
  export IMAGES LOGS STORE_DISK
  VM_ENV="IMAGES LOGS STORE_DISK" VM_IMAGES="rw:$STORE.tmp" VM_RW="$LOGS" VM_MEM=2G VM_TIMEOUT=${VM_TIMEOUT:-3600} \
    bash test-e2e/vm/run-in-vm.sh "bash test-e2e/k8s/vm/store.sh" 2>&1 | tee "$LOGS/store.log"
  [ "${PIPESTATUS[0]}" = 0 ] || { rm -f "$STORE.tmp"; die "making the image store failed (log: $LOGS/store.log)"; }
  for a in $ALL_IMAGES; do blobs_of "$a"; done | sort -u >"$STORE.blobs.tmp" && mv "$STORE.tmp" "$STORE" &&
    mv "$STORE.blobs.tmp" "$STORE.blobs" || die "cannot keep $STORE"
  step "image store made: $((SECONDS - s)) s"
fi
IMAGES=$(thin "$STORE.blobs" $ALL_IMAGES | tr '\n' ' ')
step "images to import on top of the store:${IMAGES:- none}"
KBIN=$KAPI/bin DISK=/dev/vda STORE_DISK=/dev/vdb
export REPO KBIN KUBELET PKI IMAGES LOGS SNAP_OVERLAY OVERLAY GC_OVERLAY DISK STORE_DISK
step "booting the test VM (logs: $LOGS)"
s=$SECONDS
VM_RW="$LOGS" VM_ENV="REPO KBIN KUBELET PKI IMAGES LOGS SNAP_OVERLAY OVERLAY GC_OVERLAY DISK STORE_DISK K8S_ONLY" VM_DISKS=8G VM_IMAGES="$STORE" VM_MEM=${VM_MEM:-6G} \
  VM_TIMEOUT=${VM_TIMEOUT:-3600} bash test-e2e/vm/run-in-vm.sh "bash test-e2e/k8s/vm/node-test.sh" 2>&1 | tee "$LOGS/run.log"
rc=${PIPESTATUS[0]}
step "VM: $((SECONDS - s)) s; whole tier $((SECONDS - T0)) s; exit $rc"
tail -n 1 "$LOGS/run.log" | grep -qE '^[0-9]+ passed, [0-9]+ failed$' || echo "0 passed, 1 failed"
exit $rc
