#!/bin/bash
# Start etcd + kube-apiserver (the `etcd` and `kubernetes` parts of test-e2e/parts/build.sh, at
# the versions of test-e2e/parts/versions.env) on 127.0.0.1 only, for one test suite. Local
# testing only: self-signed certificates, a static admin token (system:masters), RBAC
# authorization, a ServiceAccount issuer with its signing key (TokenRequest works without a
# controller manager). Everything goes through the secure port.
#
# Usage: start.sh RUN_DIR
# Env: KUBE_DIR, ETCD_DIR (the parts' directories; default: what build.sh prints, building them
#      when they are not cached), APISERVER_PORT, ETCD_PORT (the etcd peer port is +1; both unset:
#      random ports in 20000-31999, below Linux's default range for outgoing connections, chosen
#      again when a server finds its port taken, up to 8 times; RUN_DIR/ports.env names the ports
#      used), TOKEN (admin bearer token), READY_PATH (/readyz): the GET that must answer 2xx before this
#      script returns. Under software emulation /readyz comes well after the API serves (the
#      RBAC bootstrap roles); a client that uses only the admin token can wait for
#      /api/v1/namespaces/default instead.
# Writes RUN_DIR/kubeconfig, RUN_DIR/{etcd,apiserver}.pid and logs; stop.sh RUN_DIR stops both.
set -euo pipefail
RUN=${1:?usage: start.sh RUN_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
if [ -z "${KUBE_DIR:-}" ] || [ -z "${ETCD_DIR:-}" ]; then
  { read -r KUBE_DIR && read -r ETCD_DIR; } < <(bash "$HERE/../../../../test-e2e/parts/build.sh" kubernetes etcd) || true
fi
[ -x "$KUBE_DIR/kube-apiserver" ] || { echo "start.sh: no kube-apiserver in '$KUBE_DIR'" >&2; exit 1; }
[ -x "$ETCD_DIR/etcd" ] || { echo "start.sh: no etcd in '$ETCD_DIR'" >&2; exit 1; }
TOKEN=${TOKEN:-kapi-test-token}
READY_PATH=${READY_PATH:-/readyz}
if [ -n "${APISERVER_PORT:-}" ] && [ -n "${ETCD_PORT:-}" ]; then
  CHOOSE_PORTS=
elif [ -z "${APISERVER_PORT:-}" ] && [ -z "${ETCD_PORT:-}" ]; then
  CHOOSE_PORTS=1
else
  echo "start.sh: set both APISERVER_PORT and ETCD_PORT, or neither" >&2
  exit 1
fi
mkdir -p "$RUN/pki"
RUN=$(cd "$RUN" && pwd) # absolute: the paths below are used after the cd
cd "$RUN"
# a second start on a run directory whose servers still run would orphan them (their pid files
# overwritten, stop.sh then stopping only the new pair)
for n in etcd apiserver; do
  if [ -f "$n.pid" ] && kill -0 "$(cat "$n.pid")" 2>/dev/null; then
    echo "start.sh: $RUN is in use: $n runs as pid $(cat "$n.pid") (stop.sh $RUN first)" >&2
    exit 1
  fi
done

if [ ! -f pki/apiserver.crt ]; then
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=kapi-ca" \
    -keyout pki/ca.key -out pki/ca.crt 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" \
    -keyout pki/apiserver.key -out pki/apiserver.csr 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,IP:10.0.0.1,DNS:kubernetes,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n' >pki/ext.cnf
  openssl x509 -req -in pki/apiserver.csr -CA pki/ca.crt -CAkey pki/ca.key -CAcreateserial \
    -days 3650 -extfile pki/ext.cnf -out pki/apiserver.crt 2>/dev/null
  openssl genrsa -out pki/sa.key 2048 2>/dev/null
  openssl rsa -in pki/sa.key -pubout -out pki/sa.pub 2>/dev/null
fi
echo "$TOKEN,admin,admin-uid,system:masters" >pki/tokens.csv

# A port nothing on 127.0.0.1 answers on now (a hint only: the bind below decides).
random_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 12000))
    (: </dev/tcp/127.0.0.1/$p) 2>/dev/null || { echo "$p"; return; }
  done
}
choose_ports() {
  ETCD_PORT=$(random_port)
  APISERVER_PORT=$(random_port)
  while [ "$APISERVER_PORT" -eq "$ETCD_PORT" ] || [ "$APISERVER_PORT" -eq $((ETCD_PORT + 1)) ]; do
    APISERVER_PORT=$(random_port)
  done
}
# port_taken LOG: whether the server that wrote LOG stopped because its port was taken.
port_taken() { grep -q 'address already in use' "$1"; }

# start_etcd, start_apiserver: 0 when the server is up, 2 when it stopped because its port was
# taken, 1 on any other failure (its log on stderr). A server that failed may still run: stop.sh
# stops it.
start_etcd() {
  ETCD_PEER_PORT=$((ETCD_PORT + 1))
  rm -rf "$RUN/etcd-data"
  setsid "$ETCD_DIR/etcd" --name kapi --data-dir "$RUN/etcd-data" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "kapi=http://127.0.0.1:$ETCD_PEER_PORT" --listen-metrics-urls '' \
    >"$RUN/etcd.log" 2>&1 </dev/null &
  echo $! >"$RUN/etcd.pid"
  # healthy, and it is ours: another etcd on a port ours found taken answers /health too
  for _ in $(seq 1 300); do
    kill -0 "$(cat "$RUN/etcd.pid")" 2>/dev/null || break
    grep -q '"ready to serve client requests"' "$RUN/etcd.log" &&
      curl -sf --max-time 5 "http://127.0.0.1:$ETCD_PORT/health" >/dev/null &&
      kill -0 "$(cat "$RUN/etcd.pid")" 2>/dev/null && return 0
    sleep 0.1
  done
  port_taken "$RUN/etcd.log" && return 2
  echo "etcd not healthy on 127.0.0.1:$ETCD_PORT" >&2
  tail -30 "$RUN/etcd.log" >&2
  return 1
}

start_apiserver() {
  setsid "$KUBE_DIR/kube-apiserver" \
    --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$APISERVER_PORT" \
    --tls-cert-file="$RUN/pki/apiserver.crt" --tls-private-key-file="$RUN/pki/apiserver.key" \
    --client-ca-file="$RUN/pki/ca.crt" \
    --token-auth-file="$RUN/pki/tokens.csv" \
    --authorization-mode=RBAC \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$RUN/pki/sa.pub" --service-account-signing-key-file="$RUN/pki/sa.key" \
    --api-audiences=https://kubernetes.default.svc.cluster.local \
    --service-cluster-ip-range=10.0.0.0/24 \
    --endpoint-reconciler-type=none \
    --allow-privileged=true \
    --cert-dir="$RUN/pki" \
    --v=1 >"$RUN/apiserver.log" 2>&1 </dev/null &
  echo $! >"$RUN/apiserver.pid"
  # ready, and it is ours: its certificate must chain to this run's CA (another kube-apiserver on
  # a port ours found taken answers too), and its process must still run
  for _ in $(seq 1 1800); do
    curl -sf --max-time 5 --cacert "$RUN/pki/ca.crt" -H "Authorization: Bearer $TOKEN" \
      "https://127.0.0.1:$APISERVER_PORT$READY_PATH" >/dev/null 2>&1 &&
      kill -0 "$(cat "$RUN/apiserver.pid")" 2>/dev/null && return 0
    if ! kill -0 "$(cat "$RUN/apiserver.pid")" 2>/dev/null; then
      port_taken "$RUN/apiserver.log" && return 2
      echo "kube-apiserver died" >&2
      tail -30 "$RUN/apiserver.log" >&2
      return 1
    fi
    sleep 0.1
  done
  echo "kube-apiserver not ready ($READY_PATH)" >&2
  tail -30 "$RUN/apiserver.log" >&2
  return 1
}

t0=$(date +%s.%N)
for attempt in $(seq 1 8); do
  [ -n "$CHOOSE_PORTS" ] && choose_ports
  rc=0
  start_etcd && start_apiserver || rc=$?
  [ "$rc" -eq 0 ] && break
  bash "$HERE/stop.sh" "$RUN" # whichever of the two still runs
  [ "$rc" -eq 2 ] || exit 1
  taken="a port was taken (etcd $ETCD_PORT and $((ETCD_PORT + 1)), kube-apiserver $APISERVER_PORT"
  if [ -z "$CHOOSE_PORTS" ] || [ "$attempt" -eq 8 ]; then
    echo "start.sh: $taken; attempt $attempt)" >&2
    exit 1
  fi
  echo "start.sh: $taken); choosing others" >&2
done
printf 'APISERVER_PORT=%s\nETCD_PORT=%s\n' "$APISERVER_PORT" "$ETCD_PORT" >"$RUN/ports.env"
t1=$(date +%s.%N)

cat >"$RUN/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: kapi
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority: $RUN/pki/ca.crt
users:
- name: admin
  user:
    token: $TOKEN
contexts:
- name: kapi
  context: {cluster: kapi, user: admin}
current-context: kapi
KC
echo "etcd + kube-apiserver ready in $(awk "BEGIN{printf \"%.2f\", $t1-$t0}")s (pids $(cat "$RUN/etcd.pid") $(cat "$RUN/apiserver.pid"))"
