#!/bin/bash
# node-test.sh: inside the test VM (run by test-e2e/k8s/run.sh). Brings up the node (cluster.sh:
# containerd and the kubelet, joined to the control plane run.sh started on the host), deploys lvstamp the way README's "Deploying on a cluster" says (an overlay over
# deploy/kubernetes that only sets the image names and the owner ID; kubectl apply -k), runs the
# scenarios, tears everything down and ends with "N passed, N failed".
# Env: REPO NODE_PATH PKI IMAGES LOGS SNAP_OVERLAY (CRDs, snapshot-controller) OVERLAY GC_OVERLAY (the user's overlay dirs) DISK (the VG's
#      disk) STORE_DISK (the image store, cluster.sh), K8S_INSTALL (kustomize, or helm: the chart
#      deploy/helm/lvstamp with HELM_VALUES, installed as docs/install.md says, instead of the overlays)
set -u
. "$(dirname "$0")/cluster.sh"
T0=$(now)
PASSED=0 FAILED=0 FAILS=()
# check NAME FUNC: one scenario; its failure is counted and the next one still runs
# K8S_ONLY="s_a s_b" (a debugging aid, test-e2e/k8s/README.md): only those scenarios after the
# cluster and the deployment; the others are counted as skipped, and skipped ones fail the run
SKIPPED=0
check() {
  local name=$1 s; s=$(now); shift
  case " s_vg s_cluster s_second_node s_deploy ${K8S_ONLY:-$1} " in
    *" $1 "*) ;;
    *) SKIPPED=$((SKIPPED + 1)); log "SKIP $name (K8S_ONLY=$K8S_ONLY)"; return 0 ;;
  esac
  log "=== $name"
  if "$@"; then PASSED=$((PASSED + 1)); log "PASS $name ($(since $s) s)"
  else FAILED=$((FAILED + 1)); FAILS+=("$name"); log "FAIL $name ($(since $s) s)"; fi
}
# by_hand NAME FUNC: a scenario too slow for every `pnpm test` (test-e2e/k8s/README.md "By hand"):
# run, as check does, only when K8S_ONLY names it; otherwise one line says how, and nothing is
# counted (it neither passes nor skips)
by_hand() {
  case " ${K8S_ONLY:-} " in
    *" $2 "*) check "$@" ;;
    *) log "BY HAND $1: K8S_ONLY=\"$2 s_cleanup\" bash test-e2e/k8s/run.sh" ;;
  esac
}
fail() { log "  FAIL: $*"; return 1; }
finish() {
  cluster_down
  [ $FAILED = 0 ] || log "failed: $(printf '%s; ' "${FAILS[@]}")"
  log "total $(since $T0) s"
  echo "$PASSED passed, $FAILED failed${K8S_ONLY:+, $SKIPPED skipped (K8S_ONLY)}"
  # the run's outcome is decided here, never by the status of the script's last command
  if [ $FAILED = 0 ] && [ $SKIPPED = 0 ]; then exit 0; fi
  exit 1
}
trap finish EXIT
# kubectl runs on the host, next to the control plane (vm/bin/kubectl, kubectl-relay.mjs): a
# kubectl started in the emulated VM costs 5-20 s, most of many scenarios' time
export KUBECTL_RELAY=$API_IP:$KUBECTL_RELAY_PORT PATH=$(cd "$(dirname "$0")" && pwd)/bin:$PATH
NS=lvstamp-system
K8S_INSTALL=${K8S_INSTALL:-kustomize}
CHART=$REPO/deploy/helm/lvstamp
# helm runs on the host too (vm/bin/helm -> kubectl-relay.mjs), so paths are the host's: the same files
hm() { helm --namespace $NS "$@"; }
k() { kubectl "$@"; }
jp() { kubectl get "$1" -o "jsonpath=$2" 2>/dev/null; } # jp OBJECT JSONPATH
phase_is() { [ "$(jp "$1" '{.status.phase}')" = "$2" ]; }
# the DaemonSet pod's 4 containers: driver, provisioner, resizer, snapshotter
CONTAINERS='lvstamp-csi csi-provisioner csi-resizer csi-snapshotter'
READY='true true true true'
driver_ready() { [ "$(kubectl -n $NS get pods -l app.kubernetes.io/name=lvstamp-csi-node -o jsonpath='{.items[0].status.containerStatuses[*].ready}')" = "$READY" ]; }
driver_pod() { kubectl -n $NS get pods -l app.kubernetes.io/name=lvstamp-csi-node -o jsonpath='{.items[0].metadata.name}' 2>/dev/null; }
csinode_lists_driver() { kubectl get csinode $NODE -o jsonpath='{.spec.drivers[*].name}' 2>/dev/null | grep -qw lvstamp.io; }
lv_count() { lvs --noheadings -o lv_name lvstamp 2>/dev/null | grep -c "${1:-.}"; }
volume_of() { jp "pv/$(jp "pvc/$1" '{.spec.volumeName}')" '{.spec.csi.volumeHandle}'; }

# pod_spec COMMAND MOUNTS: the lines under a test pod's `spec:` (busybox, no token, 1 s grace)
pod_spec() {
  cat <<SPEC
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
  containers:
    - name: app
      image: localhost/busybox:1.35
      imagePullPolicy: Never
      command: $1
      $2
SPEC
}
pod() { # pod NAME PVC [block]: a busybox pod using the PVC at /data (or /dev/xvda)
  local use="volumeMounts: [{name: v, mountPath: /data}]"
  [ "${3:-}" = block ] && use="volumeDevices: [{name: v, devicePath: /dev/xvda}]"
  kubectl apply -f - <<POD
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
$(pod_spec "[sleep, '36000']" "$use")
  volumes: [{name: v, persistentVolumeClaim: {claimName: $2}}]
POD
}
pvc() { # pvc NAME CLASS SIZE [Block]
  kubectl apply -f - <<PVC
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: $1}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: $2
  volumeMode: ${4:-Filesystem}
  resources: {requests: {storage: $3}}
PVC
}
wait_running() { # wait_running POD [TIMEOUT]
  wait_for "pod $1 Running" "${2:-600}" phase_is "pod/$1" Running ||
    { kubectl describe pod "$1" | tail -20; claim_logs "$1"; tails kubelet; return 1; }
}
claim_logs() { # claim_logs POD: why its claims are not bound (events, provisioner and driver logs)
  local c
  for c in $(jp "pod/$1" '{.spec.volumes[*].persistentVolumeClaim.claimName}'); do
    kubectl describe pvc "$c" | sed -n '/^Events:/,$p' | tail -12
  done
  kubectl -n $NS logs "$(driver_pod)" -c csi-provisioner --tail=25
  kubectl -n $NS logs "$(driver_pod)" -c lvstamp-csi --tail=25
}

# --- the volume group the driver's default device class names, on the VM's own disk ---
s_vg() {
  pvcreate -q "$DISK" && vgcreate -q lvstamp "$DISK" || fail "vgcreate lvstamp $DISK"
}

s_cluster() {
  calibrate
  log "$(kubelet --version), $(containerd --version), $(runc --version | head -1)"
  guest_prepare || return 1
  # the image import (I/O over 9p) overlaps the wait for the host's API server
  containerd_up >"$LOGS/containerd-up.log" 2>&1 &
  local imports=$!
  node_join || return 1
  wait $imports || { cat "$LOGS/containerd-up.log"; fail "containerd / image import"; return 1; }
  cat "$LOGS/containerd-up.log"
  kubelet_up
}

# --- a second node, as far as expansion sees one (docs/DESIGN.md §7 "Expansion on the node"): its own lvstamp-csi
# (node ID vm-b, its own volume group on a loop file) and its own external-resizer with the
# shipped arguments, started before the DaemonSet so that it, not the node's own resizer, holds
# the resizer's Lease when the expansion scenarios run. A resizer that called its own driver's
# ControllerExpandVolume would get NOT_FOUND for every volume of node vm and mark the claim
# infeasible; with node-only expansion it only records the new size on the PV.
NODEB=/run/node-b
RESIZER_LEASE=external-resizer-lvstamp-io
# rendered_objects: the objects s_deploy is about to install (the chart or the overlay), as YAML
rendered_objects() {
  if [ "$K8S_INSTALL" = helm ]; then hm template lvstamp "$CHART" -f "$HELM_VALUES"; else kubectl kustomize "$OVERLAY"; fi
}
lease_holder() { kubectl -n $NS get lease $RESIZER_LEASE -o jsonpath='{.spec.holderIdentity}' 2>/dev/null; }
s_second_node() {
  local loop args
  mkdir -p $NODEB && truncate -s 256M $NODEB/disk && loop=$(losetup -f --show $NODEB/disk) &&
    echo "$loop" >$NODEB/loop && pvcreate -q "$loop" && vgcreate -q lvstampb "$loop" || fail "vgcreate lvstampb" || return 1
  printf 'deviceClasses:\n  default: { volumeGroup: lvstampb, wipe: none, default: true }\n' >$NODEB/config.yaml
  start node-b-csi env LVSTAMP_OWNER_ID=0123456789abcdef0123456789abcdef node "$REPO/apps/csi-driver/dist/lvstamp-csi.mjs" \
    --endpoint=unix://$NODEB/csi.sock --node-id=vm-b --driver-name=lvstamp.io --config=$NODEB/config.yaml \
    --lock-file=$NODEB/host.lock
  wait_for "node vm-b: lvstamp-csi serves $NODEB/csi.sock" 300 test -S $NODEB/csi.sock || { cat "$LOGS/node-b-csi.log"; return 1; }
  # the resizer's arguments as the DaemonSet ships them, --csi-address and the kubeconfig aside
  args=$(rendered_objects | awk 'BEGIN { RS = "\n---\n" } /(^|\n)kind: DaemonSet\n/' |
    kubectl create --dry-run=client -f - -o jsonpath='{range .spec.template.spec.containers[?(@.name=="csi-resizer")].args[*]}{@}{"\n"}{end}' |
    grep -v '^--csi-address=')
  echo "$args" | grep -qx -- '--leader-election' || fail "the shipped csi-resizer does not run with --leader-election: $args" || return 1
  kubectl create namespace $NS || return 1
  # restarted when it exits, as the kubelet restarts the container: csi-resizer exits on purpose
  # ("Lost connection to CSI driver, exiting") when its first connection is closed, which a starved
  # emulated VM has shown while the connection read the server's preface (test-e2e/k8s/README.md)
  # shellcheck disable=SC2086 # one argument per line
  supervise node-b-resizer csi-resizer --csi-address=$NODEB/csi.sock --kubeconfig="$KUBECONFIG" --leader-election-namespace=$NS $args
  wait_for "node vm-b's resizer holds the Lease $NS/$RESIZER_LEASE" 300 sh -c \
    "kubectl -n $NS get lease $RESIZER_LEASE -o jsonpath='{.spec.holderIdentity}' | grep -q ." ||
    { tail -20 "$LOGS/node-b-resizer.log"; return 1; }
  NODEB_RESIZER=$(lease_holder)
  local restarts
  restarts=$(grep -c '^== node-b-resizer exited' "$LOGS/node-b-resizer.log")
  [ "$restarts" = 0 ] || log "node vm-b's resizer was restarted $restarts time(s) before it held the Lease: $(grep -m1 -i 'lost connection' "$LOGS/node-b-resizer.log")"
  grep -q 'supports node resize only' "$LOGS/node-b-resizer.log" ||
    fail "node vm-b's resizer does not use its trivial resizer (node-only expansion): $(grep -m3 -i resiz "$LOGS/node-b-resizer.log")"
}
# resizer_is_node_b: the Lease is still node vm-b's resizer's (the expansion below is its work)
resizer_is_node_b() {
  local h; h=$(lease_holder)
  [ -n "$NODEB_RESIZER" ] && [ "$h" = "$NODEB_RESIZER" ] ||
    fail "the resizer Lease is held by '$h', not by node vm-b's resizer '$NODEB_RESIZER'"
}
# no_resize_trouble PVC: no warning event and no failure condition on the claim
no_resize_trouble() {
  local warnings conditions
  warnings=$(events_of PersistentVolumeClaim "$1" | grep '^Warning')
  conditions=$(jp "pvc/$1" '{.status.conditions[*].type}')
  [ -z "$warnings" ] || fail "warning events on PVC $1: $warnings" || return 1
  case " $conditions " in *Error*|*Infeasible*) fail "PVC $1 has the conditions: $conditions" ;; esac
}
s_second_node_down() {
  local f
  for f in node-b-resizer node-b-csi; do [ -f $STATE/$f.pid ] && kill "$(cat $STATE/$f.pid)" 2>/dev/null; done
  sleep 2
  vgremove -qq -f lvstampb && pvremove -qq "$(cat $NODEB/loop)" && losetup -d "$(cat $NODEB/loop)" && rm -rf $NODEB ||
    fail "cannot remove node vm-b's volume group and loop device"
}

s_deploy() {
  # the cluster's snapshot support first (README "Snapshots"): the v1 CRDs, then the
  # snapshot-controller (--enable-distributed-snapshotting), which needs them
  kubectl apply -k "$SNAP_OVERLAY" || fail "kubectl apply -k (snapshot CRDs and snapshot-controller)" || return 1
  kubectl wait --for=condition=established --timeout=300s crd/volumesnapshots.snapshot.storage.k8s.io \
    crd/volumesnapshotcontents.snapshot.storage.k8s.io crd/volumesnapshotclasses.snapshot.storage.k8s.io ||
    fail "the snapshot CRDs are not established" || return 1
  if [ "$K8S_INSTALL" = helm ]; then
    # docs/install.md "With Helm": the namespace first, labelled for the privileged node plugin
    # (s_second_node made it already, for its resizer's Lease)
    { kubectl get namespace $NS >/dev/null 2>&1 || kubectl create namespace $NS; } &&
      kubectl label namespace $NS pod-security.kubernetes.io/enforce=privileged &&
      hm install lvstamp "$CHART" -f "$HELM_VALUES" || fail "helm install" || return 1
    hm list
    owner_id | grep -qE '^[0-9a-f]{32}$' || fail "the chart made no owner ID: '$(owner_id)'" || return 1
    log "owner ID made by the chart: $(owner_id)"
  else
    kubectl apply -k "$OVERLAY" || fail "kubectl apply -k (driver overlay)" || return 1
  fi
  wait_for "DaemonSet pod Running with 4/4 containers ready" 900 driver_ready ||
    { kubectl -n $NS describe pods | tail -40; tails kubelet; return 1; }
  kubectl -n kube-system wait --for=condition=available --timeout=600s deployment/snapshot-controller ||
    { kubectl -n kube-system describe pods -l app=snapshot-controller | tail -30; kubectl -n kube-system logs deployment/snapshot-controller --tail=20; return 1; }
  kubectl -n kube-system logs deployment/snapshot-controller | grep -m1 -i 'distributed' ||
    log "  (the snapshot-controller's log does not name distributed snapshotting)"
  wait_for "CSINode $NODE lists lvstamp.io (the driver's registration socket -> kubelet -> NodeGetInfo)" 300 csinode_lists_driver ||
    { tails_driver; grep -i 'plugin\|csi' "$LOGS/kubelet.log" | tail -20; return 1; }
  log "CSINode: $(kubectl get csinode $NODE -o jsonpath='{.spec.drivers[0]}')"
  no_restarts
}
# no_restarts: the driver container never restarted (its liveness probe never killed it); the
# sidecars' restarts are shown with the fatal line of their last run (on a loaded emulated node
# the API server can be slower than client-go's fixed 32 s discovery timeout at a sidecar's start)
no_restarts() {
  local pod c n; pod=$(driver_pod)
  for c in $CONTAINERS; do
    n=$(kubectl -n $NS get pod "$pod" -o jsonpath="{.status.containerStatuses[?(@.name==\"$c\")].restartCount}")
    [ "$n" = 0 ] && continue
    log "  container $c restarted $n time(s); its last run ended with:"
    kubectl -n $NS logs "$pod" -c $c --previous | grep -E '^[EF][0-9]{4} ' | tail -3
    [ $c = lvstamp-csi ] && { fail "the driver container restarted"; return 1; }
  done
  return 0
}
CAP0=
capacity_of() { # capacity (bytes) the provisioner published for lvstamp-ext4 on this node
  kubectl -n $NS get csistoragecapacities -o \
    jsonpath='{range .items[?(@.storageClassName=="lvstamp-ext4")]}{.capacity}{"\n"}{end}' 2>/dev/null | head -1 |
    numfmt --from=auto 2>/dev/null # a Quantity: bytes, or with a binary (Mi) or decimal (M) suffix
}
s_capacity_published() {
  wait_for "CSIStorageCapacity for lvstamp-ext4 published" 300 has_capacity ||
    { kubectl -n $NS logs "$(driver_pod)" -c csi-provisioner | tail -20; return 1; }
  CAP0=$(capacity_of)
  kubectl -n $NS get csistoragecapacities \
    -o custom-columns=NAME:.metadata.name,CLASS:.storageClassName,CAPACITY:.capacity,TOPOLOGY:.nodeTopology.matchLabels
  [ "$CAP0" -gt $((7 * 1024 * 1024 * 1024)) ] || fail "capacity $CAP0 bytes, want > 7 GiB of the 8 GiB VG"
}
has_capacity() { [ -n "$(capacity_of)" ]; }
capacity_below() { local c; c=$(capacity_of); [ -n "$c" ] && [ "$c" -lt "$1" ]; }

s_volumes() {
  pvc data-ext4 lvstamp-ext4 64Mi && pvc data-xfs lvstamp-xfs 320Mi && pvc data-block lvstamp-block 32Mi Block &&
    pod app-ext4 data-ext4 && pod app-xfs data-xfs && pod app-block data-block block || return 1
  local p ok=0
  for p in app-ext4 app-xfs app-block; do wait_running $p 900 || ok=1; done
  [ $ok = 0 ] || return 1
  for p in ext4 xfs; do
    kubectl exec app-$p -- sh -c "echo hello-$p > /data/hello && sync" || fail "write in app-$p" || return 1
    [ "$(kubectl exec app-$p -- cat /data/hello)" = "hello-$p" ] || fail "read back in app-$p" || return 1
    kubectl exec app-$p -- grep ' /data ' /proc/mounts | grep -q " $p " || fail "/data in app-$p is not $p" || return 1
  done
  kubectl exec app-block -- sh -c 'echo hello-block | dd of=/dev/xvda bs=512 conv=sync,fsync 2>/dev/null' || fail "write block" || return 1
  [ "$(kubectl exec app-block -- sh -c 'dd if=/dev/xvda bs=512 count=1 2>/dev/null | head -n1')" = hello-block ] ||
    fail "read back block" || return 1
  log "$(kubectl get pvc -o custom-columns=PVC:.metadata.name,STATUS:.status.phase,CAPACITY:.status.capacity.storage,VOLUME:.spec.volumeName --no-headers | tr '\n' ';')"
  [ "$(lv_count lvstamp_)" -ge 3 ] || fail "expected 3 lvstamp LVs, lvs shows: $(lvs --noheadings -o lv_name lvstamp)"
}

s_capacity_drops() {
  [ -n "$CAP0" ] || fail "no capacity was published before the creates" || return 1
  wait_for "published capacity below $CAP0 after the creates" 300 capacity_below "$CAP0" ||
    fail "capacity still $(capacity_of)"
}

s_expand() {
  local before after
  # node vm-b's resizer records the size, the kubelet here grows the volume (NodeExpandVolume)
  resizer_is_node_b || return 1
  before=$(kubectl exec app-ext4 -- df -kP /data | awk 'NR==2{print $2}')
  kubectl patch pvc data-ext4 -p '{"spec":{"resources":{"requests":{"storage":"160Mi"}}}}' || return 1
  wait_for "filesystem in app-ext4 grew past $before KiB" 600 sh -c \
    "[ \"\$(kubectl exec app-ext4 -- df -kP /data | awk 'NR==2{print \$2}')\" -gt $((before + 65536)) ]" ||
    { kubectl describe pvc data-ext4 | tail; tail -5 "$LOGS/node-b-resizer.log"; return 1; }
  wait_for "PVC data-ext4: capacity 160Mi, no resize status left" 300 sh -c \
    "[ \"\$(kubectl get pvc data-ext4 -o jsonpath='{.status.capacity.storage}')\" = 160Mi ] && [ -z \"\$(kubectl get pvc data-ext4 -o jsonpath='{.status.allocatedResourceStatuses}')\" ]" ||
    { kubectl describe pvc data-ext4 | tail; return 1; }
  after=$(kubectl exec app-ext4 -- df -kP /data | awk 'NR==2{print $2}')
  log "ext4 /data: $before KiB -> $after KiB; PVC capacity $(jp pvc/data-ext4 '{.status.capacity.storage}'); events: $(events_of PersistentVolumeClaim data-ext4 | cut -c1-120 | tr '\n' ';')"
  [ "$(kubectl exec app-ext4 -- cat /data/hello)" = hello-ext4 ] || fail "data after expansion" || return 1
  no_resize_trouble data-ext4 && resizer_is_node_b
}

s_recreate_pod() {
  kubectl delete pod app-ext4 --wait=true --timeout=600s || return 1
  pod app-ext4 data-ext4 && wait_running app-ext4 || return 1
  [ "$(kubectl exec app-ext4 -- cat /data/hello)" = hello-ext4 ] || fail "data gone after the pod was recreated"
}

s_driver_restart() {
  local old new
  old=$(driver_pod)
  kubectl -n $NS delete pod "$old" --wait=true --timeout=300s || return 1
  wait_for "a new driver pod with 4/4 containers ready" 600 driver_ready || return 1
  new=$(driver_pod)
  [ "$new" != "$old" ] || fail "driver pod was not replaced"
  kubectl exec app-xfs -- sh -c 'echo again > /data/again && cat /data/hello /data/again' | tr '\n' ' ' | grep -q 'hello-xfs again' ||
    fail "volume in app-xfs not usable after the driver restart" || return 1
  kubectl delete pod app-xfs --wait=true --timeout=600s || fail "unpublish (pod delete) after the driver restart" || return 1
  local vol; vol=$(volume_of data-xfs)
  ! grep -q "$vol" /proc/mounts || fail "mount of $vol left after the pod was deleted"
}

s_delete_pvc() {
  local vol pv
  vol=$(volume_of data-xfs); pv=$(jp pvc/data-xfs '{.spec.volumeName}')
  [ -n "$vol" ] || fail "no volume for data-xfs" || return 1
  [ "$(lv_count "$vol")" = 1 ] || fail "LV of $vol missing before the delete" || return 1
  kubectl delete pvc data-xfs --wait=true --timeout=300s || return 1
  wait_for "PV $pv gone" 300 sh -c "! kubectl get pv $pv" || return 1
  [ "$(lv_count "$vol")" = 0 ] || fail "LV of $vol still in VG lvstamp: $(lvs --noheadings -o lv_name lvstamp)"
}

# --- a PVC deleted while its CreateVolume is in flight: the leak the GC is for ---
LEAK_LV=
lvs_names() { lvs --noheadings -o lv_name lvstamp 2>/dev/null | awk '{print $1}' | sort; }
new_lvs_since() { lvs_names | comm -13 <(echo "$1") - | grep .; } # new_lvs_since "$(lvs_names)"
s_leak() {
  local lock=/run/lock/lvstamp/host.lock hb before cid killed
  before=$(lvs_names)
  # another lvstamp process holds the host lock (proper-lockfile: a directory and its mtime
  # heartbeat), so the driver's CreateVolume waits for it (up to 120 s)
  mkdir -p /run/lock/lvstamp && mkdir $lock || fail "the host lock $lock is already held" || return 1
  # (touch -c: a heartbeat that runs just after the release must not create a plain file there,
  # which no lvstamp process could ever take again)
  (while [ -d $lock ]; do touch -c $lock 2>/dev/null; sleep 2; done) &
  hb=$!
  release() { kill $hb 2>/dev/null; wait $hb 2>/dev/null; rm -rf $lock; }
  pvc leak lvstamp-ext4 64Mi && pod app-leak leak || { release; return 1; }
  wait_for "CreateVolume of PVC leak in flight (event Provisioning)" 300 sh -c \
    "kubectl get events --field-selector involvedObject.name=leak,reason=Provisioning -o name | grep -q ." ||
    { release; fail "the provisioner never started on PVC leak"; return 1; }
  # the user gives up: pod and PVC deleted while the driver still works on the volume
  kubectl delete pod app-leak --wait=true --timeout=120s && kubectl delete pvc leak --wait=true --timeout=120s ||
    { release; fail "deleting pod/PVC leak"; return 1; }
  # and the provisioner goes away before the answer comes (a crash, an eviction, an update): the
  # volume it asked for has no PVC and no PV, and nobody will ask for it again
  killed=
  for cid in $(ctr -n k8s.io containers ls -q 'labels."io.kubernetes.container.name"==csi-provisioner'); do
    ctr -n k8s.io tasks kill -s KILL "$cid" >/dev/null 2>&1 && killed=$cid
  done
  [ -n "$killed" ] || { release; fail "cannot kill the csi-provisioner container"; return 1; }
  log "csi-provisioner container ${killed:0:12} killed"
  release
  wait_for "the in-flight CreateVolume finished after all: a new LV in VG lvstamp" 300 new_lvs_since "$before" ||
    { tails_driver; fail "no LV appeared (did the driver's wait for the lock time out?)"; return 1; }
  LEAK_LV=$(new_lvs_since "$before")
  log "leaked volume: lvstamp/$LEAK_LV; PVs: $(kubectl get pv -o jsonpath='{..volumeHandle}')"
  [ "$(echo "$LEAK_LV" | wc -l)" = 1 ] || fail "expected one new LV, got: $LEAK_LV" || return 1
  ! kubectl get pv -o jsonpath='{..volumeHandle}' | tr ' ' '\n' | grep -qF "${LEAK_LV#lvstamp_}" ||
    fail "a PV references $LEAK_LV" || return 1
  wait_for "the csi-provisioner container running again (4/4 ready)" 600 driver_ready
}
tails_driver() { kubectl -n $NS logs "$(driver_pod)" -c lvstamp-csi --tail=20; }

# gc_job NAME: a Job from the CronJob, run now (README "Dry run now"), waited for; prints the
# per-node Job's log (the node's plan) after the cluster summary
gc_job() {
  local name=$1 node_job
  kubectl -n $NS create job --from=cronjob/lvstamp-gc "$name" || return 1
  kubectl -n $NS wait --for=condition=complete "job/$name" --timeout=900s ||
    { kubectl -n $NS describe job "$name" | tail -20; kubectl -n $NS logs "job/$name" --tail=30; return 1; }
  kubectl -n $NS logs "job/$name" | grep -v '^{'
  node_job=$(kubectl -n $NS get jobs -l app.kubernetes.io/component=lvstamp-gc-node \
    -o jsonpath="{range .items[?(@.metadata.ownerReferences[0].name==\"$name\")]}{.metadata.name}{end}")
  [ -n "$node_job" ] || { log "no per-node Job owned by job/$name"; return 1; }
  kubectl -n $NS logs "job/$node_job" | grep -v '^{'
}

s_gc() {
  local out
  [ -n "$LEAK_LV" ] || fail "no leaked volume to collect (the scenario before failed)" || return 1
  # (with helm the chart installed the GC, gc.enabled)
  [ "$K8S_INSTALL" = helm ] || kubectl apply -k "$GC_OVERLAY" || fail "kubectl apply -k (GC overlay)" || return 1
  out=$(gc_job gc-dry) || { echo "$out"; fail "dry-run Job"; return 1; }
  echo "$out"
  echo "$out" | grep -E "lvstamp/$LEAK_LV +remove-volume +6 " >/dev/null || fail "dry run does not plan to remove $LEAK_LV" || return 1
  echo "$out" | grep -q "to remove 1, removed 0" || fail "dry run summary is not 'to remove 1, removed 0'" || return 1
  [ "$(lv_count "$LEAK_LV")" = 1 ] || fail "the dry run removed $LEAK_LV" || return 1
  # README "Enabling deletion"
  kubectl -n $NS set env cronjob/lvstamp-gc LVSTAMP_GC_APPLY=true || fail "switching the CronJob to apply" || return 1
  out=$(gc_job gc-apply) || { echo "$out"; fail "apply Job"; return 1; }
  echo "$out"
  echo "$out" | grep -q "to remove 1, removed 1" || fail "apply summary is not 'to remove 1, removed 1'" || return 1
  [ "$(lv_count "$LEAK_LV")" = 0 ] || fail "$LEAK_LV still in VG lvstamp after the apply run" || return 1
  ! dmsetup ls | grep -q "${LEAK_LV#lvstamp_}" || fail "a device-mapper map of $LEAK_LV is left" || return 1
  wait_for "Event LeakedVolumeRemoved in namespace default" 120 sh -c \
    "kubectl -n default get events --field-selector reason=LeakedVolumeRemoved -o name | grep -q ." ||
    fail "no LeakedVolumeRemoved event"
}

# --- a PV deleted by mistake, its volume quarantined by the GC and restored (README "A volume is gone: getting it back") ---
# lvstamp_cli ARGS...: the node admin's CLI on the node, as README tells it: the repository's
# single-file bundle (the VM sees the host's repository) with the installation's owner ID (the
# ConfigMap lvstamp-csi-config) and the driver's lvm.conf (the ConfigMap lvstamp-lvm-conf, which the
# driver container mounts as /etc/lvm/lvm.conf); its lock is the driver's host lock
lvstamp_cli() {
  local conf=$STATE/lvm-driver owner
  if [ ! -s "$conf/lvm.conf" ]; then
    mkdir -p "$conf" || return 1
    kubectl -n $NS get configmap lvstamp-lvm-conf -o 'jsonpath={.data.lvm\.conf}' >"$conf/lvm.conf"
    [ -s "$conf/lvm.conf" ] || { log "  cannot read the driver's lvm.conf (ConfigMap lvstamp-lvm-conf)"; return 1; }
  fi
  owner=$(kubectl -n $NS get configmap lvstamp-csi-config -o 'jsonpath={.data.owner-id}')
  [ -n "$owner" ] || { log "  no owner-id in ConfigMap lvstamp-csi-config"; return 1; }
  LVM_SYSTEM_DIR=$conf node "$REPO/apps/cli/dist/lvstamp.mjs" --owner-id "$owner" "$@"
}
lv_attr_of() { lvs --noheadings -o lv_attr "lvstamp/$1" 2>/dev/null | tr -d ' '; } # lv_attr_of LV
s_quarantine() {
  local vol pv q attr out manifest mark ip metrics
  mark="precious-$(date +%s)"
  [ -f "$REPO/apps/cli/dist/lvstamp.mjs" ] || fail "the CLI is not built ($REPO/apps/cli/dist/lvstamp.mjs)" || return 1
  # the GC with the shipped CronJob's undo window (7d there; 1h here, the test's overlay runs
  # without one for s_gc), applied, the deletion cap out of the way (a leak left by a failed
  # scenario before must not take this run's one removal); set before the volume leaks, so that
  # a run of the CronJob's own schedule could only quarantine it too
  kubectl -n $NS get cronjob lvstamp-gc >/dev/null 2>&1 || kubectl apply -k "$GC_OVERLAY" || return 1
  kubectl -n $NS set env cronjob/lvstamp-gc LVSTAMP_GC_APPLY=true LVSTAMP_GC_QUARANTINE=1h LVSTAMP_GC_MAX_DELETE_PERCENT=100 ||
    fail "setting the CronJob's quarantine" || return 1
  pvc lost lvstamp-ext4 32Mi && pod app-lost lost && wait_running app-lost 900 || return 1
  kubectl exec app-lost -- sh -c "echo $mark > /data/precious && sync" || fail "write in app-lost" || return 1
  vol=$(volume_of lost); pv=$(jp pvc/lost '{.spec.volumeName}'); q=lvstamp_q_$vol
  [ -n "$vol" ] && [ "$(lv_count "lvstamp_$vol")" = 1 ] || fail "no LV lvstamp_$vol for claim lost" || return 1
  # the mistake: the PV set to Retain (as before a migration), then claim and PV deleted; the
  # volume stays on the node with nothing that references it
  kubectl patch pv "$pv" -p '{"spec":{"persistentVolumeReclaimPolicy":"Retain"}}' || return 1
  kubectl delete pod app-lost --wait=true --timeout=600s && kubectl delete pvc lost --wait=true --timeout=300s || return 1
  wait_for "PV $pv Released" 300 phase_is "pv/$pv" Released || return 1
  kubectl delete pv "$pv" --wait=true --timeout=300s || return 1
  wait_for "volume $vol unstaged (no mount names it)" 300 sh -c "! grep -q '$vol' /proc/mounts" || return 1
  [ "$(lv_count "lvstamp_$vol")" = 1 ] || fail "the LV of $vol went with its Retain PV" || return 1
  out=$(gc_job gc-quarantine) || { echo "$out"; fail "GC Job with a quarantine window"; return 1; }
  echo "$out"
  echo "$out" | grep -E "lvstamp/lvstamp_$vol +quarantine-volume +6 +starts now .* quarantined: " >/dev/null ||
    fail "the GC did not quarantine lvstamp_$vol (rule 6, starts now)" || return 1
  echo "$out" | grep -q "quarantined 1" || fail "the node summary does not count the quarantine" || return 1
  [ "$(lv_count "$q")" = 1 ] && [ "$(lv_count "lvstamp_$vol")" = 0 ] ||
    fail "want $q and no lvstamp_$vol: $(lvs --noheadings -o lv_name lvstamp | tr -s ' \n' ' ')" || return 1
  attr=$(lv_attr_of "$q")
  [ "${attr:4:1}" = - ] || fail "$q is active after the quarantine: lv_attr $attr" || return 1
  lvs --noheadings -o lv_tags "lvstamp/$q" | grep -q 'lvstamp\.quarantined=[0-9]' || fail "$q carries no quarantine time" || return 1
  ! dmsetup ls | grep -q "^lvstamp-$vol" || fail "the data device map of $vol is left" || return 1
  wait_for "Event LeakedVolumeQuarantined naming $q in namespace default" 120 sh -c \
    "kubectl -n default get events --field-selector reason=LeakedVolumeQuarantined -o jsonpath='{.items[*].message}' | grep -q '$q'" ||
    fail "no LeakedVolumeQuarantined event for $q" || return 1
  # the day someone notices, README's first step: stop the clock (no scheduled run expires it,
  # or quarantines it again before its claim is bound)
  kubectl -n $NS patch cronjob lvstamp-gc -p '{"spec":{"suspend":true}}' || return 1
  # the driver's metrics count it (read at scrape time, docs/metrics.md)
  ip=$(kubectl -n $NS get pod "$(driver_pod)" -o jsonpath='{.status.podIP}')
  metrics=$(curl -sf --max-time 60 "http://$ip:9809/metrics" | grep '^lvstamp_quarantined')
  log "metrics: $(echo "$metrics" | tr '\n' ';')"
  echo "$metrics" | grep -qE '^lvstamp_quarantined\{[^}]*\} [1-9]' || fail "no device class counts a quarantined LV" || return 1
  echo "$metrics" | grep -qE '^lvstamp_quarantined_bytes\{[^}]*\} [1-9]' || fail "no device class counts quarantined bytes" || return 1
  # on the node, by the PV's name (README "A volume is gone")
  lvstamp_cli list --quarantined || fail "lvstamp list --quarantined" || return 1
  out=$(lvstamp_cli quarantine restore "$pv" --storage-class lvstamp-ext4 --node "$NODE") ||
    { echo "$out"; fail "lvstamp quarantine restore $pv"; return 1; }
  echo "$out"
  echo "$out" | grep -q "^restored volume $vol as lvstamp/lvstamp_$vol " || fail "restore did not say what it restored" || return 1
  echo "$out" | grep -q '^volumeMode: Filesystem (fsType ext4): blkid finds a ext4 filesystem' ||
    fail "restore did not choose Filesystem/ext4 from the data area" || return 1
  attr=$(lv_attr_of "lvstamp_$vol")
  [ "${attr:4:1}" = a ] && [ "$(lv_count "$q")" = 0 ] || fail "lvstamp_$vol not back and active: lv_attr $attr" || return 1
  ! lvs --noheadings -o lv_tags "lvstamp/lvstamp_$vol" | grep -q quarantined || fail "lvstamp_$vol still has its quarantine tag" || return 1
  # the PersistentVolume it printed, as printed; then a claim bound to it by name
  manifest=$(echo "$out" | sed -n '/^apiVersion: v1$/,$p')
  echo "$manifest" | grep -q "^    volumeHandle: \"$vol\"$" || fail "the printed PV does not name volumeHandle $vol" || return 1
  echo "$manifest" | kubectl apply -f - || fail "kubectl apply of the printed PersistentVolume" || return 1
  kubectl apply -f - <<PVC || return 1
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: found}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: lvstamp-ext4
  volumeName: $pv
  resources: {requests: {storage: 32Mi}}
PVC
  wait_for "PVC found Bound to PV $pv" 300 phase_is pvc/found Bound || { kubectl describe pvc found | tail -10; return 1; }
  pod app-found found && wait_running app-found 900 || return 1
  [ "$(kubectl exec app-found -- cat /data/precious)" = "$mark" ] || fail "the restored volume does not read back $mark" || return 1
  log "claim found (PV $pv, volume $vol) reads what app-lost wrote before the PV was deleted"
  kubectl -n $NS patch cronjob lvstamp-gc -p '{"spec":{"suspend":false}}' &&
    kubectl -n $NS set env cronjob/lvstamp-gc LVSTAMP_GC_QUARANTINE=0 LVSTAMP_GC_MAX_DELETE_PERCENT- || return 1
  # the restored PV is Retain, as printed: claim and PV deleted, the volume removed by the CLI
  kubectl delete pod app-found --wait=true --timeout=600s && kubectl delete pvc found --wait=true --timeout=300s || return 1
  wait_for "PV $pv Released" 300 phase_is "pv/$pv" Released && kubectl delete pv "$pv" --wait=true --timeout=300s || return 1
  wait_for "volume $vol unstaged (no mount names it)" 300 sh -c "! grep -q '$vol' /proc/mounts" || return 1
  lvstamp_cli delete "$pv" || fail "lvstamp delete $pv" || return 1
  [ "$(lv_count "$vol")" = 0 ] || fail "an LV of $vol is left: $(lvs --noheadings -o lv_name lvstamp | tr -s ' \n' ' ')"
}

# --- snapshots (README "Snapshots"): a thin volume, a VolumeSnapshot of it, a claim restored from it ---
snapshot_ready() { [ "$(jp "volumesnapshot/$1" '{.status.readyToUse}')" = true ]; }
md5_in() { kubectl exec "$1" -- md5sum "$2" | awk '{print $1}'; } # md5_in POD FILE
snapshot_logs() {
  kubectl describe volumesnapshot snap-thin | tail -15
  kubectl -n $NS logs "$(driver_pod)" -c csi-snapshotter --tail=20
  kubectl -n kube-system logs deployment/snapshot-controller --tail=20
}
s_snapshot_restore() {
  local sum vsc handle snap_lv src_vol src_pv out size
  pvc thin-src lvstamp-thin-ext4 64Mi && pod app-thin thin-src && wait_running app-thin 900 || return 1
  [ "$(lvs --noheadings -o segtype lvstamp/pool0 | tr -d ' ')" = thin-pool ] ||
    fail "no thin pool lvstamp/pool0 after the first thin CreateVolume: $(lvs -a lvstamp)" || return 1
  src_vol=$(volume_of thin-src); src_pv=$(jp pvc/thin-src '{.spec.volumeName}')
  [ "$(lvs --noheadings -o pool_lv "lvstamp/lvstamp_$src_vol" | tr -d ' ')" = pool0 ] ||
    fail "lvstamp_$src_vol is not a thin LV of pool0" || return 1
  kubectl exec app-thin -- sh -c 'dd if=/dev/urandom of=/data/blob bs=65536 count=16 2>/dev/null && sync' ||
    fail "write in app-thin" || return 1
  sum=$(md5_in app-thin /data/blob)
  [ -n "$sum" ] || fail "no checksum of /data/blob in app-thin" || return 1
  kubectl apply -f - <<SNAP || return 1
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshot
metadata: {name: snap-thin}
spec:
  volumeSnapshotClassName: lvstamp
  source: {persistentVolumeClaimName: thin-src}
SNAP
  wait_for "VolumeSnapshot snap-thin readyToUse" 600 snapshot_ready snap-thin || { snapshot_logs; return 1; }
  vsc=$(jp volumesnapshot/snap-thin '{.status.boundVolumeSnapshotContentName}')
  handle=$(jp "volumesnapshotcontent/$vsc" '{.status.snapshotHandle}')
  log "VolumeSnapshotContent $vsc: handle $handle, labels $(jp "volumesnapshotcontent/$vsc" '{.metadata.labels}')"
  snap_lv=$(lvs_names | grep -xF "lvstamp_snap_$handle")
  [ -n "$snap_lv" ] || fail "no snapshot LV lvstamp_snap_$handle: $(lvs_names | tr '\n' ' ')" || return 1
  # the claim restored from the snapshot (its restoreSize), used by a pod on the same node (the only one)
  size=$(jp volumesnapshot/snap-thin '{.status.restoreSize}')
  log "VolumeSnapshot snap-thin: restoreSize $size"
  kubectl apply -f - <<PVC || return 1
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: thin-restore}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: lvstamp-thin-ext4
  dataSource: {apiGroup: snapshot.storage.k8s.io, kind: VolumeSnapshot, name: snap-thin}
  resources: {requests: {storage: ${size:-64Mi}}}
PVC
  pod app-restore thin-restore && wait_running app-restore 900 || return 1
  [ "$(md5_in app-restore /data/blob)" = "$sum" ] || fail "the restored /data/blob differs from the source's ($sum)" || return 1
  log "restored claim thin-restore (volume $(volume_of thin-restore)) reads the source's 1 MiB (md5 $sum)"
  # the source goes first: its LV goes, the snapshot LV stays (a VolumeSnapshotContent names it)
  kubectl delete pod app-thin --wait=true --timeout=600s && kubectl delete pvc thin-src --wait=true --timeout=300s || return 1
  wait_for "PV $src_pv gone" 300 sh -c "! kubectl get pv $src_pv" || return 1
  [ "$(lv_count "lvstamp_$src_vol")" = 0 ] || fail "LV lvstamp_$src_vol still there after its PVC was deleted" || return 1
  [ "$(lv_count "$snap_lv")" = 1 ] || fail "$snap_lv went with its source volume" || return 1
  # the GC (a Job from the CronJob, as in the GC scenario) keeps it: in the snapshot live set
  kubectl -n $NS get cronjob lvstamp-gc >/dev/null 2>&1 || kubectl apply -k "$GC_OVERLAY" || return 1
  log "GC CronJob: LVSTAMP_GC_APPLY=$(kubectl -n $NS get cronjob lvstamp-gc -o jsonpath='{..env[?(@.name=="LVSTAMP_GC_APPLY")].value}')"
  out=$(gc_job gc-snapshot) || { echo "$out"; fail "GC Job with a snapshot whose source is gone"; return 1; }
  echo "$out"
  echo "$out" | grep -E "lvstamp/$snap_lv +keep +2 " >/dev/null || fail "the GC does not keep $snap_lv by rule 2 (live set)" || return 1
  echo "$out" | grep -q "to remove 0, removed 0" || fail "GC summary is not 'to remove 0, removed 0'" || return 1
  [ "$(lv_count "$snap_lv")" = 1 ] || fail "the GC removed $snap_lv while VolumeSnapshotContent $vsc names it" || return 1
  # then the restored claim, then the snapshot: DeleteSnapshot removes its LV
  kubectl delete pod app-restore --wait=true --timeout=600s && kubectl delete pvc thin-restore --wait=true --timeout=300s || return 1
  kubectl delete volumesnapshot snap-thin --wait=true --timeout=300s || { snapshot_logs; return 1; }
  wait_for "VolumeSnapshotContent $vsc gone" 300 sh -c "! kubectl get volumesnapshotcontent $vsc" || { snapshot_logs; return 1; }
  wait_for "every PV gone but the two of data-ext4 and data-block" 300 sh -c '[ "$(kubectl get pv -o name | wc -l)" -le 2 ]' || return 1
  [ "$(lv_count "$snap_lv")" = 0 ] || fail "$snap_lv still there after its VolumeSnapshot was deleted" || return 1
  [ -z "$(lvs --noheadings -o lv_name -S 'pool_lv=pool0' lvstamp)" ] ||
    fail "thin LVs left in pool0: $(lvs --noheadings -o lv_name -S 'pool_lv=pool0' lvstamp)" || return 1
  # the pool is the administrator's (no lvstamp code path removes a pool, DESIGN.md §4): removed by hand
  lvremove -y lvstamp/pool0 >/dev/null || fail "lvremove lvstamp/pool0"
}

# --- what current clusters do (Kubernetes >= 1.32 features, all GA) ---
mounted_vol() { grep -q "$1" /proc/mounts; } # mounted_vol VOLUME_ID: some mount names the volume
events_of() { # events_of KIND NAME: "reason: message" lines of an object's events
  kubectl get events --field-selector "involvedObject.kind=$1,involvedObject.name=$2" \
    -o jsonpath='{range .items[*]}{.type} {.reason}: {.message}{"\n"}{end}' 2>/dev/null
}
sts_ready() { [ "$(jp statefulset/web '{.status.readyReplicas}')" = "$1" ] && [ "$(jp statefulset/web '{.status.replicas}')" = "$1" ]; }
sts_scale() { # sts_scale N: scale the StatefulSet web and wait until exactly N replicas are ready
  kubectl scale statefulset web --replicas="$1" || return 1
  wait_for "StatefulSet web: $1/$1 ready" 900 sts_ready "$1" ||
    { kubectl get pods -l app=web -o wide; kubectl describe statefulset web | tail -10; return 1; }
}
web_check() { # web_check I: pod web-I reads back its own name from its own claim
  [ "$(kubectl exec "web-$1" -- cat /data/who)" = "web-$1" ] || fail "web-$1 does not read its own name from data-web-$1"
}
# sts_apply NAME REPLICAS COMMAND: applies a StatefulSet NAME (label app=NAME) of busybox pods that
# run COMMAND (a YAML list) with their claim data-NAME-I (lvstamp-ext4, 32Mi) at /data
sts_apply() {
  kubectl apply -f - <<STS
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: $1}
spec:
  replicas: $2
  podManagementPolicy: Parallel
  selector: {matchLabels: {app: $1}}
  serviceName: $1
  template:
    metadata: {labels: {app: $1}}
    spec:
$(pod_spec "$3" "volumeMounts: [{name: data, mountPath: /data}]" | sed 's/^/    /')
  volumeClaimTemplates:
    - metadata: {name: data}
      spec:
        accessModes: [ReadWriteOnce]
        storageClassName: lvstamp-ext4
        resources: {requests: {storage: 32Mi}}
STS
}
s_statefulset() {
  local i vols
  sts_apply web 3 "[sh, -c, 'cat /data/who 2>/dev/null || hostname > /data/who; sync; exec sleep 36000']" || return 1
  sts_scale 3 || return 1
  for i in 0 1 2; do web_check $i || return 1; done
  sts_scale 5 || return 1
  for i in 0 1 2 3 4; do web_check $i || return 1; done
  log "PVCs: $(kubectl get pvc -l app=web -o custom-columns=N:.metadata.name,S:.status.phase --no-headers | tr -s ' ' | tr '\n' ';')"
  sts_scale 1 || return 1
  web_check 0 || return 1
  # scaled down: the claims stay (persistentVolumeClaimRetentionPolicy whenScaled: Retain, the default)
  [ "$(kubectl get pvc -l app=web -o name | wc -l)" = 5 ] || fail "want 5 claims after scaling to 1: $(kubectl get pvc -l app=web -o name)"
}
s_drain() { # on the StatefulSet's one remaining replica: drain, then uncordon
  local vol; vol=$(volume_of data-web-0)
  [ -n "$vol" ] && mounted_vol "$vol" || fail "web-0's volume $vol is not mounted before the drain" || return 1
  # the app's pods only (--pod-selector): the other test pods are bare pods, which a drain would delete for good
  kubectl drain $NODE --ignore-daemonsets --pod-selector=app=web --timeout=600s || fail "kubectl drain" || return 1
  wait_for "web-0 evicted and Pending (node cordoned)" 600 sh -c \
    "[ \"\$(kubectl get pod web-0 -o jsonpath='{.status.phase}')\" = Pending ]" || return 1
  wait_for "web-0's volume unstaged and unpublished (no mount names $vol)" 600 sh -c "! grep -q '$vol' /proc/mounts" || return 1
  [ "$(lv_count "$vol")" = 1 ] || fail "LV of $vol gone after the drain" || return 1
  log "web-0 while cordoned: $(events_of Pod web-0 | grep FailedScheduling | tail -1)"
  kubectl uncordon $NODE || return 1
  wait_for "web-0 Running again after uncordon" 600 sts_ready 1 || return 1
  web_check 0
}
no_pv_of() { ! kubectl get pv -o jsonpath='{..volumeHandle}' | tr ' ' '\n' | grep -qxF "$(printf '%s\n' "$@")"; }
s_statefulset_delete() {
  local vols v
  vols=$(for i in 0 1 2 3 4; do volume_of data-web-$i; echo; done) # one per line (jsonpath prints no newline)
  [ "$(echo "$vols" | grep -c .)" = 5 ] || fail "want 5 volumes of the StatefulSet, got: $vols" || return 1
  kubectl delete statefulset web --wait=true --timeout=600s || return 1
  wait_for "web's pods gone" 600 sh -c '[ -z "$(kubectl get pods -l app=web -o name)" ]' || return 1
  kubectl delete pvc -l app=web --wait=true --timeout=600s || return 1
  wait_for "the 5 PVs of web gone" 600 no_pv_of $vols || return 1
  for v in $vols; do [ "$(lv_count "$v")" = 0 ] || fail "LV of $v still in VG lvstamp" || return 1; done
}

s_ephemeral() {
  local vol pv
  kubectl apply -f - <<POD || return 1
apiVersion: v1
kind: Pod
metadata: {name: app-eph}
spec:
$(pod_spec "[sh, -c, 'echo scratch > /scratch/f && sync && exec sleep 36000']" "volumeMounts: [{name: scratch, mountPath: /scratch}]")
  volumes:
    - name: scratch
      ephemeral:
        volumeClaimTemplate:
          spec:
            accessModes: [ReadWriteOnce]
            storageClassName: lvstamp-xfs
            resources: {requests: {storage: 320Mi}}
POD
  wait_running app-eph 900 || return 1
  [ "$(jp pvc/app-eph-scratch '{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}')" = Pod/app-eph ] ||
    fail "PVC app-eph-scratch is not owned by pod app-eph" || return 1
  [ "$(kubectl exec app-eph -- cat /scratch/f)" = scratch ] || fail "read back in the ephemeral volume" || return 1
  vol=$(volume_of app-eph-scratch); pv=$(jp pvc/app-eph-scratch '{.spec.volumeName}')
  [ "$(lv_count "$vol")" = 1 ] || fail "no LV for the ephemeral volume $vol" || return 1
  kubectl delete pod app-eph --wait=true --timeout=600s || return 1
  wait_for "the ephemeral claim app-eph-scratch gone with its pod" 300 sh -c "! kubectl get pvc app-eph-scratch" || return 1
  wait_for "PV $pv gone" 300 sh -c "! kubectl get pv $pv" || return 1
  [ "$(lv_count "$vol")" = 0 ] || fail "LV of the ephemeral volume $vol left"
}

s_rwop() {
  local why
  kubectl apply -f - <<PVC || return 1
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: solo}
spec:
  accessModes: [ReadWriteOncePod]
  storageClassName: lvstamp-ext4
  resources: {requests: {storage: 32Mi}}
PVC
  pod app-solo solo && wait_running app-solo 900 || return 1
  pod app-solo2 solo || return 1
  wait_for "the second pod on ReadWriteOncePod claim solo: FailedScheduling" 300 sh -c \
    "kubectl get events --field-selector involvedObject.name=app-solo2,reason=FailedScheduling -o name | grep -q ." || return 1
  why=$(events_of Pod app-solo2 | grep FailedScheduling | tail -1)
  log "app-solo2: $(jp pod/app-solo2 '{.status.phase}'): $why"
  phase_is pod/app-solo2 Pending || fail "app-solo2 is not Pending" || return 1
  echo "$why" | grep -q ReadWriteOncePod || fail "the scheduler's reason does not name ReadWriteOncePod: $why" || return 1
  kubectl delete pod app-solo2 app-solo --wait=true --timeout=600s && kubectl delete pvc solo --wait=true --timeout=300s
}

s_fsgroup() {
  local fs out
  pvc fsg-ext4 lvstamp-ext4 32Mi && pvc fsg-xfs lvstamp-xfs 320Mi || return 1
  kubectl apply -f - <<POD || return 1
apiVersion: v1
kind: Pod
metadata: {name: app-fsg}
spec:
  securityContext: {runAsUser: 1000, runAsGroup: 1000, fsGroup: 2000, runAsNonRoot: true}
$(pod_spec "[sleep, '36000']" "volumeMounts: [{name: e, mountPath: /ext4}, {name: x, mountPath: /xfs}]")
  volumes: [{name: e, persistentVolumeClaim: {claimName: fsg-ext4}}, {name: x, persistentVolumeClaim: {claimName: fsg-xfs}}]
POD
  wait_running app-fsg 900 || return 1
  log "app-fsg: $(kubectl exec app-fsg -- id)"
  for fs in ext4 xfs; do
    out=$(kubectl exec app-fsg -- sh -c "echo mine > /$fs/f && stat -c '%u:%g %A' /$fs/f /$fs && cat /$fs/f") ||
      fail "uid 1000 cannot write into its $fs volume (fsGroup 2000)" || return 1
    log "$fs: $(echo "$out" | tr '\n' ' ')"
    echo "$out" | head -1 | grep -q '^1000:2000 ' || fail "$fs: a new file is not 1000:2000: $out" || return 1
    echo "$out" | sed -n 2p | grep -q '^0:2000 drwxrws' || fail "$fs: the volume root is not group 2000 with setgid: $out" || return 1
  done
  kubectl delete pod app-fsg --wait=true --timeout=600s && kubectl delete pvc fsg-ext4 fsg-xfs --wait=true --timeout=300s
}

s_kubelet_restart() { # app-ext4 keeps running on data-ext4 while the kubelet is stopped and started
  local vol restarts
  vol=$(volume_of data-ext4)
  restarts=$(jp pod/app-ext4 '{.status.containerStatuses[0].restartCount}')
  kill "$(cat $STATE/kubelet.pid)" || return 1
  wait_for "kubelet stopped" 120 sh -c "! kill -0 $(cat $STATE/kubelet.pid)" || return 1
  mv "$LOGS/kubelet.log" "$LOGS/kubelet-1.log"
  kubelet_start
  wait_for "kubelet up again (healthz)" 600 curl -sf http://127.0.0.1:10248/healthz || { tails kubelet; return 1; }
  wait_for "node $NODE Ready after the kubelet restart" 600 node_ready || return 1
  wait_for "the kubelet reconstructed the mounted volume $vol (its volume manager lists it)" 600 sh -c \
    "grep -q 'Volume is marked as mounted.*$vol\\|MountVolume.*$vol\\|reconstruct.*$vol\\|$vol.*reconstruct' '$LOGS/kubelet.log'" ||
    log "  (the kubelet's log does not name the reconstruction of $vol: $(grep -ci reconstruct "$LOGS/kubelet.log") 'reconstruct' lines)"
  phase_is pod/app-ext4 Running || fail "app-ext4 is not Running after the kubelet restart" || return 1
  [ "$(jp pod/app-ext4 '{.status.containerStatuses[0].restartCount}')" = "$restarts" ] ||
    fail "app-ext4's container restarted with the kubelet" || return 1
  [ "$(kubectl exec app-ext4 -- cat /data/hello)" = hello-ext4 ] || fail "data-ext4 unreadable after the kubelet restart" || return 1
  kubectl exec app-ext4 -- sh -c 'echo after-kubelet > /data/k && sync' || fail "write after the kubelet restart" || return 1
  mounted_vol "$vol" || fail "no mount of $vol after the kubelet restart"
}

s_resize_unsatisfiable() {
  local want statuses why
  pvc big lvstamp-ext4 32Mi && pod app-big big && wait_running app-big 900 || return 1
  kubectl exec app-big -- sh -c 'echo before > /data/f && sync' || return 1
  # more than the 8 GiB volume group holds: node vm-b's resizer records 64Gi on the PV, the kubelet
  # here calls NodeExpandVolume, which answers OUT_OF_RANGE (docs/DESIGN.md §7 "Expansion on the node"): the
  # kubelet marks the node expansion infeasible, which a lowered request may then replace
  kubectl patch pvc big -p '{"spec":{"resources":{"requests":{"storage":"64Gi"}}}}' || return 1
  # the kubelet's condition NodeResizeError carries the driver's OUT_OF_RANGE; allocatedResourceStatuses
  # alternates NodeResizeInfeasible / NodeResizePending (the trivial resizer resets it for the
  # kubelet's next try), so the condition is what the user reads
  wait_for "PVC big: condition NodeResizeError" 600 sh -c \
    "kubectl get pvc big -o jsonpath='{.status.conditions[?(@.type==\"NodeResizeError\")].message}' | grep -q ." ||
    { kubectl describe pvc big | tail -15; fail "no NodeResizeError condition: $(jp pvc/big '{.status}')"; return 1; }
  why=$(jp pvc/big '{.status.conditions[?(@.type=="NodeResizeError")].message}')
  statuses=$(jp pvc/big '{.status.allocatedResourceStatuses}')
  log "PVC big after asking for 64Gi: capacity $(jp pvc/big '{.status.capacity.storage}'), allocatedResourceStatuses $statuses, conditions $(jp pvc/big '{.status.conditions[*].type}'); NodeResizeError: $why"
  [ "$(jp pvc/big '{.status.capacity.storage}')" = 32Mi ] || fail "capacity changed although the resize failed" || return 1
  echo "$why" | grep -q 'OutOfRange desc = cannot grow here: volume group lvstamp has [0-9]* bytes free' ||
    fail "the NodeResizeError condition does not carry the driver's OUT_OF_RANGE: $why" || return 1
  [ "$(kubectl exec app-big -- cat /data/f)" = before ] || fail "app-big does not read its data while the resize is infeasible" || return 1
  # recovery from expansion failure (Kubernetes 1.34 GA): lower the request, above the old size
  want=64Mi
  kubectl patch pvc big -p "{\"spec\":{\"resources\":{\"requests\":{\"storage\":\"$want\"}}}}" ||
    fail "lowering the request to $want (recovery from expansion failure) was refused" || return 1
  wait_for "PVC big: capacity $want, no resize status left" 900 sh -c \
    "[ \"\$(kubectl get pvc big -o jsonpath='{.status.capacity.storage}')\" = $want ] && [ -z \"\$(kubectl get pvc big -o jsonpath='{.status.allocatedResourceStatuses}')\" ]" ||
    { kubectl describe pvc big | tail -15; return 1; }
  wait_for "the filesystem in app-big grew past 50000 KiB" 600 sh -c \
    "[ \"\$(kubectl exec app-big -- df -kP /data | awk 'NR==2{print \$2}')\" -gt 50000 ]" || return 1
  [ "$(kubectl exec app-big -- cat /data/f)" = before ] || fail "data after the recovered resize" || return 1
  kubectl exec app-big -- sh -c 'echo after > /data/g && sync' || fail "PVC big not writable after the recovery" || return 1
  log "PVC big: conditions now: $(jp pvc/big '{.status.conditions[*].type}'); PV $(jp "pv/$(jp pvc/big '{.spec.volumeName}')" '{.spec.capacity.storage}')"
  resizer_is_node_b || return 1
  kubectl delete pod app-big --wait=true --timeout=600s && kubectl delete pvc big --wait=true --timeout=300s
}

s_probe_metrics() {
  local ip; ip=$(kubectl -n $NS get pod "$(driver_pod)" -o jsonpath='{.status.podIP}')
  [ -n "$ip" ] || fail "driver pod has no IP" || return 1
  # the driver's own /healthz (--health-address), which the kubelet's liveness probe calls
  [ "$(curl -sf --max-time 60 "http://$ip:9808/healthz")" = ok ] || fail "driver /healthz http://$ip:9808/healthz" || return 1
  curl -sf --max-time 60 "http://$ip:9809/metrics" >$LOGS/metrics.txt || fail "metrics http://$ip:9809/metrics" || return 1
  grep -m3 '^lvstamp_' $LOGS/metrics.txt || fail "no lvstamp_ metric on :9809" || return 1
  # as Prometheus finds them (docs/metrics.md "Finding them"): the monitoring component's headless
  # Service (its PodMonitor needs the operator's CRDs, which this cluster lacks), whose endpoints
  # list the driver pod; scraped through the API server's service proxy, every family of
  # docs/metrics.md's table is there
  local svc=$REPO/deploy/kubernetes/components/monitoring/service.yaml families missing=
  kubectl apply -f "$svc" || fail "kubectl apply -f $svc" || return 1
  wait_for "Service lvstamp-csi-metrics: its EndpointSlice lists the driver pod $ip" 120 sh -c \
    "kubectl -n $NS get endpointslices -l kubernetes.io/service-name=lvstamp-csi-metrics -o jsonpath='{.items[*].endpoints[*].addresses[*]}' | grep -qw '$ip'" ||
    fail "no endpoint $ip for Service lvstamp-csi-metrics" || return 1
  kubectl get --raw "/api/v1/namespaces/$NS/services/lvstamp-csi-metrics:metrics/proxy/metrics" >$LOGS/metrics-service.txt ||
    fail "scrape through Service lvstamp-csi-metrics (port metrics)" || return 1
  families=$(grep -o '^| `lvstamp_[a-z_]*`' "$REPO/docs/metrics.md" | tr -d '|` ')
  [ "$(echo "$families" | wc -w)" -ge 10 ] || fail "docs/metrics.md lists too few families: $families" || return 1
  for f in $families; do grep -q "^# TYPE $f " $LOGS/metrics-service.txt || missing="$missing $f"; done
  [ -z "$missing" ] || fail "families of docs/metrics.md missing from the scrape:$missing" || return 1
  log "through Service lvstamp-csi-metrics: $(echo "$families" | wc -w) families of docs/metrics.md, all present; $(grep -c '^lvstamp_' $LOGS/metrics-service.txt) lvstamp_ samples"
  kubectl delete -f "$svc" --wait=true --timeout=120s
}

owner_id() { kubectl -n $NS get configmap lvstamp-csi-config -o jsonpath="{.data['owner-id']}"; }
# --- the node admins' CLI in the driver container (docs/install.md "The lvstamp CLI in the driver pod") ---
s_cli() {
  local out rc
  out=$(kubectl -n $NS exec ds/lvstamp-csi-node -c lvstamp-csi -- lvstamp list --vg lvstamp) ||
    { echo "$out"; fail "lvstamp list in the driver container"; return 1; }
  echo "$out"
  echo "$out" | grep -q "$(volume_of data-ext4)" || fail "lvstamp list does not show data-ext4's volume" || return 1
  # create is refused there (the cluster's owner ID, the cluster's GC): exit 2, nothing made
  out=$(kubectl -n $NS exec ds/lvstamp-csi-node -c lvstamp-csi -- lvstamp create by-hand --size 8Mi --vg lvstamp 2>&1)
  rc=$?
  echo "$out"
  [ $rc = 2 ] || fail "lvstamp create in the driver container exited $rc, want 2" || return 1
  echo "$out" | grep -q 'refused inside the driver pod' || fail "no refusal message" || return 1
  [ "$(lv_count by-hand)" = 0 ] || fail "lvstamp create made an LV in the driver container"
}

# --- K8S_INSTALL=helm: helm upgrade with a changed value while a pod uses a volume ---
driver_pods() { kubectl -n $NS get pods -l app.kubernetes.io/name=lvstamp-csi-node -o jsonpath='{.items[*].metadata.name}'; }
driver_pod_replaced() { local p; p=$(driver_pods) && [ -n "$p" ] && [ "$p" != "$1" ] && [ "$(echo "$p" | wc -w)" = 1 ]; }
no_driver_pod() { [ -z "$(driver_pods)" ]; }
helm_revisions() { hm history lvstamp | grep -c '^[0-9]'; }
s_helm_upgrade() {
  local owner uid old
  owner=$(owner_id) uid=$(jp pod/app-ext4 '{.metadata.uid}') old=$(driver_pod)
  # another owner ID without ownerIdReplaces: refused before anything changes (docs/upgrade.md)
  local other=0123456789abcdef0123456789abcdef out revs
  [ "$owner" != $other ] || other=fedcba9876543210fedcba9876543210
  revs=$(helm_revisions)
  if out=$(hm upgrade lvstamp "$CHART" -f "$HELM_VALUES" --set ownerId=$other 2>&1); then
    fail "helm upgrade to another owner ID was not refused"
    return 1
  fi
  echo "$out" | grep -qF "ownerId $other would replace the installed owner ID $owner" ||
    fail "the refused owner ID change does not name the installed ID: $out" || return 1
  log "refused: $(echo "$out" | tail -1 | cut -c1-160)…"
  [ "$(owner_id)" = "$owner" ] && [ "$(helm_revisions)" = "$revs" ] && [ "$(driver_pods)" = "$old" ] ||
    fail "the refused upgrade changed something (owner ID, revisions or driver pod)" || return 1
  # a changed value that changes the pod template: the DaemonSet rolls its pod
  hm upgrade lvstamp "$CHART" -f "$HELM_VALUES" --set logLevel=debug || fail "helm upgrade" || return 1
  wait_for "the DaemonSet rolled out: one driver pod, not $old" 900 driver_pod_replaced "$old" || return 1
  wait_for "the new driver pod with 4/4 containers ready" 900 driver_ready || return 1
  kubectl -n $NS get ds lvstamp-csi-node -o jsonpath='{.spec.template.spec.containers[0].args}' | grep -q -- '--log-level=debug' ||
    fail "the upgraded DaemonSet has no --log-level=debug" || return 1
  [ "$(owner_id)" = "$owner" ] || fail "the owner ID changed in the upgrade: $owner -> $(owner_id)" || return 1
  [ "$(jp pod/app-ext4 '{.metadata.uid}')" = "$uid" ] && phase_is pod/app-ext4 Running ||
    fail "app-ext4 was replaced or stopped by the upgrade" || return 1
  [ "$(jp pod/app-ext4 '{.status.containerStatuses[0].restartCount}')" = 0 ] || fail "app-ext4 restarted" || return 1
  [ "$(kubectl exec app-ext4 -- cat /data/hello)" = hello-ext4 ] || fail "data of app-ext4 after the upgrade" || return 1
  kubectl exec app-ext4 -- sh -c 'echo after-upgrade > /data/upgrade && sync && cat /data/upgrade' | grep -q after-upgrade ||
    fail "app-ext4 cannot write after the upgrade" || return 1
  hm history lvstamp
}

# --- K8S_INSTALL=helm: uninstall as docs/uninstall.md says, each of its steps in its order ---
# (s_cleanup deleted the test's claims first; this scenario leaves a Retain PV behind, as a user
# may have one, and follows the page: find what outlives the driver, clean it with the CLI in the
# driver pod, uninstall, check what is left on the node, delete the namespace)
lvstamp_pvs() { kubectl get pv -o jsonpath='{range .items[?(@.spec.csi.driver=="lvstamp.io")]}{.metadata.name} {.status.phase} {.spec.claimRef.namespace}/{.spec.claimRef.name} {.spec.csi.volumeHandle} {.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]}{"\n"}{end}'; }
in_driver() { kubectl -n $NS exec ds/lvstamp-csi-node -c lvstamp-csi -- "$@"; }
# delete_retained EXEC PV VOL: a Retain PV's volume as docs/uninstall.md and docs/node-retirement.md
# remove it, with the CLI in the driver pod (EXEC: in_driver or on_node): listed, the quarantine
# listed, the PV object deleted, the volume unstaged, then deleted with a zero wipe; no LV left
delete_retained() {
  local exec=$1 pv=$2 vol=$3 out
  out=$($exec lvstamp list --vg lvstamp) || { echo "$out"; fail "lvstamp list in the driver pod"; return 1; }
  echo "$out"
  echo "$out" | grep -q "$vol" || fail "lvstamp list does not show the Retain PV's volume $vol" || return 1
  $exec lvstamp quarantine list --vg lvstamp || fail "lvstamp quarantine list in the driver pod" || return 1
  kubectl delete pv "$pv" --wait=true --timeout=300s || return 1
  wait_for "volume $vol unstaged (no mount names it)" 300 sh -c "! grep -q '$vol' /proc/mounts" || return 1
  $exec lvstamp delete "$pv" --vg lvstamp --wipe zero || fail "lvstamp delete $pv in the driver pod" || return 1
  [ "$(lv_count "$vol")" = 0 ] || fail "an LV of $vol is left after lvstamp delete" || return 1
}
chart_objects_left() {
  local left
  left=$(kubectl get csidriver,storageclass,clusterrole,clusterrolebinding,volumesnapshotclass -l app.kubernetes.io/part-of=lvstamp -o name)
  left="$left$(kubectl get all,configmap,serviceaccount,role,rolebinding -A -l app.kubernetes.io/part-of=lvstamp -o name)"
  [ -z "$left" ] || { log "  left: $(echo "$left" | tr '\n' ' ')"; return 1; }
}
s_helm_uninstall() {
  local pv vol out
  # a PV with reclaimPolicy Retain whose claim is gone: the page's case of a volume that outlives its claim
  pvc keep lvstamp-ext4 32Mi && pod app-keep keep && wait_running app-keep 900 || return 1
  vol=$(volume_of keep) pv=$(jp pvc/keep '{.spec.volumeName}')
  kubectl patch pv "$pv" -p '{"spec":{"persistentVolumeReclaimPolicy":"Retain"}}' &&
    kubectl delete pod app-keep --wait=true --timeout=600s && kubectl delete pvc keep --wait=true --timeout=300s || return 1
  wait_for "PV $pv Released" 300 phase_is "pv/$pv" Released || return 1
  # step 1: every PV of lvstamp.io with its phase, claim, volume and node (the page's command);
  # none Bound: the claims are gone, and what is left is the Released Retain PV
  out=$(lvstamp_pvs)
  log "lvstamp.io PVs before the uninstall: $(echo "$out" | tr '\n' ';')"
  [ "$out" = "$pv Released default/keep $vol $NODE" ] || fail "want only the Released PV $pv (default/keep, volume $vol, node $NODE), got: $out" || return 1
  # steps 2 and 3: what the node holds, then the PV and its volume, with the CLI in the driver pod
  delete_retained in_driver "$pv" "$vol" || return 1
  # step 4: the uninstall
  hm uninstall lvstamp --wait --timeout 600s || fail "helm uninstall" || return 1
  hm list
  wait_for "the driver pod gone" 600 no_driver_pod || return 1
  # every object of the chart, the GC's Jobs included (the garbage collector follows their owners)
  wait_for "no object labelled app.kubernetes.io/part-of=lvstamp left" 300 chart_objects_left || return 1
  wait_for "CSINode $NODE no longer lists lvstamp.io (the driver removed its registration socket)" 300 sh -c \
    "! kubectl get csinode $NODE -o jsonpath='{.spec.drivers[*].name}' | grep -qw lvstamp.io" || return 1
  # step 5: what stays on the node, as the page lists it
  log "on the node after the uninstall: $(vgs --noheadings -o vg_name,lv_count,vg_size,vg_free --units b lvstamp | tr -s ' ');" \
    "$(ls /etc/lvm/archive | grep -c '^lvstamp_') archive files of lvstamp;" \
    "plugins/lvstamp.io: $(ls -A /var/lib/kubelet/plugins/lvstamp.io 2>&1 | tr '\n' ' ');" \
    "plugins_registry: $(ls -A /var/lib/kubelet/plugins_registry 2>&1 | tr '\n' ' ');" \
    "/run/lock/lvstamp: $(ls -A /run/lock/lvstamp 2>&1 | tr '\n' ' ')"
  [ "$(vgs --noheadings -o lv_count lvstamp | tr -d ' ')" = 0 ] || fail "VG lvstamp is not there with 0 LVs" || return 1
  ! dmsetup ls | grep -q '^lvstamp' || fail "device-mapper maps left: $(dmsetup ls)" || return 1
  ! ls -A /var/lib/kubelet/plugins_registry | grep -q lvstamp || fail "a registration socket of lvstamp.io is left" || return 1
  [ ! -S /var/lib/kubelet/plugins/lvstamp.io/csi.sock ] || fail "the driver's socket is left" || return 1
  # step 6: the namespace (helm never deletes it); the snapshot CRDs and controller are the cluster's and stay
  kubectl delete namespace $NS --wait=true --timeout=300s || fail "kubectl delete namespace $NS" || return 1
  # step 7 (optional, the node's admin): the volume group, when no other use is planned for it
  vgremove -qq lvstamp && pvremove -qq "$DISK" || fail "vgremove lvstamp, pvremove $DISK"
}

# --- K8S_INSTALL=kustomize: retire the node as docs/node-retirement.md says, each step in its order ---
# (after s_cleanup: the node's work is then a StatefulSet replica on its claim, reclaim policy
# Delete, and a Retain PV whose claim is gone; the tier has no other node, so what the page sends
# elsewhere stays Pending here)
node_pvs() { lvstamp_pvs | awk -v n=$NODE '$5 == n'; }
# the page's step 5 command: the node's driver pod, by field selector
node_driver_pod() { kubectl -n $NS get pods -l app.kubernetes.io/name=lvstamp-csi-node --field-selector spec.nodeName=$NODE -o jsonpath='{.items[0].metadata.name}' 2>/dev/null; }
on_node() { kubectl -n $NS exec "$(node_driver_pod)" -c lvstamp-csi -- "$@"; }
# node_capacities: the CSIStorageCapacity objects that carry the node's topology, one name a line
node_capacities() {
  kubectl -n $NS get csistoragecapacities -o jsonpath='{range .items[*]}{.metadata.name} {.nodeTopology.matchLabels}{"\n"}{end}' |
    grep -F "\"topology.lvstamp.io/node\":\"$NODE\"" | cut -d' ' -f1
}
db_ready() { [ "$(jp statefulset/db '{.status.readyReplicas}')" = 1 ]; }
gone() { ! kubectl get "$1" >/dev/null 2>&1; } # gone OBJECT
s_retire_node() {
  local keep_pv keep_vol db_pv db_vol out n caps
  sts_apply db 1 "[sh, -c, 'echo db > /data/who; sync; exec sleep 36000']" || return 1
  pvc keep lvstamp-ext4 32Mi && pod app-keep keep && wait_running app-keep 900 || return 1
  wait_for "StatefulSet db: 1/1 ready" 900 db_ready || { kubectl describe pod db-0 | tail -20; return 1; }
  keep_vol=$(volume_of keep) keep_pv=$(jp pvc/keep '{.spec.volumeName}')
  db_vol=$(volume_of data-db-0) db_pv=$(jp pvc/data-db-0 '{.spec.volumeName}')
  kubectl patch pv "$keep_pv" -p '{"spec":{"persistentVolumeReclaimPolicy":"Retain"}}' &&
    kubectl delete pod app-keep --wait=true --timeout=600s && kubectl delete pvc keep --wait=true --timeout=300s || return 1
  wait_for "PV $keep_pv Released" 300 phase_is "pv/$keep_pv" Released || return 1
  # step 1: the node's volumes (the page's listing with its node filter)
  out=$(node_pvs)
  log "step 1, the PVs of node $NODE: $(echo "$out" | tr '\n' ';')"
  [ "$(echo "$out" | sort)" = "$(printf '%s\n' "$db_pv Bound default/data-db-0 $db_vol $NODE" "$keep_pv Released default/keep $keep_vol $NODE" | sort)" ] ||
    fail "want the Bound PV $db_pv (default/data-db-0) and the Released PV $keep_pv (default/keep), got: $out" || return 1
  # step 2: cordon; the driver keeps running
  kubectl cordon $NODE || return 1
  # step 4: drain; the StatefulSet's pod is evicted and stays Pending (no other node)
  kubectl drain $NODE --ignore-daemonsets --delete-emptydir-data --timeout=600s || fail "kubectl drain" || return 1
  wait_for "db-0 evicted and Pending (node cordoned)" 600 phase_is pod/db-0 Pending || return 1
  wait_for "db-0's volume unstaged (no mount names $db_vol)" 600 sh -c "! grep -q '$db_vol' /proc/mounts" || return 1
  [ -n "$(node_driver_pod)" ] || fail "the drain took the driver pod (it must stay until step 6)" || return 1
  # the StatefulSet's claim: delete the claim, then the Pending pod; the driver deletes the volume
  kubectl delete pvc data-db-0 --wait=false && kubectl delete pod db-0 --wait=true --timeout=300s || return 1
  wait_for "PV $db_pv gone (the node's driver deleted volume $db_vol)" 600 gone "pv/$db_pv" || return 1
  [ "$(lv_count "$db_vol")" = 0 ] || fail "LV of $db_vol left after its claim was deleted" || return 1
  # the StatefulSet made a new pod and a new, empty claim: Pending here, as no node can take them
  wait_for "a new claim data-db-0, Pending" 300 phase_is pvc/data-db-0 Pending || return 1
  log "the new db-0: $(jp pod/db-0 '{.status.phase}'); $(events_of Pod db-0 | grep FailedScheduling | tail -1)"
  kubectl delete statefulset db --wait=true --timeout=300s && kubectl delete pvc data-db-0 --wait=true --timeout=300s || return 1
  out=$(node_pvs)
  [ "$out" = "$keep_pv Released default/keep $keep_vol $NODE" ] || fail "after step 4 want only the Released PV $keep_pv, got: $out" || return 1
  # step 5: what is left, with the CLI in the node's driver pod
  delete_retained on_node "$keep_pv" "$keep_vol" || return 1
  on_node lvstamp quarantine purge --vg lvstamp --apply || fail "lvstamp quarantine purge --apply" || return 1
  [ -z "$(node_pvs)" ] || fail "PVs of node $NODE left: $(node_pvs)" || return 1
  [ "$(lv_count)" = 0 ] || fail "LVs left in VG lvstamp: $(lvs --noheadings -o lv_name lvstamp)" || return 1
  # step 6: the node object; its driver pod (pod garbage collector), its CSINode (owner reference)
  caps=$(node_capacities)
  log "CSIStorageCapacity objects of node $NODE before its removal: $(echo "$caps" | tr '\n' ' ')"
  [ -n "$caps" ] || fail "no CSIStorageCapacity carries the node's topology before its removal" || return 1
  kubectl delete node $NODE --wait=true --timeout=300s || fail "kubectl delete node $NODE" || return 1
  wait_for "the node's driver pod gone" 600 no_driver_pod || return 1
  wait_for "CSINode $NODE gone" 300 gone "csinode/$NODE" || return 1
  wait_for "the driver stopped: its registration socket gone from the node" 300 sh -c \
    "! ls -A /var/lib/kubelet/plugins_registry | grep -q lvstamp" || return 1
  [ -z "$(lvstamp_pvs | grep " $NODE\$")" ] || fail "a PV still names node $NODE: $(lvstamp_pvs)" || return 1
  # the capacities stay (owned by the DaemonSet, not by the pod): the page deletes them by name
  kubectl -n $NS get csistoragecapacities -o custom-columns=NAME:.metadata.name,CLASS:.storageClassName,NODE:.nodeTopology.matchLabels
  n=$(node_capacities | wc -l)
  log "CSIStorageCapacity objects of node $NODE after its removal: $n"
  [ "$n" = 0 ] || kubectl -n $NS delete csistoragecapacities $(node_capacities) || return 1
  [ -z "$(node_capacities)" ] || fail "CSIStorageCapacity objects of node $NODE left" || return 1
  # step 7: on the machine, the volume group
  [ "$(vgs --noheadings -o lv_count lvstamp | tr -d ' ')" = 0 ] || fail "VG lvstamp is not empty" || return 1
  vgremove -qq lvstamp && pvremove -qq "$DISK" || fail "vgremove lvstamp, pvremove $DISK"
}

# --- a node that is already gone (docs/node-retirement.md "A node that is already gone"): the
# node's machine dies with a claim's pod on it and its node object is deleted; the claim deleted
# leaves its PV Released, removed by hand; on the machine the volume is still an lvstamp volume of
# the owner ID, read and deleted with the CLI; then the node comes back for the scenarios after it ---
no_task_running() { ! ctr -n k8s.io tasks ls 2>/dev/null | awk '$3 == "RUNNING"' | grep -q .; }
pv_finalizers_are() { [ "$(jp "pv/$1" '{.metadata.finalizers}')" = "$2" ]; } # pv_finalizers_are PV JSON
# node_dies: the kubelet and every container stop, as on a machine that died (the disk stays)
node_dies() {
  local cid
  kill "$(cat $STATE/kubelet.pid)" || return 1
  wait_for "kubelet stopped" 120 sh -c "! kill -0 $(cat $STATE/kubelet.pid)" || return 1
  for cid in $(ctr -n k8s.io tasks ls -q); do ctr -n k8s.io tasks kill -s KILL "$cid" >/dev/null 2>&1; done
  wait_for "every container of the node stopped" 120 no_task_running
}
# node_back: the kubelet started again registers the node again; the DaemonSet's driver pod
# runs there and registers with the kubelet
node_back() {
  mv "$LOGS/kubelet.log" "$LOGS/kubelet-until-gone.log"
  kubelet_start
  wait_for "node $NODE registered again and Ready" 600 node_ready || { tails kubelet; return 1; }
  wait_for "the DaemonSet's new driver pod with 4/4 containers ready" 900 driver_ready || return 1
  wait_for "CSINode $NODE lists lvstamp.io again" 300 csinode_lists_driver
}
s_node_gone() {
  local vol pv mark rc
  mark="still-here-$(date +%s)"
  # the earlier scenarios' pods first: the node dies with this scenario's pod only
  kubectl delete pod --all --wait=true --timeout=600s || return 1
  pvc gone lvstamp-ext4 32Mi && pod app-gone gone && wait_running app-gone 900 || return 1
  kubectl exec app-gone -- sh -c "echo $mark > /data/marker && sync" || fail "write in app-gone" || return 1
  vol=$(volume_of gone) pv=$(jp pvc/gone '{.spec.volumeName}')
  log "PV $pv (volume $vol) Bound: finalizers $(jp "pv/$pv" '{.metadata.finalizers}')"
  node_dies || return 1
  node_gone_steps "$pv" "$vol" "$mark"
  rc=$?
  node_back && [ $rc = 0 ] || return 1
  # nothing of the volume came back with the node: no PV, LV, map or mount
  no_pv_of "$vol" && [ "$(lv_count "$vol")" = 0 ] && ! dmsetup ls | grep -q "$vol" && ! mounted_vol "$vol" ||
    fail "something of volume $vol is back with the node: $(lvs_names | tr '\n' ' '); $(dmsetup ls | tr '\n' ' ')"
}
node_gone_steps() { # node_gone_steps PV VOLUME MARK: the page's section, the node dead
  local pv=$1 vol=$2 mark=$3 out dev dir m
  # a cloud's node controller deletes the node object; the pod garbage collector its pods
  kubectl delete node $NODE --wait=true --timeout=300s || return 1
  wait_for "pod app-gone deleted (pod garbage collector)" 600 gone pod/app-gone || return 1
  wait_for "the node's driver pod deleted" 600 no_driver_pod || return 1
  wait_for "CSINode $NODE gone" 300 gone "csinode/$NODE" || return 1
  # the claim deleted: its PV Released, and nothing deletes it (no provisioner of that node)
  kubectl delete pvc gone --wait=true --timeout=300s || return 1
  wait_for "PV $pv Released" 300 phase_is "pv/$pv" Released || return 1
  sleep 20
  log "PV $pv 20 s later: $(jp "pv/$pv" '{.status.phase}'), finalizers $(jp "pv/$pv" '{.metadata.finalizers}');" \
    "its events: $(events_of PersistentVolume "$pv" | tr '\n' ';')"
  phase_is "pv/$pv" Released || fail "PV $pv did not stay Released" || return 1
  # the page's removal: kubectl delete pv waits on the provisioner's finalizer, which only the
  # node's provisioner removes; the finalizer patched away, the PV goes
  ! kubectl delete pv "$pv" --timeout=30s || fail "kubectl delete pv $pv returned: nothing held the PV" || return 1
  wait_for "PV $pv held by the provisioner's finalizer only" 120 pv_finalizers_are "$pv" \
    '["external-provisioner.volume.kubernetes.io/finalizer"]' ||
    fail "PV $pv: finalizers $(jp "pv/$pv" '{.metadata.finalizers}'), deletionTimestamp $(jp "pv/$pv" '{.metadata.deletionTimestamp}')" || return 1
  kubectl patch pv "$pv" --type=merge -p '{"metadata":{"finalizers":null}}' || return 1
  wait_for "PV $pv gone" 120 gone "pv/$pv" || return 1
  # on the machine, what one that died holds when it boots without its kubelet: the LV, nothing
  # mounted, no data device (the tier's node is the same machine: the dead kubelet's mounts of
  # the volume are unmounted and its data device removed first)
  awk -v v="$vol" 'index($1, v) {print $2}' /proc/mounts | sort -ru | xargs -r umount || return 1
  ! mounted_vol "$vol" || fail "mounts of $vol left: $(grep "$vol" /proc/mounts)" || return 1
  lvstamp_cli detach "$pv" --vg lvstamp || return 1
  out=$(lvstamp_cli list --vg lvstamp) || { echo "$out"; fail "lvstamp list"; return 1; }
  echo "$out"
  [ "$(echo "$out" | awk -v id="$vol" '$2 == id {print $1, $(NF - 2), $(NF - 1), $NF}')" = "$pv ok - -" ] ||
    fail "lvstamp list does not show $pv (volume $vol) with a valid header, no data device, not mounted" || return 1
  dev=$(lvstamp_cli attach "$pv" --vg lvstamp) || fail "lvstamp attach $pv" || return 1
  [ "$dev" = "/dev/mapper/lvstamp-$vol" ] || fail "lvstamp attach printed '$dev'" || return 1
  dir=$(mktemp -d) && mount -o ro "$dev" "$dir" || fail "mount -o ro $dev" || return 1
  m=$(cat "$dir/marker")
  umount "$dir" && rmdir "$dir" || return 1
  [ "$m" = "$mark" ] || fail "$dev reads '$m', want what app-gone wrote: $mark" || return 1
  log "$dev (lvstamp attach $pv) mounted read-only reads what app-gone wrote"
  lvstamp_cli detach "$pv" --vg lvstamp && lvstamp_cli delete "$pv" --vg lvstamp --wipe zero || fail "lvstamp detach, delete $pv" || return 1
  [ "$(lv_count "$vol")" = 0 ] || fail "an LV of $vol is left: $(lvs_names | tr '\n' ' ')" || return 1
  ! dmsetup ls | grep -q "$vol" || fail "a device-mapper map of $vol is left: $(dmsetup ls)"
}

# proc_ticks: "pid ticks comm" for every live process, ticks = utime + stime (proc(5) stat fields
# 14 and 15, 1/100 s): ps's cputimes has whole seconds, too coarse to sum over 30 processes
proc_ticks() {
  local f line comm rest
  for f in /proc/[0-9]*/stat; do
    { read -r line <"$f"; } 2>/dev/null || continue # the process ended
    comm=${line#*(} comm=${comm%)*} rest=(${line##*) })
    echo "${line%% *} $((rest[11] + rest[12])) ${comm// /_}"
  done
}
# s_idle (by hand; K8S_IDLE_SECONDS, 120): the node's CPU while no scenario runs, per live process,
# over that many seconds after the deployment: what the cluster costs the emulated VM idle
s_idle() {
  local secs=${K8S_IDLE_SECONDS:-120} before after busy
  busy=$(cpu_busy_ticks); before=$(proc_ticks)
  sleep "$secs"
  busy=$(($(cpu_busy_ticks) - busy)); after=$(proc_ticks)
  awk -v secs="$secs" -v cpus="$(nproc)" -v busy="$busy" '
    FNR == NR || !(($1, $3) in t0) { t0[$1, $3] = $2; next }
    { d = $2 - t0[$1, $3]; if (d > 0) { sum[$3] += d; total += d } }
    END {
      printf "idle %d s: the VM busy %.1f s of %d vCPU-s; live processes %.1f s:", secs, busy / 100, secs * cpus, total / 100
      for (c in sum) if (sum[c] >= 10) printf " %s %.1f", c, sum[c] / 100
      printf "\n"
    }' <(echo "$before") <(echo "$after") | sed 's/^/  /' | tee -a "$LOGS/cpu.txt"
}

s_cleanup() {
  s_second_node_down || return 1
  kubectl delete pod --all --wait=true --timeout=600s && kubectl delete pvc --all --wait=true --timeout=300s || return 1
  wait_for "every PV gone" 300 sh -c '[ -z "$(kubectl get pv -o name)" ]' || return 1
  [ "$(lv_count)" = 0 ] || fail "LVs left in VG lvstamp: $(lvs --noheadings -o lv_name lvstamp)" || return 1
  ! dmsetup ls | grep -q '^lvstamp' || fail "device-mapper maps left: $(dmsetup ls)" || return 1
  ! grep -q 'kubernetes.io~csi' /proc/mounts || fail "CSI mounts left: $(grep 'kubernetes.io~csi' /proc/mounts)"
}

check "volume group lvstamp on $DISK" s_vg
check "one-node cluster up (control plane on the host; containerd, kubelet in the VM)" s_cluster || exit 1
[ $FAILED = 0 ] || exit 1
check "a second node's lvstamp-csi (vm-b, VG lvstampb) and external-resizer, first to hold the resizer Lease: it runs the trivial resizer (node-only expansion)" s_second_node
[ $FAILED = 0 ] || exit 1
check "$([ "$K8S_INSTALL" = helm ] && echo 'helm install' || echo 'kubectl apply -k'): DaemonSet Running, driver registered with the kubelet" s_deploy
[ $FAILED = 0 ] || exit 1
check "CSIStorageCapacity published for the node" s_capacity_published
check "ext4, xfs and raw-block PVCs (WaitForFirstConsumer): pods Running, data written and read back" s_volumes
check "PVC expansion while the pod runs, the resizer on the other node: the filesystem in the pod grows, no warning or failure condition on the claim" s_expand
check "pod deleted and recreated on the same PVC: data still there" s_recreate_pod
check "the lvstamp CLI in the driver container: list shows the volumes, create is refused" s_cli
if [ "$K8S_INSTALL" = helm ]; then
  check "helm upgrade to another owner ID refused, nothing changed; helm upgrade with a changed value (logLevel) while app-ext4 uses its volume: driver pod rolled, app pod untouched, data kept, owner ID kept" s_helm_upgrade
fi
check "driver pod deleted: the DaemonSet restarts it, the volume keeps working and unpublishes" s_driver_restart
check "PVC deleted: PV and LV gone" s_delete_pvc
check "published capacity drops after the creates" s_capacity_drops
check "PVC deleted while its CreateVolume is in flight (provisioner restarted): a volume with no PVC or PV is left" s_leak
check "GC CronJob: a Job from it reports the leaked volume in a dry run, removes it with apply" s_gc
check "a PV deleted by mistake (Retain): the GC quarantines its volume, lvstamp quarantine restore brings it back, a static PV and claim read the old bytes" s_quarantine
check "thin PVC -> VolumeSnapshot (class lvstamp) ready -> PVC from it reads the same bytes; source deleted, the GC keeps the snapshot; snapshot deleted, its LV gone" s_snapshot_restore
check "StatefulSet of 3 scaled to 5, then to 1: each pod reads its own claim; the claims stay" s_statefulset
check "kubectl drain (the app's pods) and uncordon: the pod goes, its volume is unstaged, the LV stays; it comes back with its data" s_drain
check "StatefulSet and its PVCs deleted: every PV and LV gone" s_statefulset_delete
check "generic ephemeral volume: claim made for the pod, owned by it, gone with it (PV and LV too)" s_ephemeral
check "ReadWriteOncePod: a second pod on the claim stays Pending with the scheduler's reason" s_rwop
check "fsGroup: a non-root pod writes into its ext4 and xfs volumes (fsGroupPolicy File)" s_fsgroup
check "unsatisfiable resize (more than the VG): the claim's NodeResizeError carries the driver's OUT_OF_RANGE, the pod keeps its data; lowering the request recovers, the volume grows and is usable" s_resize_unsatisfiable
check "kubelet restarted while a pod uses a volume: the pod keeps running with its data, the volume stays mounted" s_kubelet_restart
check "the driver's /healthz and metrics answer on the pod's ports, and through the monitoring Service with every documented family" s_probe_metrics
by_hand "the node idle: CPU per process" s_idle
by_hand "a node that is already gone (docs/node-retirement.md): the node dies with a claim's pod and is deleted, the claim deleted leaves its PV Released, removed by hand; the volume read and deleted with the CLI on the machine; the node back" s_node_gone
check "cleanup: no LV, map or mount left on the node" s_cleanup
if [ "$K8S_INSTALL" = kustomize ]; then
  check "retire the node as docs/node-retirement.md says: its PVs listed, cordon, drain, the StatefulSet's claim deleted (the driver deletes its volume), a Retain PV's volume deleted with the CLI in the node's driver pod, the node deleted (its driver pod and CSINode go), its capacities deleted, the VG removed" s_retire_node
fi
if [ "$K8S_INSTALL" = helm ]; then
  check "uninstall as docs/uninstall.md says: a Retain PV's volume found and deleted with the CLI in the driver pod, helm uninstall, every object of the chart gone, the VG left empty, the namespace deleted" s_helm_uninstall
fi
