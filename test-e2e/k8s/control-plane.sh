#!/bin/bash
# control-plane.sh: on the host, inside the tier's network namespace (run.sh): etcd,
# kube-apiserver, kube-controller-manager and kube-scheduler (vm/cluster.sh control_plane_up),
# natively, and kubectl-relay.mjs; the API server and the relay listen on the namespace's side of
# the VM's tap device. Then waits until run.sh ends it (it stops every process of the namespace).
# Env: NODE_PATH PKI LOGS STATE (a directory of this run: etcd's data, pid files, kubeconfig)
set -u
. "$(dirname "$0")/vm/cluster.sh"
log "$(kube-apiserver --version), $(etcd --version | head -1)"
control_plane_up || exit 1
# the test VM's kubectl commands, run here (vm/bin/kubectl)
# and their helm commands (vm/bin/helm, K8S_INSTALL=helm: helm is on NODE_PATH then), whose
# cache and configuration stay in this run's directory
export HELM_CACHE_HOME=$STATE/helm/cache HELM_CONFIG_HOME=$STATE/helm/config HELM_DATA_HOME=$STATE/helm/data
start kubectl-relay node "$(dirname "$0")/kubectl-relay.mjs" $API_IP $KUBECTL_RELAY_PORT "$(command -v kubectl)" \
  "$LOGS/kubectl-calls.log" "$(command -v helm)"
log "control plane up"
wait
