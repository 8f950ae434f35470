#!/usr/bin/env bash
# Records realistic object pairs from a real API server into
# pkg/diff/testdata/corpus/<case>/{old,new}.json, and the OpenAPI documents
# the diff golden tests read keyed lists from. Run after `make testenv`;
# then `go test ./pkg/diff -update` rewrites the expected changes.
set -euo pipefail
cd "$(dirname "$0")/.."
out=pkg/diff/testdata/corpus
tmp=$(mktemp -d)
go build -o "$tmp/controlplane" ./hack/controlplane
"$tmp/controlplane" -kubeconfig-out "$tmp/kubeconfig" >"$tmp/cp.log" 2>&1 &
cp_pid=$!
trap 'kill -INT $cp_pid; wait $cp_pid || true; rm -rf "$tmp"' EXIT
for _ in $(seq 1 240); do [ -s "$tmp/kubeconfig" ] && break; sleep 0.5; done
export KUBECONFIG="$tmp/kubeconfig"
k() { .testenv/bin/kubectl -n corpus "$@"; }

# record NAME KIND/NAME COMMAND...: saves the object before and after COMMAND.
record() {
  local name=$1 obj=$2 out=${out:-pkg/diff/testdata/corpus}; shift 2
  mkdir -p "$out/$name"
  k get "$obj" -o json --show-managed-fields >"$out/$name/old.json"
  "$@" >/dev/null
  k get "$obj" -o json --show-managed-fields >"$out/$name/new.json"
}

.testenv/bin/kubectl create namespace corpus >/dev/null
.testenv/bin/kubectl apply -f hack/demo/widgets-crd.yaml >/dev/null
.testenv/bin/kubectl wait --for condition=established crd/widgets.demo.kubediff.io >/dev/null

k apply -f - >/dev/null <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports: [{containerPort: 80, name: http}]
        env: [{name: E1, value: "1"},{name: E2, value: "2"},{name: E3, value: "3"},{name: E4, value: "4"},{name: E5, value: "5"},
              {name: E6, value: "6"},{name: E7, value: "7"},{name: E8, value: "8"},{name: E9, value: "9"},{name: E10, value: "10"}]
        volumeMounts: [{name: cache, mountPath: /cache}]
      - name: sidecar
        image: busybox:1.36
        command: [sleep, infinity]
      - name: logger
        image: fluent-bit:3.0
      volumes: [{name: cache, emptyDir: {}}]
YAML
record deployment-image deployment/web k set image deployment/web sidecar=busybox:1.37
record deployment-scale deployment/web k scale deployment web --replicas 5
record deployment-env-insert-top deployment/web k patch deployment web --type json \
  -p '[{"op":"add","path":"/spec/template/spec/containers/0/env/0","value":{"name":"FEATURE_X","value":"on"}}]'
record deployment-container-added deployment/web k patch deployment web --type json \
  -p '[{"op":"add","path":"/spec/template/spec/containers/1","value":{"name":"proxy","image":"envoy:1.30"}}]'
record deployment-container-removed deployment/web k patch deployment web --type json \
  -p '[{"op":"remove","path":"/spec/template/spec/containers/3"}]'
record deployment-rollout-status deployment/web k patch deployment web --subresource status --type merge -p '{"status":{
  "observedGeneration":6,"replicas":5,"updatedReplicas":5,"readyReplicas":4,"availableReplicas":4,
  "conditions":[{"type":"Available","status":"True","reason":"MinimumReplicasAvailable","message":"ok","lastUpdateTime":"2026-11-22T10:00:00Z","lastTransitionTime":"2026-11-22T10:00:00Z"},
                {"type":"Progressing","status":"True","reason":"NewReplicaSetAvailable","message":"done","lastUpdateTime":"2026-11-22T10:00:05Z","lastTransitionTime":"2026-11-22T10:00:00Z"}]}}'
record deployment-status-heartbeat-only deployment/web k patch deployment web --subresource status --type merge -p '{"status":{
  "conditions":[{"type":"Available","status":"True","reason":"MinimumReplicasAvailable","message":"ok","lastUpdateTime":"2026-11-22T10:09:00Z","lastTransitionTime":"2026-11-22T10:00:00Z"},
                {"type":"Progressing","status":"True","reason":"NewReplicaSetAvailable","message":"done","lastUpdateTime":"2026-11-22T10:09:05Z","lastTransitionTime":"2026-11-22T10:00:00Z"}]}}'
record deployment-labels-annotations deployment/web k patch deployment web --type merge \
  -p '{"metadata":{"labels":{"tier":"frontend","app.kubernetes.io/version":"2"},"annotations":{"owner":"team-a","deployment.kubernetes.io/revision":"7"}}}'

k apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: worker}
spec:
  containers: [{name: main, image: busybox:1.36}, {name: helper, image: busybox:1.36}]
YAML
record pod-status-transition pod/worker k patch pod worker --subresource status --type merge -p '{"status":{
  "phase":"Running","podIP":"10.0.0.7","startTime":"2026-11-22T10:00:00Z",
  "conditions":[{"type":"Ready","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-11-22T10:00:03Z"}],
  "containerStatuses":[{"name":"main","ready":true,"restartCount":0,"image":"busybox:1.36","imageID":"","started":true,"state":{"running":{"startedAt":"2026-11-22T10:00:02Z"}}},
                       {"name":"helper","ready":true,"restartCount":0,"image":"busybox:1.36","imageID":"","started":true,"state":{"running":{"startedAt":"2026-11-22T10:00:02Z"}}}]}}'

k create service clusterip api --tcp=80:8080 --tcp=443:8443 >/dev/null
record service-port-change service/api k patch service api --type json -p '[{"op":"replace","path":"/spec/ports/1/targetPort","value":9443}]'

k create configmap settings --from-literal=mode=fast --from-literal=retries=3 --from-literal=db_password=hunter2 >/dev/null
record configmap-keys configmap/settings k patch configmap settings --type merge -p '{"data":{"mode":"safe","timeout":"30s","retries":null,"db_password":"CANARY-cm"}}'

k create secret generic creds --from-literal=password=hunter2 --from-literal=user=admin >/dev/null
record secret-change secret/creds k patch secret creds --type merge -p '{"stringData":{"password":"CANARY-secret"}}'

k apply -f - >/dev/null <<'YAML'
apiVersion: demo.kubediff.io/v1
kind: Widget
metadata: {name: gizmo}
spec: {size: 1, color: blue, parts: [{name: bolt, count: 4}, {name: nut, count: 4}]}
YAML
record widget-keyed-list widget/gizmo k patch widget gizmo --type merge \
  -p '{"spec":{"parts":[{"name":"washer","count":8},{"name":"bolt","count":6},{"name":"nut","count":4}]}}'

# Benchmark fixtures: a realistic ~10 KB Pod and three kinds of update.
bench=pkg/diff/testdata/bench
containers=""
for c in api worker metrics; do
  env=""
  for i in $(seq 1 15); do env="$env{name: ${c^^}_SETTING_$i, value: \"value-$i-for-$c\"},"; done
  containers="$containers
  - name: $c
    image: registry.example.com/team/$c:1.4.2
    args: [--port=8080, --log-level=info, --config=/etc/$c/config.yaml]
    env: [${env%,}]
    ports: [{name: http, containerPort: 8080}, {name: metrics, containerPort: 9090}]
    resources: {requests: {cpu: 100m, memory: 128Mi}, limits: {cpu: \"1\", memory: 512Mi}}
    readinessProbe: {httpGet: {path: /ready, port: 8080}, periodSeconds: 5, failureThreshold: 3}
    livenessProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 10, initialDelaySeconds: 15}
    volumeMounts: [{name: config, mountPath: /etc/$c}, {name: cache, mountPath: /cache}, {name: tmp, mountPath: /tmp}]
    securityContext: {runAsNonRoot: true, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}"
done
k apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: big
  labels: {app.kubernetes.io/name: big, app.kubernetes.io/instance: big-prod, app.kubernetes.io/version: 1.4.2, team: platform}
  annotations: {prometheus.io/scrape: "true", prometheus.io/port: "9090"}
spec:
  serviceAccountName: default
  tolerations: [{key: dedicated, operator: Equal, value: platform, effect: NoSchedule}]
  affinity: {podAntiAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 100, podAffinityTerm: {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app.kubernetes.io/name: big}}}}]}}
  volumes: [{name: config, configMap: {name: big-config}}, {name: cache, emptyDir: {}}, {name: tmp, emptyDir: {medium: Memory}}]
  containers:$containers
YAML
status() { # status PHASE READY RESTARTS
  local cs=""
  for c in api worker metrics; do
    cs="$cs{\"name\":\"$c\",\"ready\":$2,\"restartCount\":$3,\"image\":\"registry.example.com/team/$c:1.4.2\",\"imageID\":\"registry.example.com/team/$c@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\",\"containerID\":\"containerd://$c-0123456789abcdef\",\"started\":true,\"state\":{\"running\":{\"startedAt\":\"2026-11-22T10:00:0$3Z\"}}},"
  done
  echo "{\"status\":{\"phase\":\"$1\",\"hostIP\":\"10.0.1.5\",\"podIP\":\"10.1.2.3\",\"qosClass\":\"Burstable\",\"startTime\":\"2026-11-22T10:00:00Z\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"$2\",\"lastProbeTime\":null,\"lastTransitionTime\":\"2026-11-22T10:00:0$3Z\"},{\"type\":\"ContainersReady\",\"status\":\"$2\",\"lastProbeTime\":null,\"lastTransitionTime\":\"2026-11-22T10:00:0$3Z\"},{\"type\":\"PodScheduled\",\"status\":\"True\",\"lastProbeTime\":null,\"lastTransitionTime\":\"2026-11-22T10:00:00Z\"}],\"containerStatuses\":[${cs%,}]}}"
}
k patch pod big --subresource status --type merge -p "$(status Running true 0)" >/dev/null
out=$bench record pod-status pod/big k patch pod big --subresource status --type merge -p "$(status Running false 1)"
out=$bench record pod-spec pod/big k patch pod big --type json -p '[{"op":"replace","path":"/spec/containers/1/image","value":"registry.example.com/team/worker:1.4.3"}]'
out=$bench record pod-ignored pod/big k annotate pod big --overwrite kubectl.kubernetes.io/last-applied-configuration='{"bench":1}'
.testenv/bin/kubectl get --raw /openapi/v3/apis/apps/v1 >pkg/listkeys/testdata/apps-v1.json
.testenv/bin/kubectl get --raw /openapi/v3/api/v1 >pkg/listkeys/testdata/core-v1.json
.testenv/bin/kubectl get --raw /openapi/v3/apis/demo.kubediff.io/v1 >pkg/listkeys/testdata/demo.kubediff.io-v1.json
echo "recorded $(ls pkg/diff/testdata/corpus | wc -l) cases and $(ls $bench | wc -l) benchmark fixtures" >&2
