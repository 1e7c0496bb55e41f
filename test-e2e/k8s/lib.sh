# lib.sh: shared settings of the Kubernetes tier's host-side scripts (sourced).
# K8S_CACHE: build outputs, outside the repository (images, PKI, node24, the image store).
# PARTS: test-e2e/parts/build.sh, which builds Kubernetes, etcd, containerd, runc and the CSI
# sidecars from their Go modules into their own cache (K8S_VERSION there picks Kubernetes').
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
K8S_CACHE=${LVSTAMP_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lvstamp-k8s}
PARTS=$REPO/test-e2e/parts/build.sh
K8S_VERSION_ASKED=${K8S_VERSION:-}
# shellcheck source=../parts/versions.env
. "$REPO/test-e2e/parts/versions.env"
# a K8S_VERSION of the caller wins over the pin (parts/build.sh reads it from the environment)
if [ -n "$K8S_VERSION_ASKED" ]; then export K8S_VERSION=$K8S_VERSION_ASKED; fi
# The driver image under the Dockerfile's default name (as buildah names it); the test's overlay
# substitutes it for the manifest's name, as README tells users to.
DRIVER_IMAGE=localhost/lvstamp-csi:0.1.0
GC_IMAGE=localhost/lvstamp:0.1.0
# The sidecars' images carry exactly the names the shipped manifests use (deploy/kubernetes, the
# snapshot-controller's deploy/kubernetes/snapshot-controller of the same external-snapshotter
# release): the node holds them, so nothing is pulled and nothing is substituted.
sidecar_tag() {
  case $1 in
    csi-provisioner) echo "registry.k8s.io/sig-storage/csi-provisioner:$EXTERNAL_PROVISIONER_VERSION" ;;
    csi-resizer) echo "registry.k8s.io/sig-storage/csi-resizer:$EXTERNAL_RESIZER_VERSION" ;;
    csi-snapshotter) echo "registry.k8s.io/sig-storage/csi-snapshotter:$EXTERNAL_SNAPSHOTTER_VERSION" ;;
    snapshot-controller) echo "registry.k8s.io/sig-storage/snapshot-controller:$EXTERNAL_SNAPSHOTTER_VERSION" ;;
  esac
}
# sidecar_part NAME: the parts/build.sh part that builds the sidecar's binary
sidecar_part() {
  case $1 in
    csi-provisioner) echo external-provisioner ;;
    csi-resizer) echo external-resizer ;;
    *) echo "$1" ;;
  esac
}
SIDECARS="csi-provisioner csi-resizer csi-snapshotter snapshot-controller"
die() { echo "k8s: FAIL: $*" >&2; exit 1; }
step() { echo "k8s: $*" >&2; }
