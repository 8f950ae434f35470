#!/usr/bin/env bash
# The demo behind `make demo`: with a cluster given (KUBECONFIG), watches
# it; otherwise starts a local control plane, runs `kubediff watch -o text`
# against it, and makes a short series of real changes so you can see what
# kubediff reports. DEMO_KEEP=1 keeps kubediff
# and the control plane running afterwards until you press Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."

# A cluster given (KUBECONFIG set, or `make demo KUBECONFIG=...`): watch it,
# changing nothing. DEMO_LOCAL=1 runs the local demo regardless.
if [ -n "${KUBECONFIG:-}" ] && [ "${DEMO_LOCAL:-0}" != 1 ]; then
  echo "» kubediff watch -o text, against the cluster KUBECONFIG names (DEMO_LOCAL=1 runs the local demo instead)" >&2
  exec bin/kubediff watch -o text
fi
make -s testenv
tmp=$(mktemp -d)
kubectl=.testenv/bin/kubectl
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

go build -o "$tmp/controlplane" ./hack/controlplane
echo "» starting a local cluster: kube-apiserver, etcd, controller manager, scheduler and 3 KWOK nodes..." >&2
"$tmp/controlplane" -nodes 3 -kubeconfig-out "$tmp/kubeconfig" >"$tmp/controlplane.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 240); do [ -s "$tmp/kubeconfig" ] && break; sleep 0.5; done
[ -s "$tmp/kubeconfig" ] || { cat "$tmp/controlplane.log" >&2; exit 1; }
export KUBECONFIG="$tmp/kubeconfig"

# Installed before kubediff starts so the demo can use it at once (a CRD
# installed while kubediff runs is picked up within seconds too).
$kubectl apply -f hack/demo/widgets-crd.yaml >/dev/null
$kubectl wait --for condition=established crd/widgets.demo.kubediff.io >/dev/null

echo "» kubediff watch -o text" >&2
# --state-dir '': the local cluster goes when the demo ends; its history
# has no place in your default state dir.
bin/kubediff watch -o text --http-address "" --state-dir '' 2> >(tee "$tmp/kubediff.log" >&2) &
pids+=($!)
for _ in $(seq 1 120); do grep -q 'msg=watching' "$tmp/kubediff.log" 2>/dev/null && break; sleep 0.5; done

step() { echo; echo "» $*" >&2; "$@" >/dev/null; sleep 1; }
step $kubectl create namespace demo
step $kubectl -n demo create deployment web --image=nginx:1.27 --replicas=1
step $kubectl -n demo scale deployment web --replicas=3
step $kubectl -n demo set image deployment/web nginx=nginx:1.28
step $kubectl -n demo create configmap settings --from-literal=mode=fast
step $kubectl -n demo patch configmap settings --type merge -p '{"data":{"retries":"3"}}'
step $kubectl -n demo apply -f - <<'YAML'
apiVersion: demo.kubediff.io/v1
kind: Widget
metadata: {name: gizmo}
spec: {size: 1, color: blue, parts: [{name: bolt, count: 4}, {name: nut, count: 4}]}
YAML
step $kubectl -n demo patch widget gizmo --type merge -p '{"spec":{"size":2,"parts":[{"name":"washer","count":8},{"name":"bolt","count":6},{"name":"nut","count":4}]}}'
step $kubectl -n demo create secret generic db --from-literal=password=hunter2
step $kubectl -n demo patch secret db -p '{"stringData":{"password":"correct-horse"}}'
step $kubectl -n demo set env deployment/web LOG_LEVEL=debug
step $kubectl -n demo delete configmap/settings secret/db
step $kubectl -n demo delete widget gizmo
step $kubectl -n demo delete deployment web

if [ "${DEMO_KEEP:-0}" = 1 ]; then
  echo "» still watching; try: KUBECONFIG=$KUBECONFIG $kubectl ... (Ctrl-C to stop)" >&2
  wait "${pids[1]}" || true
fi
echo "» done" >&2
