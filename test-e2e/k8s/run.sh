#!/bin/bash
# run.sh: the Kubernetes tier. Builds (or takes from the caches outside the repository) every
# part: Kubernetes 1.20.2 from Debian's source package (apps/gc-job/test/kube/build.sh), the
# kubelet with the CSI :authority fix (build-kubelet.sh), the CSI sidecars (build-sidecars.sh), the
# images (build-images.sh: the driver image from apps/csi-driver/Dockerfile, pause, busybox, one
# per sidecar); then boots the test VM once and runs vm/node-test.sh there: a one-node cluster,
# `kubectl apply -k` of an overlay over deploy/kubernetes (README "Deploying on a cluster"), the
# scenarios. Ends with "N passed, N failed"; exit code 0 only when all passed.
# Env: LVSTAMP_SHARED (../shared beside the clone: the sidecars' source tarballs),
#      LVSTAMP_K8S_CACHE, VM_MEM (6G), VM_TIMEOUT (2400 s).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
cd "$REPO"
T0=$SECONDS
timed() { local s=$SECONDS; "$@"; local rc=$?; step "$1 ${2:-}: $((SECONDS - s)) s"; return $rc; }

for t in qemu-system-x86_64 buildah debootstrap containerd runc ctr etcd kubectl iptables gcc patch openssl numfmt; do
  command -v $t >/dev/null || PATH=$PATH:/usr/sbin:/sbin command -v $t >/dev/null ||
    die "'$t' is missing (scripts/bootstrap.sh installs the tier's Debian packages)"
done
[ -x /usr/lib/cni/bridge ] || die "CNI plugins missing in /usr/lib/cni (apt-get install containernetworking-plugins)"
[ -f apps/csi-driver/dist/lvstamp-csi.mjs ] || die "build first (pnpm build)"

KAPI=$(timed bash apps/gc-job/test/kube/build.sh kube-apiserver kube-controller-manager kube-scheduler kubelet | tail -1)
[ -x "$KAPI/bin/kube-apiserver" ] || die "Kubernetes binaries missing after apps/gc-job/test/kube/build.sh"
KUBELET=$(timed bash "$HERE/build-kubelet.sh" "$KAPI" | tail -1)
[ -x "$KUBELET" ] || die "patched kubelet missing"
ARCHIVES=$(timed bash "$HERE/build-images.sh" base pause busybox sidecars driver) || die "image build failed"
IMAGES=$(echo "$ARCHIVES" | awk '$1 != "base" {print $2}' | tr '\n' ' ')

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

# The user's overlay (README "Deploying on a cluster"): image names and the owner ID, nothing else
RUN=$(mktemp -d "$K8S_CACHE/run.XXXXXX")
trap 'rm -rf "$RUN"' EXIT
OVERLAY=$RUN/overlay; mkdir -p $OVERLAY
OWNER=$(openssl rand -hex 16)
{
  echo "resources: [$(realpath --relative-to=$OVERLAY deploy/kubernetes)]"
  echo "images:"
  echo "  - {name: ghcr.io/lvstamp/lvstamp-csi, newName: ${DRIVER_IMAGE%:*}, newTag: ${DRIVER_IMAGE##*:}}"
  for s in csi-provisioner csi-node-driver-registrar csi-resizer livenessprobe; do
    t=$(sidecar_tag $s); echo "  - {name: registry.k8s.io/sig-storage/$s, newName: ${t%:*}, newTag: ${t##*:}}"
  done
  echo "patches:"
  echo "  - target: {kind: ConfigMap, name: lvstamp-csi-config}"
  echo "    patch: '[{\"op\": \"replace\", \"path\": \"/data/owner-id\", \"value\": \"$OWNER\"}]'"
} >$OVERLAY/kustomization.yaml
kubectl kustomize $OVERLAY >/dev/null || die "kustomize of the overlay failed"

LOGS=$REPO/test-e2e/results/k8s
rm -rf "$LOGS" && mkdir -p "$LOGS"
KBIN=$KAPI/bin DISK=/dev/vda
export REPO KBIN KUBELET PKI IMAGES LOGS OVERLAY DISK
step "booting the test VM (logs: $LOGS)"
s=$SECONDS
VM_RW="$LOGS" VM_ENV="REPO KBIN KUBELET PKI IMAGES LOGS OVERLAY DISK" VM_DISKS=8G VM_MEM=${VM_MEM:-6G} \
  VM_TIMEOUT=${VM_TIMEOUT:-2400} bash test-e2e/vm/run-in-vm.sh "bash test-e2e/k8s/vm/node-test.sh" 2>&1 | tee "$LOGS/run.log"
rc=${PIPESTATUS[0]}
step "VM: $((SECONDS - s)) s; whole tier $((SECONDS - T0)) s; exit $rc"
tail -n 1 "$LOGS/run.log" | grep -qE '^[0-9]+ passed, [0-9]+ failed$' || echo "0 passed, 1 failed"
exit $rc
