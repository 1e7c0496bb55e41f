# lib.sh: shared settings of the Kubernetes tier's host-side scripts (sourced).
# K8S_CACHE: build outputs, outside the repository (images, patched kubelet, PKI, node24).
# SHARED: the read-only build inputs beside the clone (the CSI sidecars' vendored source tarballs).
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
K8S_CACHE=${LVSTAMP_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lvstamp-k8s}
SHARED=${LVSTAMP_SHARED:-$REPO/../shared}
# The driver image under the Dockerfile's default name (as buildah names it); the test's overlay
# substitutes it and the sidecars' images for the manifests' names, as README tells users to.
DRIVER_IMAGE=localhost/lvstamp-csi:0.1.0
GC_IMAGE=localhost/lvstamp:0.1.0
# CSI sidecars: the newest tags that support Kubernetes 1.20 and build with Debian's Go 1.19; the
# snapshot-controller (external-snapshotter, like csi-snapshotter) is the cluster's, not lvstamp's
SIDECARS_KEY=provisioner-v2.1.2_registrar-v2.1.0_resizer-v1.1.0_liveness-v2.2.0_snapshotter-v5.0.1
SIDECARS_DIR=${LVSTAMP_SIDECARS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lvstamp-sidecars/$SIDECARS_KEY}
sidecar_tag() {
  case $1 in
    csi-provisioner) echo localhost/csi-provisioner:v2.1.2 ;;
    csi-node-driver-registrar) echo localhost/csi-node-driver-registrar:v2.1.0 ;;
    csi-resizer) echo localhost/csi-resizer:v1.1.0 ;;
    livenessprobe) echo localhost/livenessprobe:v2.2.0 ;;
    csi-snapshotter) echo localhost/csi-snapshotter:v5.0.1 ;;
    snapshot-controller) echo localhost/snapshot-controller:v5.0.1 ;;
  esac
}
die() { echo "k8s: FAIL: $*" >&2; exit 1; }
step() { echo "k8s: $*" >&2; }
