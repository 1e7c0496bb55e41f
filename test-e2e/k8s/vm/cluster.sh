# cluster.sh: a one-node Kubernetes 1.20 inside the test VM (sourced by node-test.sh):
# containerd (Debian) + CNI bridge, etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler and the kubelet (with the CSI :authority fix), started with bounded waits and
# stopped completely by cluster_down. Everything lives in the VM's tmpfs; logs go to $LOGS.
# Needs: KBIN (kube-apiserver, kube-controller-manager, kube-scheduler), KUBELET (binary),
#        PKI (ca.crt, apiserver.{crt,key}, sa.{key,pub}, tokens.csv), IMAGES (OCI archives), LOGS;
#        STORE_DISK (optional): the image store disk made by store.sh, mounted at /var/lib/containerd.
STATE=/run/lvstamp-k8s
NODE=vm
NODE_IP=10.99.0.1
TOKEN=lvstamp-k8s-admin-token

now() { awk '{print $1}' /proc/uptime; }
log() { echo "[$(now)s] $*"; }
since() { awk "BEGIN{printf \"%.0f\", $(now)-$1}"; }
# wait_for DESC TIMEOUT_S CMD...: poll CMD (every second) until it succeeds; false after TIMEOUT_S
wait_for() {
  local desc=$1 to=$2 s; s=$(now); shift 2
  while :; do
    if "$@" >/dev/null 2>&1; then log "$desc ($(since $s) s)"; return 0; fi
    [ "$(since $s)" -ge "$to" ] && { log "TIMEOUT after $to s: $desc"; return 1; }
    sleep 1
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
  # cgroup v1 hierarchies (the VM's init mounts none); the kubelet uses the cgroupfs driver
  if ! mountpoint -q /sys/fs/cgroup; then
    mount -t tmpfs -o mode=755 cgroup_root /sys/fs/cgroup
    local c d
    for c in $(awk 'NR>1 && $4==1 {print $1}' /proc/cgroups); do
      case $c in cpu | cpuacct) d=cpu,cpuacct ;; net_cls | net_prio) d=net_cls,net_prio ;; *) d=$c ;; esac
      [ -d /sys/fs/cgroup/$d ] && continue
      mkdir -p /sys/fs/cgroup/$d && mount -t cgroup -o $d cgroup /sys/fs/cgroup/$d
    done
    ln -s cpu,cpuacct /sys/fs/cgroup/cpu; ln -s cpu,cpuacct /sys/fs/cgroup/cpuacct
    [ -d /sys/fs/cgroup/net_cls,net_prio ] && { ln -s net_cls,net_prio /sys/fs/cgroup/net_cls; ln -s net_cls,net_prio /sys/fs/cgroup/net_prio; }
    mkdir -p /sys/fs/cgroup/systemd && mount -t cgroup -o none,name=systemd cgroup /sys/fs/cgroup/systemd
  fi
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
  # kubelet refuses a loopback node IP: a dummy interface with a private address and a route
  ip link add dummy0 type dummy 2>/dev/null
  ip addr add $NODE_IP/24 dev dummy0; ip link set dummy0 up
  ip route add default via 10.99.0.254 dev dummy0 2>/dev/null
  grep -q " $NODE\$" /etc/hosts || echo "$NODE_IP $NODE" >>/etc/hosts
  [ -s /etc/resolv.conf ] || echo "nameserver 10.99.0.254" >/etc/resolv.conf
  [ -s /etc/machine-id ] || echo 0123456789abcdef0123456789abcdef >/etc/machine-id
  # no kube-proxy: one DNAT rule stands in for the "kubernetes" Service (10.0.0.1:443), so pods
  # (the sidecars, the GC job) reach the API server with their in-cluster configuration
  iptables -t nat -A PREROUTING -d 10.0.0.1 -p tcp --dport 443 -j DNAT --to-destination $NODE_IP:6443 &&
    iptables -t nat -A OUTPUT -d 10.0.0.1 -p tcp --dport 443 -j DNAT --to-destination $NODE_IP:6443 ||
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
  cat >/etc/containerd/config.toml <<TOML
version = 2
root = "/var/lib/containerd"
state = "/run/containerd"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/pause:3.4.1"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
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

control_plane_up() {
  start etcd etcd --name node --data-dir $STATE/etcd --listen-client-urls http://127.0.0.1:2379 \
    --advertise-client-urls http://127.0.0.1:2379 --listen-peer-urls http://127.0.0.1:2380 \
    --initial-advertise-peer-urls http://127.0.0.1:2380 --initial-cluster node=http://127.0.0.1:2380 \
    --listen-metrics-urls ''
  wait_for "etcd healthy" 300 curl -sf http://127.0.0.1:2379/health || { tails etcd; return 1; }
  # CSIStorageCapacity is alpha in 1.20: the feature gate and its API group version, on the API
  # server and the scheduler
  start apiserver "$KBIN/kube-apiserver" --etcd-servers=http://127.0.0.1:2379 \
    --bind-address=0.0.0.0 --advertise-address=$NODE_IP --secure-port=6443 \
    --tls-cert-file=$PKI/apiserver.crt --tls-private-key-file=$PKI/apiserver.key --client-ca-file=$PKI/ca.crt \
    --token-auth-file=$PKI/tokens.csv --authorization-mode=Node,RBAC \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file=$PKI/sa.pub --service-account-signing-key-file=$PKI/sa.key \
    --api-audiences=https://kubernetes.default.svc.cluster.local \
    --service-cluster-ip-range=10.0.0.0/24 --endpoint-reconciler-type=none --allow-privileged=true \
    --kubelet-preferred-address-types=InternalIP \
    --feature-gates=CSIStorageCapacity=true --runtime-config=storage.k8s.io/v1alpha1=true \
    --cert-dir=$STATE/apiserver-certs --v=1
  wait_for "kube-apiserver /readyz" 900 curl -sfk -H "Authorization: Bearer $TOKEN" https://127.0.0.1:6443/readyz ||
    { alive apiserver; tails apiserver; return 1; }
  export KUBECONFIG=$STATE/kubeconfig
  cat >$KUBECONFIG <<KCF
apiVersion: v1
kind: Config
clusters: [{name: node, cluster: {server: "https://$NODE_IP:6443", certificate-authority: $PKI/ca.crt}}]
users: [{name: admin, user: {token: $TOKEN}}]
contexts: [{name: node, context: {cluster: node, user: admin}}]
current-context: node
KCF
  supervise kcm "$KBIN/kube-controller-manager" --kubeconfig=$KUBECONFIG --leader-elect=false \
    --service-account-private-key-file=$PKI/sa.key --root-ca-file=$PKI/ca.crt \
    --bind-address=127.0.0.1 --port=0 --cert-dir=$STATE/kcm-certs \
    --controllers='*,-nodeipam,-cloud-node-lifecycle' --feature-gates=CSIStorageCapacity=true --v=1
  supervise scheduler "$KBIN/kube-scheduler" --kubeconfig=$KUBECONFIG --leader-elect=false \
    --bind-address=127.0.0.1 --port=0 --cert-dir=$STATE/sched-certs --feature-gates=CSIStorageCapacity=true --v=1
}

kubelet_up() {
  cat >$STATE/kubelet.yaml <<KCONF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}, x509: {}}
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
failSwapOn: false
address: $NODE_IP
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
makeIPTablesUtilChains: false
resolvConf: /etc/resolv.conf
runtimeRequestTimeout: 10m
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "1Mi", nodefs.available: "1%", imagefs.available: "1%"}
nodeStatusUpdateFrequency: 10s
fileCheckFrequency: 5s
syncFrequency: 10s
serializeImagePulls: false
featureGates: {CSIStorageCapacity: true}
KCONF
  start kubelet "$KUBELET" --config=$STATE/kubelet.yaml --kubeconfig=$KUBECONFIG \
    --container-runtime=remote --container-runtime-endpoint=unix:///run/containerd/containerd.sock \
    --node-ip=$NODE_IP --hostname-override=$NODE --root-dir=/var/lib/kubelet --v=2
  wait_for "node $NODE Ready" 600 sh -c "kubectl get node $NODE -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True" ||
    { alive kubelet; tails kubelet; return 1; }
  wait_for "ServiceAccount default/default (controller-manager)" 600 kubectl get sa default ||
    { alive kcm; tails kcm; return 1; }
}

# cluster_down: stop every process this file started (the pods' containers first, through
# containerd), unmount what the kubelet left mounted
cluster_down() {
  local pid f i live
  log "cluster down: final objects, events and pod logs to $LOGS, then every process stopped"
  if [ -n "${KUBECONFIG:-}" ]; then
    kubectl --request-timeout=60s get pods,pvc,pv,csinode,jobs -A -o wide >"$LOGS/final-objects.txt" 2>&1
    kubectl --request-timeout=60s get csistoragecapacities.v1alpha1.storage.k8s.io -A -o yaml >"$LOGS/capacities.yaml" 2>&1
    kubectl --request-timeout=60s get events -A --sort-by=.lastTimestamp >"$LOGS/events.txt" 2>&1
  fi
  timeout 120 cp -r /var/log/pods "$LOGS/pods" 2>/dev/null # the containers' logs, before the tmpfs goes
  log "cluster down: killing the containers"
  for pid in $(timeout 60 ctr -n k8s.io tasks ls -q 2>/dev/null); do
    timeout 30 ctr -n k8s.io tasks kill -s KILL "$pid" >/dev/null 2>&1
  done
  for f in kubelet scheduler kcm apiserver etcd containerd; do
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
