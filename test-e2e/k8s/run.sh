#!/bin/bash
# run.sh: the Kubernetes tier. Takes every part from test-e2e/parts/build.sh (built from Go
# modules at the versions of test-e2e/parts/versions.env and cached outside the repository:
# Kubernetes, etcd, containerd, runc, the CSI sidecars, the snapshot-controller and its CRDs) and
# the images (build-images.sh: the driver image from apps/csi-driver/Dockerfile, pause, busybox,
# one per sidecar under the shipped manifests' names); then, in a network namespace of its own,
# starts the control plane natively (control-plane.sh) and boots the test VM once on a tap device
# there, and runs vm/node-test.sh in the VM: the node (containerd, kubelet), `kubectl apply -k` of
# an overlay over deploy/kubernetes (README "Deploying on a cluster"), the scenarios. The
# namespace and everything in it are removed at the end, also on failure or a signal. Ends with "N passed, N failed"; exit code 0
# only when all passed.
# Env: K8S_VERSION (e.g. v1.35.4: run that Kubernetes instead of versions.env's; built and cached
#      by test-e2e/parts/build.sh), LVSTAMP_K8S_CACHE, VM_MEM (6G), VM_TIMEOUT (5000 s: a guard
#      against a hung VM only, the scenarios' own waits follow the speed calibrated at the start;
#      in `pnpm test` the tier shares the 2 cores with the other lane's VM, and on 2026-12-04 it
#      was still running there at the old bound of 3,600 s),
#      K8S_ONLY (scenario functions to run, for debugging: the rest are skipped and the run
#      fails; test-e2e/k8s/README.md), K8S_INSTALL (kustomize, the default: `kubectl apply -k` of
#      the overlays; helm: `helm install` of deploy/helm/lvstamp with the same settings as values,
#      plus the helm scenarios: upgrade under a running pod, uninstall; docs/install.md),
#      K8S_PREPARE=1 (only what needs no build of this repository, then exit: the parts, the base,
#      pause, busybox and sidecar images, and the node's image store; scripts/test.sh runs it in
#      the background from its start, so that a cold machine builds them beside the unit tests and
#      the e2e suite).
set -uo pipefail
K8S_INSTALL=${K8S_INSTALL:-kustomize}
K8S_PREPARE=${K8S_PREPARE:-}
case $K8S_INSTALL in kustomize | helm) ;; *) echo "k8s: K8S_INSTALL must be kustomize or helm, not '$K8S_INSTALL'" >&2; exit 2 ;; esac
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
cd "$REPO"
T0=$SECONDS
timed() { local s=$SECONDS; "$@"; local rc=$?; step "$1 ${2:-}: $((SECONDS - s)) s"; return $rc; }
step "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

# the tier's Debian packages (everything else comes from test-e2e/parts)
declare -A PKG=([buildah]=buildah [debootstrap]=debootstrap [iptables]=iptables [gcc]=gcc [openssl]=openssl
  [jq]=jq [mkfs.ext4]=e2fsprogs [numfmt]=coreutils [qemu-system-x86_64]=qemu-system-x86)
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
# the driver's bundle goes into its image; the CLI's runs on the node (the quarantine scenario)
[ -n "$K8S_PREPARE" ] || for f in apps/csi-driver/dist/lvstamp-csi.mjs apps/cli/dist/lvstamp.mjs; do
  [ -f $f ] || die "build first (pnpm build): $f is missing"
done

# the node's parts: one directory each (test-e2e/parts/build.sh prints them in the order asked)
s=$SECONDS
DIRS=$(bash "$PARTS" kubernetes etcd containerd runc snapshot-controller external-resizer) || die "test-e2e/parts/build.sh failed"
step "parts: $((SECONDS - s)) s"
read -r KBIN ETCD_DIR CONTAINERD_DIR RUNC_DIR SNAPC_DIR RESIZER_DIR <<<"$(echo $DIRS)"
for f in $KBIN/kube-apiserver $KBIN/kubelet $KBIN/kubectl $ETCD_DIR/etcd $CONTAINERD_DIR/containerd \
  $CONTAINERD_DIR/containerd-shim-runc-v2 $RUNC_DIR/runc $SNAPC_DIR/crd/kustomization.yaml $RESIZER_DIR/csi-resizer; do
  [ -e "$f" ] || die "$f is missing after test-e2e/parts/build.sh"
done
KUBECTL=$KBIN/kubectl
K8S_RUN_VERSION=$("$KBIN/kubelet" --version | awk '{print $2}')
step "Kubernetes $K8S_RUN_VERSION, etcd $ETCD_VERSION, containerd $CONTAINERD_VERSION, runc $RUNC_VERSION;" \
  "external-provisioner $EXTERNAL_PROVISIONER_VERSION, external-resizer $EXTERNAL_RESIZER_VERSION, external-snapshotter $EXTERNAL_SNAPSHOTTER_VERSION"
# the programs the node runs, first on its PATH (the containerd shim is found there, too), and
# the csi-resizer that vm/node-test.sh runs for its second node
NODE_PATH=$KBIN:$ETCD_DIR:$CONTAINERD_DIR:$RUNC_DIR:$RESIZER_DIR
if [ "$K8S_INSTALL" = helm ]; then
  # helm runs on the host like kubectl (kubectl-relay.mjs, vm/bin/helm): on the control plane's PATH
  HELM_DIR=$(bash "$PARTS" helm) || die "test-e2e/parts/build.sh helm failed"
  [ -x "$HELM_DIR/helm" ] || die "no helm in $HELM_DIR after test-e2e/parts/build.sh helm"
  NODE_PATH=$NODE_PATH:$HELM_DIR
  step "helm $("$HELM_DIR/helm" version --short)"
fi
OURS=(driver gc)
[ -z "$K8S_PREPARE" ] || OURS=()
ARCHIVES=$(timed bash "$HERE/build-images.sh" base pause busybox sidecars "${OURS[@]}") || die "image build failed"
ALL_IMAGES=$(echo "$ARCHIVES" | awk '$1 != "base" {print $2}' | tr '\n' ' ')

# The node's image store (vm/store.sh): a containerd store on a disk image, made once in its own VM
# boot and keyed by the images that rarely change (base, pause, busybox, sidecars) and containerd's
# version; each test run attaches it with its writes discarded and imports only the blobs it lacks
# (a changed driver or gc image: its top layers), instead of every image over 9p.
blobs_of() { tar -tf "$1" | sed -n 's|^blobs/sha256/||p' | grep .; }
STORE_KEY=$({
  echo store-v2 "$CONTAINERD_VERSION"
  for a in $(echo "$ARCHIVES" | awk '$1 ~ /^(base|pause|busybox|csi-|snapshot-controller)/ {print $2}'); do tar -xOf "$a" index.json; done
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
# ensure_store: makes $STORE from $ALL_IMAGES when it is missing (logs in $LOGS)
ensure_store() {
  [ -s "$STORE" ] && [ -s "$STORE.blobs" ] && return 0
  local s=$SECONDS
  mkdir -p "$K8S_CACHE/store" && rm -f "$K8S_CACHE"/store/containerd-* && truncate -s 6G "$STORE.tmp" || die "cannot make $STORE.tmp"
  : >$RUN/none.blobs
  IMAGES=$(thin $RUN/none.blobs $ALL_IMAGES | tr '\n' ' ') STORE_DISK=/dev/vda
  step "making the image store $STORE (one VM boot; imports $(du -chL $IMAGES | tail -1 | cut -f1))"
  export IMAGES LOGS STORE_DISK NODE_PATH
  VM_ENV="IMAGES LOGS STORE_DISK NODE_PATH" VM_IMAGES="rw:$STORE.tmp" VM_RW="$LOGS" VM_MEM=2G VM_TIMEOUT=${VM_TIMEOUT:-3600} \
    bash test-e2e/vm/run-in-vm.sh "bash test-e2e/k8s/vm/store.sh" 2>&1 | tee "$LOGS/store.log"
  [ "${PIPESTATUS[0]}" = 0 ] || { rm -f "$STORE.tmp"; die "making the image store failed (log: $LOGS/store.log)"; }
  for a in $ALL_IMAGES; do blobs_of "$a"; done | sort -u >"$STORE.blobs.tmp" && mv "$STORE.tmp" "$STORE" &&
    mv "$STORE.blobs.tmp" "$STORE.blobs" || die "cannot keep $STORE"
  step "image store made: $((SECONDS - s)) s"
}
if [ -n "$K8S_PREPARE" ]; then
  RUN=$(mktemp -d "$K8S_CACHE/run.XXXXXX") LOGS=$REPO/test-e2e/results/k8s-prepare
  trap 'rm -rf "$RUN"' EXIT
  rm -rf "$LOGS" && mkdir -p "$LOGS" && ensure_store
  step "prepared: parts, images and the image store in $((SECONDS - T0)) s"
  exit 0
fi

# PKI for the test cluster (local-test only: self-signed CA, static admin token)
# (pki-host: the API server's certificate names the host side of the VM's NIC, 10.99.0.254)
PKI=$K8S_CACHE/pki-host
if [ ! -f $PKI/sa.pub ]; then
  rm -rf $PKI.tmp && mkdir -p $PKI.tmp && (
    cd $PKI.tmp
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=lvstamp-k8s-ca" -keyout ca.key -out ca.crt 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" -keyout apiserver.key -out apiserver.csr 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,IP:10.99.0.254,IP:10.0.0.1,DNS:localhost,DNS:vm,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n' >ext.cnf
    openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 -extfile ext.cnf -out apiserver.crt 2>/dev/null
    openssl genrsa -out sa.key 2048 2>/dev/null && openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  ) && mv $PKI.tmp $PKI || die "PKI generation failed"
fi
echo "lvstamp-k8s-admin-token,admin,admin-uid,system:masters" >$PKI/tokens.csv

# The user's overlays (README "Deploying on a cluster"): the driver's image name and the owner
# ID, and the components for a slow node and for snapshots (README "Snapshots"). The sidecars'
# images are the shipped names (build-images.sh tags them so).
RUN=$(mktemp -d "$K8S_CACHE/run.XXXXXX")
# The network namespace of the control plane and the VM (netns_up): a tap device whose side here is
# 10.99.0.254 (vm/cluster.sh API_IP), the VM's eth0 on it 10.99.0.1 (NODE_IP), the pod network
# routed to the VM. The host's own network is not touched.
NETNS=lvstamp-k8s-$$ TAP=lvstamp0 NETNS_DIR_MADE=
netns_up() {
  [ -e /run/netns ] || NETNS_DIR_MADE=1
  ip netns add $NETNS && ip -n $NETNS link set lo up && ip netns exec $NETNS ip tuntap add dev $TAP mode tap &&
    ip -n $NETNS addr add 10.99.0.254/24 dev $TAP && ip -n $NETNS link set $TAP up &&
    ip -n $NETNS route add 10.88.0.0/16 via 10.99.0.1 dev $TAP onlink
}
# netns_down: every process in the namespace stopped, etcd last (the API server's shutdown waits
# for it): TERM, then KILL after 20 s; the namespace deleted, and /run/netns unmounted and removed
# when this run made it
netns_down() {
  local i p pids phase
  ip netns list | grep -qw "^$NETNS" || return 0
  for phase in others all; do
    for i in $(seq 1 40); do
      pids=$(ip netns pids $NETNS)
      [ $phase = others ] && pids=$(for p in $pids; do [ "$(cat /proc/$p/comm 2>/dev/null)" = etcd ] || echo $p; done)
      [ -z "$pids" ] && break
      [ $i = 1 ] && kill $pids 2>/dev/null
      [ $i = 40 ] && { step "killing what is left in $NETNS: $pids"; kill -9 $pids 2>/dev/null; sleep 1; }
      sleep 0.5
    done
  done
  ip netns del $NETNS || step "cannot delete the network namespace $NETNS"
  if [ -n "$NETNS_DIR_MADE" ] && [ -z "$(ip netns list)" ]; then umount /run/netns 2>/dev/null; rmdir /run/netns; fi
}
VM_JOB=
trap 'netns_down; [ -n "$VM_JOB" ] && wait $VM_JOB; rm -rf "$RUN"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP
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
  echo "patches:"
  echo "  - target: { kind: ConfigMap, name: lvstamp-csi-config }"
  echo "    patch: |"
  echo "      - { op: replace, path: /data/owner-id, value: '$OWNER' }"
  echo "      - op: replace"
  echo "        path: /data/config.yaml"
  echo "        value: |"
  echo "$DRIVER_CONFIG" | sed 's/^/          /'
} >$OVERLAY/kustomization.yaml
# the GC: its image (also named in LVSTAMP_GC_IMAGE, for the per-node Jobs) and a grace period of
# 5 s instead of 1 h, so the test's leaked volume is old enough at once
cat >$GC_OVERLAY/kustomization.yaml <<YAML
resources: [$(rel $GC_OVERLAY deploy/kubernetes/gc)]
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
# snapshot.storage.k8s.io/v1 CRDs (the snapshot-controller part's crd/, client/config/crd of the
# same release) and the common snapshot-controller (deploy/kubernetes/snapshot-controller of the
# external-snapshotter module), with what README adds: --enable-distributed-snapshotting and
# get/list/watch on nodes. Test-only: one replica instead of two (one node) and the image tag of
# the release built (its manifest names the previous release's image).
# K8S_INSTALL=helm: the same settings as the overlays above, as the chart's values (docs/install.md):
# the images, the thin class, the snapshots part, the slow-nodes probe and timeouts, the GC's grace
# period and quarantine; the owner ID is the chart's own (made at install, kept on upgrade)
HELM_VALUES=$RUN/values.yaml
cat >"$HELM_VALUES" <<YAML
images:
  driver: { repository: ${DRIVER_IMAGE%:*}, tag: '${DRIVER_IMAGE##*:}' }
  gc: { repository: ${GC_IMAGE%:*}, tag: '${GC_IMAGE##*:}' }
deviceClasses:
  thin: { volumeGroup: lvstamp, type: thin, thinPool: pool0, thinPoolSize: 1073741824, overprovisionRatio: 4, wipe: none }
snapshots: { enabled: true }
livenessProbe: { initialDelaySeconds: 60, periodSeconds: 60, timeoutSeconds: 90, failureThreshold: 10 }
csiTimeout: 300s
gc: { minAge: 5s, quarantine: '0' }
YAML
SNAP_OVERLAY=$RUN/overlay-snapshots; mkdir -p $SNAP_OVERLAY
ES_MOD=$(cd / && GOMODCACHE=${LVSTAMP_PARTS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lvstamp-parts}/go/mod GOTOOLCHAIN=local GOFLAGS=-mod=mod \
  PATH=$PATH:/usr/local/go/bin go mod download -json "github.com/kubernetes-csi/external-snapshotter/v8@$EXTERNAL_SNAPSHOTTER_VERSION" |
  sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
[ -f "$ES_MOD/deploy/kubernetes/snapshot-controller/kustomization.yaml" ] ||
  die "no deploy/kubernetes/snapshot-controller in external-snapshotter $EXTERNAL_SNAPSHOTTER_VERSION ($ES_MOD)"
cp -r "$SNAPC_DIR/crd" $RUN/crd && cp -r "$ES_MOD/deploy/kubernetes/snapshot-controller" $RUN/snapshot-controller &&
  chmod -R u+w $RUN/crd $RUN/snapshot-controller || die "cannot copy the CRDs and the snapshot-controller manifests"
t=$(sidecar_tag snapshot-controller)
cat >$SNAP_OVERLAY/kustomization.yaml <<YAML
resources: [../crd, ../snapshot-controller]
images:
  - { name: ${t%:*}, newTag: ${t##*:} }
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
  "$KUBECTL" kustomize $o >$o.yaml || die "kustomize of $o failed"
done
grep -q -- '--enable-distributed-snapshotting' $SNAP_OVERLAY.yaml || die "the snapshot overlay does not enable distributed snapshotting"
grep -q "image: $t\$" $SNAP_OVERLAY.yaml || die "the snapshot overlay does not run $t"

LOGS=$REPO/test-e2e/results/k8s
rm -rf "$LOGS" && mkdir -p "$LOGS"

ensure_store
IMAGES=$(thin "$STORE.blobs" $ALL_IMAGES | tr '\n' ' ')
step "images to import on top of the store:${IMAGES:- none}"
DISK=/dev/vda STORE_DISK=/dev/vdb
export REPO NODE_PATH PKI IMAGES LOGS SNAP_OVERLAY OVERLAY GC_OVERLAY DISK STORE_DISK K8S_INSTALL HELM_VALUES
# The VM's kernel and initramfs (test-e2e/vm/build-assets.sh) while the network is there: inside
# the namespace apt-get cannot download them, and with the image store cached no VM has booted
# out here yet (a new worktree, or Debian's new kernel: "Temporary failure resolving").
bash test-e2e/vm/build-assets.sh >&2 || die "test-e2e/vm/build-assets.sh failed (network? apt-get update?)"
netns_up || die "cannot set up the network namespace $NETNS"
s=$SECONDS
step "control plane on the host, in the network namespace $NETNS (log: $LOGS/control-plane.log)"
STATE=$RUN/control-plane ip netns exec $NETNS bash "$HERE/control-plane.sh" >"$LOGS/control-plane.log" 2>&1 &
step "booting the test VM (logs: $LOGS)"
# in the background, so that a signal reaches the traps at once (netns_down stops qemu)
(
  VM_NET=tap:$TAP VM_RW="$LOGS" VM_ENV="REPO NODE_PATH PKI IMAGES LOGS SNAP_OVERLAY OVERLAY GC_OVERLAY DISK STORE_DISK K8S_ONLY K8S_INSTALL HELM_VALUES K8S_IDLE_SECONDS" VM_DISKS=8G VM_IMAGES="$STORE" VM_MEM=${VM_MEM:-6G} \
    VM_TIMEOUT=${VM_TIMEOUT:-5000} ip netns exec $NETNS bash test-e2e/vm/run-in-vm.sh "bash test-e2e/k8s/vm/node-test.sh" 2>&1 |
    tee "$LOGS/run.log"
  exit "${PIPESTATUS[0]}"
) &
VM_JOB=$!
wait $VM_JOB
rc=$?
step "control plane: $(grep -E 'etcd healthy|readyz|control plane up|TIMEOUT|exited' "$LOGS/control-plane.log" | tr '\n' ';')"
step "VM: $((SECONDS - s)) s; whole tier $((SECONDS - T0)) s; exit $rc; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
tail -n 1 "$LOGS/run.log" | grep -qE '^[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped \(K8S_ONLY\))?$' || echo "0 passed, 1 failed"
exit $rc
