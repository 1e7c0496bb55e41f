#!/bin/bash
# Start etcd + kube-apiserver (the `etcd` and `kubernetes` parts of test-e2e/parts/build.sh, at
# the versions of test-e2e/parts/versions.env) on 127.0.0.1 only, for one test suite. Local
# testing only: self-signed certificates, a static admin token (system:masters), RBAC
# authorization, a ServiceAccount issuer with its signing key (TokenRequest works without a
# controller manager). Everything goes through the secure port.
#
# Usage: start.sh RUN_DIR
# Env: KUBE_DIR, ETCD_DIR (the parts' directories; default: what build.sh prints, building them
#      when they are not cached), APISERVER_PORT (6443), ETCD_PORT (23790; the peer port is +1),
#      TOKEN (admin bearer token), READY_PATH (/readyz): the GET that must answer 2xx before this
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
APISERVER_PORT=${APISERVER_PORT:-6443}
ETCD_PORT=${ETCD_PORT:-23790}
ETCD_PEER_PORT=$((ETCD_PORT + 1))
TOKEN=${TOKEN:-kapi-test-token}
READY_PATH=${READY_PATH:-/readyz}
mkdir -p "$RUN/pki"
cd "$RUN"

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

t0=$(date +%s.%N)
setsid "$ETCD_DIR/etcd" --name kapi --data-dir "$RUN/etcd-data" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster "kapi=http://127.0.0.1:$ETCD_PEER_PORT" --listen-metrics-urls '' \
  >"$RUN/etcd.log" 2>&1 </dev/null &
echo $! >"$RUN/etcd.pid"
ok=
for _ in $(seq 1 300); do
  if curl -sf "http://127.0.0.1:$ETCD_PORT/health" >/dev/null; then ok=1; break; fi
  kill -0 "$(cat "$RUN/etcd.pid")" 2>/dev/null || break
  sleep 0.1
done
[ -n "$ok" ] || { echo "etcd not healthy on 127.0.0.1:$ETCD_PORT" >&2; tail -30 "$RUN/etcd.log" >&2; exit 1; }

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
ok=
for _ in $(seq 1 1800); do
  if curl -sfk -H "Authorization: Bearer $TOKEN" "https://127.0.0.1:$APISERVER_PORT$READY_PATH" >/dev/null 2>&1; then ok=1; break; fi
  kill -0 "$(cat "$RUN/apiserver.pid")" 2>/dev/null || { echo "kube-apiserver died" >&2; tail -30 "$RUN/apiserver.log" >&2; exit 1; }
  sleep 0.1
done
[ -n "$ok" ] || { echo "kube-apiserver not ready ($READY_PATH)" >&2; tail -30 "$RUN/apiserver.log" >&2; exit 1; }
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
