# cluster.sh: a one-node Kubernetes, sourced on both sides of the VM's NIC. On the host (by
# control-plane.sh, in the tier's network namespace): etcd, kube-apiserver,
# kube-controller-manager and kube-scheduler (control_plane_up). In the test VM (by node-test.sh
# and store.sh): containerd 2 + runc + CNI bridge and the kubelet (guest_prepare, containerd_up,
# node_join, kubelet_up; stopped completely by cluster_down), on the VM's tmpfs. All from
# test-e2e/parts (NODE_PATH), started with bounded waits; logs go to $LOGS.
# Needs: NODE_PATH (the parts' directories: kubernetes, etcd, containerd, runc), PKI (ca.crt,
#        apiserver.{crt,key}, sa.{key,pub}, tokens.csv), LOGS; in the VM IMAGES (OCI archives)
#        and STORE_DISK (optional): the image store disk made by store.sh, mounted at
#        /var/lib/containerd. STATE: the pid files and kubeconfig (default /run/lvstamp-k8s).
export PATH=$NODE_PATH:$PATH
STATE=${STATE:-/run/lvstamp-k8s}
NODE=vm
# the VM's NIC (eth0) and the host side of its tap device, where the control plane listens
NODE_IP=10.99.0.1
API_IP=10.99.0.254
TOKEN=lvstamp-k8s-admin-token
# the port of kubectl-relay.mjs (control-plane.sh) on API_IP: the VM's kubectl commands run there
KUBECTL_RELAY_PORT=6444

now() { awk '{print $1}' /proc/uptime; }
log() { echo "[$(now)s] $*"; }
since() { awk "BEGIN{printf \"%.0f\", $(now)-$1}"; }
# SLOW: how much slower than the reference node this one runs (calibrate), at least 1 and at
# most 4; every wait_for bound is multiplied by it.
SLOW=1
# CAL_REF: seconds of calibrate's loop on the reference node, the test VM (qemu TCG, 2 host
# cores) at load average ~1 (test-e2e/k8s/README.md, "Times").
CAL_REF=${CAL_REF:-1.0}
# calibrate: times a fixed CPU loop (awk, 3 million additions) and sets SLOW from it
calibrate() {
  local s t; s=$(now)
  awk 'BEGIN { for (i = 0; i < 3000000; i++) x += i }'
  t=$(awk "BEGIN { printf \"%.2f\", $(now) - $s }")
  SLOW=$(awk "BEGIN { f = $t / $CAL_REF; f = (f == int(f)) ? f : int(f) + 1; print (f < 1) ? 1 : (f > 4) ? 4 : f }")
  log "calibration: the CPU loop took $t s (reference $CAL_REF s): every wait bound x$SLOW"
}
# wait_for DESC TIMEOUT_S CMD...: poll CMD until it succeeds; false after TIMEOUT_S x SLOW
# seconds. Says what it waited for and how long it took either way. A poll is usually a kubectl
# call, which costs the emulated VM about a second of CPU (README.md "Times"): every second for
# the first 20 s, every 2 s until 60 s, every 4 s after that.
wait_for() {
  local desc=$1 to=$(($2 * SLOW)) s el; s=$(now); shift 2
  while :; do
    if "$@" >/dev/null 2>&1; then log "$desc ($(since $s) s)"; return 0; fi
    el=$(since $s)
    [ "$el" -ge "$to" ] && { log "TIMEOUT after $to s: $desc"; return 1; }
    sleep $((el < 20 ? 1 : el < 60 ? 2 : 4))
  done
}
# start NAME CMD...: a background process with its own log, stopped by cluster_down
start() { local name=$1; shift; "$@" >"$LOGS/$name.log" 2>&1 & echo $! >$STATE/$name.pid; }
# supervise NAME CMD...: like start, restarted when it exits (as a real node's init system does:
# the controller-manager exits when API discovery times out, which a slow emulated VM sees)
supervise() {
  local name=$1; shift
  (
    trap 'kill $child 2>/dev/null; exit 0' TERM
    while :; do
      "$@" &
      child=$!
      wait $child
      echo "== $name exited ($?); restarting in 2 s"
      sleep 2
    done
  ) >"$LOGS/$name.log" 2>&1 &
  echo $! >$STATE/$name.pid
}
tails() { local f; for f in "$@"; do echo "--- last lines of $f.log"; tail -n 25 "$LOGS/$f.log" 2>/dev/null; done; }
alive() { kill -0 "$(cat $STATE/$1.pid)" 2>/dev/null || { log "$1 exited"; tails "$1"; return 1; }; }

guest_prepare() {
  mkdir -p $STATE
  # cgroup v2 (the VM's init mounts none; Kubernetes 1.35+ kubelets refuse cgroup v1): the
  # unified hierarchy with every controller delegated below the root; the kubelet uses cgroupfs
  if ! mountpoint -q /sys/fs/cgroup; then
    mount -t cgroup2 none /sys/fs/cgroup || { log "cannot mount cgroup2 on /sys/fs/cgroup"; return 1; }
  fi
  local ctl
  for ctl in $(cat /sys/fs/cgroup/cgroup.controllers); do
    echo "+$ctl" >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || log "cgroup controller $ctl not delegated"
  done
  log "cgroup v2 controllers delegated: $(cat /sys/fs/cgroup/cgroup.subtree_control)"
  # The node's own processes (this script, then containerd, kubelet, kubectl) in one cgroup, as a real node's init system puts
  # them in system.slice. Left in the root cgroup, every runnable thread there weighs 100 (a
  # nice-0 task) against 174 for the kubelet's whole kubepods group (cpu.weight of 2 CPUs), and
  # the driver container (request 20m: cpu.weight 6, beside three sidecars) got a few % of the
  # saturated emulated CPUs: it took 7 min to start and its answers missed the kubelet's 1 s
  # GetInfo deadline (k8s/README.md, "Times").
  mkdir -p /sys/fs/cgroup/node-system || { log "cannot create /sys/fs/cgroup/node-system"; return 1; }
  local pid
  for pid in $$ $BASHPID; do
    echo $pid >/sys/fs/cgroup/node-system/cgroup.procs || { log "cannot move $pid into node-system"; return 1; }
  done
  log "node processes in cgroup node-system (cpu.weight $(cat /sys/fs/cgroup/node-system/cpu.weight 2>/dev/null || echo '?'))"
  # the root is an overlayfs, which cannot be an overlayfs upper layer: tmpfs for the state dirs
  local d
  # the image store: a disk prepared once (vm/store.sh) whose writes the VM discards, else a tmpfs
  if [ -n "${STORE_DISK:-}" ]; then
    mkdir -p /var/lib/containerd
    mount -t ext4 "$STORE_DISK" /var/lib/containerd || { log "cannot mount the image store $STORE_DISK"; return 1; }
  fi
  for d in /var/lib/containerd /var/lib/kubelet /var/log/pods /var/log/containers /etc/cni/net.d \
    /etc/lvm/archive /etc/lvm/backup; do
    mkdir -p $d; mountpoint -q $d || mount -t tmpfs -o mode=755 tmpfs $d
  done
  mount --make-rshared /
  modprobe -a overlay bridge br_netfilter veth dummy 2>/dev/null
  sysctl -qw net.ipv4.ip_forward=1
  # the node IP on the VM's NIC (run-in-vm.sh VM_NET), the control plane's side as its gateway
  ip addr add $NODE_IP/24 dev eth0 && ip link set eth0 up && ip route add default via $API_IP dev eth0 ||
    { log "cannot configure eth0 (VM_NET): $(ip -br link 2>&1 | tr '\n' ' ')"; return 1; }
  grep -q " $NODE\$" /etc/hosts || echo "$NODE_IP $NODE" >>/etc/hosts
  [ -s /etc/resolv.conf ] || echo "nameserver $API_IP" >/etc/resolv.conf
  [ -s /etc/machine-id ] || echo 0123456789abcdef0123456789abcdef >/etc/machine-id
  # no kube-proxy: one DNAT rule stands in for the "kubernetes" Service (10.0.0.1:443), so pods
  # (the sidecars, the GC job) reach the API server on the host with their in-cluster
  # configuration (the host side routes the pod network 10.88.0.0/16 back to $NODE_IP)
  iptables -t nat -A PREROUTING -d 10.0.0.1 -p tcp --dport 443 -j DNAT --to-destination $API_IP:6443 &&
    iptables -t nat -A OUTPUT -d 10.0.0.1 -p tcp --dport 443 -j DNAT --to-destination $API_IP:6443 ||
    { log "iptables DNAT for the kubernetes Service failed"; return 1; }
  cat >/etc/cni/net.d/10-bridge.conflist <<CNI
{ "cniVersion": "0.4.0", "name": "lvstamp-k8s", "plugins": [
  { "type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false,
    "ipam": { "type": "host-local", "ranges": [[{ "subnet": "10.88.0.0/16" }]], "routes": [{ "dst": "0.0.0.0/0" }] } } ] }
CNI
}

# containerd_start: containerd with the CRI plugin on /var/lib/containerd (the image store disk
# or a tmpfs), answering within a bounded wait
containerd_start() {
  mkdir -p /etc/containerd
  # config version 3 (containerd 2.x): the CRI plugin's runtime and image services are separate
  # plugins; runc and the shim are the parts' (first on PATH)
  cat >/etc/containerd/config.toml <<TOML
version = 3
root = "/var/lib/containerd"
state = "/run/containerd"
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "localhost/pause:3.4.1"
[plugins.'io.containerd.cri.v1.runtime']
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = "$(command -v runc)"
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "/etc/cni/net.d"
TOML
  start containerd containerd --config /etc/containerd/config.toml
  wait_for "containerd answers" 300 ctr version || { tails containerd; return 1; }
}

# images_import ARCHIVE...: ctr import into the CRI namespace. On the image store disk the
# archives hold only the blobs the store lacks (build-images.sh thin); ctr skips layers whose
# snapshots exist.
images_import() {
  local a s; s=$(now)
  [ $# -gt 0 ] || { log "nothing to import: the store holds every image: $(ctr -n k8s.io images ls -q | grep -v '^sha256:' | tr '\n' ' ')"; return 0; }
  for a in "$@"; do
    ctr -n k8s.io images import --all-platforms "$a" >/dev/null || { log "ctr import $a failed"; return 1; }
  done
  log "images imported ($(since $s) s, $(du -chL "$@" 2>/dev/null | tail -1 | cut -f1) read): $(ctr -n k8s.io images ls -q | grep -v '^sha256:' | tr '\n' ' ')"
}

containerd_up() { containerd_start && images_import $IMAGES; }

# What the API server serves and runs, trimmed to what the tier uses, for a faster start on a
# slow node: no API priority and fairness (one client), no autoscaling API, and none of the
# default admission plugins for objects the tier never makes (quotas, limit ranges, ingress
# classes, certificates, webhooks and admission policies) or for pod security (the namespaces
# set `privileged` anyway). Kept: ServiceAccount (the sidecars' tokens), Priority,
# StorageObjectInUseProtection (PVC/PV protection finalizers), PersistentVolumeClaimResize,
# DefaultStorageClass, NamespaceLifecycle, TaintNodesByCondition, RuntimeClass, NodeRestriction.
APISERVER_TRIMS=(--enable-priority-and-fairness=false --runtime-config=autoscaling/v1=false,autoscaling/v2=false
  --enable-admission-plugins=NodeRestriction
  --disable-admission-plugins=ResourceQuota,LimitRanger,DefaultIngressClass,CertificateApproval,CertificateSigning,CertificateSubjectRestriction,ClusterTrustBundleAttest,MutatingAdmissionWebhook,ValidatingAdmissionWebhook,ValidatingAdmissionPolicy,PodSecurity,DefaultTolerationSeconds)
# The controllers the tier needs (kube-controller-manager --controllers), no others: service
# accounts and their tokens, namespaces, the garbage collector (owner references: a Job's pods,
# the CSIStorageCapacity objects), DaemonSet, Deployment/ReplicaSet (snapshot-controller), Job and
# CronJob (the GC), StatefulSet, the PV binder and expander, attach/detach, PVC and PV protection,
# generic ephemeral volumes, kube-root-ca.crt (projected service account volumes), ServiceCIDRs,
# the node lifecycle controller: it removes the not-ready taint the TaintNodesByCondition
# admission plugin puts on a new node (without it no pod without that toleration is scheduled),
# and the pod garbage collector (a deleted node's pods, docs/node-retirement.md step 6).
# The node lifecycle controller's grace periods are long (test-only): the emulated node's status updates can come late.
KCM_CONTROLLERS=serviceaccount-token-controller,serviceaccount-controller,namespace-controller,garbage-collector-controller,daemonset-controller,deployment-controller,replicaset-controller,job-controller,cronjob-controller,statefulset-controller,persistentvolume-binder-controller,persistentvolume-expander-controller,persistentvolume-attach-detach-controller,persistentvolumeclaim-protection-controller,persistentvolume-protection-controller,ephemeral-volume-controller,root-ca-certificate-publisher-controller,service-cidr-controller,node-lifecycle-controller,endpoints-controller,endpointslice-controller,pod-garbage-collector-controller
KCM_NODE_GRACE=(--node-monitor-grace-period=300s --node-startup-grace-period=600s)

# kubeconfig FILE SERVER: the admin token's kubeconfig for the API server at SERVER
kubeconfig() {
  cat >"$1" <<KCF
apiVersion: v1
kind: Config
clusters: [{name: node, cluster: {server: "$2", certificate-authority: $PKI/ca.crt}}]
users: [{name: admin, user: {token: $TOKEN}}]
contexts: [{name: node, context: {cluster: node, user: admin}}]
current-context: node
KCF
}
apiserver_ready() { curl -sfk -H "Authorization: Bearer $TOKEN" "https://$1:6443/readyz"; } # apiserver_ready IP

# control_plane_up: on the host, in the tier's network namespace (control-plane.sh)
control_plane_up() {
  mkdir -p $STATE
  # etcd: one member, no metrics listener; a snapshot every 100000 writes instead of 10000 (the
  # tier never reaches it), so no snapshot I/O during the run
  start etcd etcd --name node --data-dir $STATE/etcd --listen-client-urls http://127.0.0.1:2379 \
    --advertise-client-urls http://127.0.0.1:2379 --listen-peer-urls http://127.0.0.1:2380 \
    --initial-advertise-peer-urls http://127.0.0.1:2380 --initial-cluster node=http://127.0.0.1:2380 \
    --listen-metrics-urls '' --snapshot-count=100000
  wait_for "etcd healthy" 300 curl -sf http://127.0.0.1:2379/health || { tails etcd; return 1; }
  start apiserver kube-apiserver --etcd-servers=http://127.0.0.1:2379 \
    --bind-address=0.0.0.0 --advertise-address=$API_IP --secure-port=6443 \
    --tls-cert-file=$PKI/apiserver.crt --tls-private-key-file=$PKI/apiserver.key --client-ca-file=$PKI/ca.crt \
    --token-auth-file=$PKI/tokens.csv --authorization-mode=Node,RBAC \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file=$PKI/sa.pub --service-account-signing-key-file=$PKI/sa.key \
    --api-audiences=https://kubernetes.default.svc.cluster.local \
    --service-cluster-ip-range=10.0.0.0/24 --endpoint-reconciler-type=none --allow-privileged=true \
    --kubelet-preferred-address-types=InternalIP "${APISERVER_TRIMS[@]}" \
    --cert-dir=$STATE/apiserver-certs --v=1
  wait_for "kube-apiserver /readyz" 1500 apiserver_ready 127.0.0.1 || { alive apiserver; tails apiserver; return 1; }
  export KUBECONFIG=$STATE/kubeconfig
  kubeconfig $KUBECONFIG https://127.0.0.1:6443
  supervise kcm kube-controller-manager --kubeconfig=$KUBECONFIG --leader-elect=false \
    --service-account-private-key-file=$PKI/sa.key --root-ca-file=$PKI/ca.crt \
    --bind-address=127.0.0.1 --cert-dir=$STATE/kcm-certs --controllers=$KCM_CONTROLLERS "${KCM_NODE_GRACE[@]}" --v=1
  supervise scheduler kube-scheduler --kubeconfig=$KUBECONFIG --leader-elect=false \
    --bind-address=127.0.0.1 --cert-dir=$STATE/sched-certs --v=1
}

kubelet_config() { # kubelet_config FILE: the kubelet's configuration (also for a restart)
  cat >"$1" <<KCONF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}, x509: {}}
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
failSwapOn: false
address: $NODE_IP
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
resolvConf: /etc/resolv.conf
runtimeRequestTimeout: 10m
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "1Mi", nodefs.available: "1%", imagefs.available: "1%"}
nodeStatusUpdateFrequency: 10s
fileCheckFrequency: 5s
syncFrequency: 10s
serializeImagePulls: false
KCONF
}
kubelet_start() {
  start kubelet kubelet --config=$STATE/kubelet.yaml --kubeconfig=$KUBECONFIG \
    --node-ip=$NODE_IP --hostname-override=$NODE --root-dir=/var/lib/kubelet --v=2
}
node_ready() { kubectl get node $NODE -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' | grep -qx True; }
# node_join: in the VM, the control plane on the host answers through the NIC; KUBECONFIG set
node_join() {
  wait_for "kube-apiserver /readyz at $API_IP (the host's control plane)" 900 apiserver_ready $API_IP ||
    { tails control-plane apiserver; return 1; }
  export KUBECONFIG=$STATE/kubeconfig
  kubeconfig $KUBECONFIG https://$API_IP:6443
}
kubelet_up() {
  kubelet_config $STATE/kubelet.yaml
  kubelet_start
  wait_for "node $NODE Ready" 900 node_ready || { alive kubelet; tails kubelet; return 1; }
  wait_for "ServiceAccount default/default (controller-manager)" 600 kubectl get sa default ||
    { tails kcm; return 1; }
}

# cpu_busy_ticks: the busy CPU time of all vCPUs since boot, in /proc/stat's ticks (100 a second)
cpu_busy_ticks() {
  local user nice system idle iowait irq softirq steal
  read -r _ user nice system idle iowait irq softirq steal _ </proc/stat
  echo $((user + nice + system + irq + softirq + steal))
}
# cpu_report: where the VM's CPU went since boot, to LOGS/cpu.txt and one summary line: the busy
# share of all vCPUs (/proc/stat), each cgroup's CPU seconds (cpu.stat; a pod's cgroup is named by
# its /var/log/pods directory; exited pods' cgroups are gone), and the live processes' CPU time
cpu_report() {
  local f=$LOGS/cpu.txt d uid name user nice system idle iowait irq softirq
  {
    read -r _ user nice system idle iowait irq softirq _ </proc/stat
    echo "vCPUs $(nproc); since boot: busy $(($(cpu_busy_ticks) / 100)) s, idle $((idle / 100)) s, iowait $((iowait / 100)) s (user $((user / 100)), system $((system / 100)), softirq $((softirq / 100)))"
    echo "--- cgroups: CPU seconds"
    find /sys/fs/cgroup -maxdepth 4 -name cpu.stat | while read -r d; do
      d=${d%/cpu.stat}; name=${d#/sys/fs/cgroup}
      uid=${d##*/pod}; uid=${uid//_/-}
      [ "$uid" != "$d" ] && name="$name $(cd /var/log/pods 2>/dev/null && ls -d *_"$uid" 2>/dev/null)"
      awk -v n="${name:-/}" '$1 == "usage_usec" {printf "%8.1f  %s\n", $2 / 1e6, n}' "$d/cpu.stat"
    done | sort -rn
    echo "--- live processes: CPU time"
    ps -eo cputimes=,comm= | sort -rn | head -25
  } >"$f" 2>&1
  log "cpu: $(head -1 "$f"); the largest cgroups: $(sed -n '3,6p' "$f" | awk '{printf "%s%s %s s", (NR > 1 ? ", " : ""), $2, $1}')"
}

# cluster_down: in the VM, stop every process this file started there (the pods' containers
# first, through containerd), unmount what the kubelet left mounted
cluster_down() {
  local pid f i live
  log "cluster down: final objects, events and pod logs to $LOGS, then every process stopped"
  if [ -n "${KUBECONFIG:-}" ]; then
    kubectl --request-timeout=60s get pods,pvc,pv,csinode,jobs -A -o wide >"$LOGS/final-objects.txt" 2>&1
    kubectl --request-timeout=60s get csistoragecapacities -A -o yaml >"$LOGS/capacities.yaml" 2>&1
    kubectl --request-timeout=60s get events -A --sort-by=.lastTimestamp >"$LOGS/events.txt" 2>&1
  fi
  timeout 120 cp -r /var/log/pods "$LOGS/pods" 2>/dev/null # the containers' logs, before the tmpfs goes
  cpu_report
  log "cluster down: killing the containers"
  for pid in $(timeout 60 ctr -n k8s.io tasks ls -q 2>/dev/null); do
    timeout 30 ctr -n k8s.io tasks kill -s KILL "$pid" >/dev/null 2>&1
  done
  for f in kubelet containerd; do
    [ -f $STATE/$f.pid ] && kill "$(cat $STATE/$f.pid)" 2>/dev/null
  done
  for i in $(seq 1 20); do
    live=
    for f in $STATE/*.pid; do [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null && live=1; done
    [ -z "$live" ] && break
    sleep 0.5
  done
  for f in $STATE/*.pid; do [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; done
  log "cluster down: unmounting what the kubelet and containerd left"
  awk '$2 ~ "^/var/lib/kubelet/|^/run/containerd/" {print $2}' /proc/mounts | sort -r | while read -r m; do timeout 30 umount -l "$m"; done
  dmesg >"$LOGS/dmesg.txt" 2>&1
  log "cluster down: done"
}
