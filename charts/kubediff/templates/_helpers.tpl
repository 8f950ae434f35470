{{/* The release's full name: the release name, suffixed with the chart's unless it holds it. */}}
{{- define "kubediff.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "kubediff.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "kubediff.labels" -}}
{{ include "kubediff.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "kubediff.serviceAccountName" -}}
{{- default (include "kubediff.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{/* The config file: the user's config, with what the chart decides. */}}
{{- define "kubediff.config" -}}
{{- $cfg := deepCopy .Values.config -}}
{{- if gt (int .Values.replicaCount) 1 -}}
{{- $le := dict "enabled" true "name" (include "kubediff.fullname" .) -}}
{{- $_ := set $cfg "leaderElection" (merge (default dict $cfg.leaderElection) $le) -}}
{{- end -}}
{{- if eq .Values.rbac.mode "namespaced" -}}
{{- $_ := set $cfg "namespaces" .Values.rbac.namespaces -}}
{{- end -}}
{{- $_ := set $cfg "state" (dict "dir" "/var/lib/kubediff") -}}
{{- with .Values.history.store.dsn -}}
{{- $hist := default dict $cfg.history -}}
{{- $_ := set $hist "store" . -}}
{{- if $.Values.history.store.password.existingSecret -}}
{{- $_ := set $hist "storePasswordFile" "/etc/kubediff/history-store-password/password" -}}
{{- end -}}
{{- $_ := set $cfg "history" $hist -}}
{{- end -}}
{{- if .Values.apiService.enabled -}}
{{- $_ := set $cfg "apiService" (dict "address" (printf ":%d" (int .Values.apiService.port))) -}}
{{- end -}}
{{- if .Values.admissionObserver.enabled -}}
{{- $_ := set $cfg "admissionObserver" (dict "address" (printf ":%d" (int .Values.admissionObserver.port)) "certFile" "/etc/kubediff/admission-observer/tls.crt" "keyFile" "/etc/kubediff/admission-observer/tls.key" "tokenFile" "/etc/kubediff/admission-observer-token/token") -}}
{{- end -}}
{{- toYaml $cfg -}}
{{- end -}}

{{- /* Read rules: every built-in type but Secrets, as RBAC cannot say "everything but Secrets"; then the opt-ins. */}}
{{- define "kubediff.readRules" }}
- apiGroups: [""]
  resources: [configmaps, endpoints, events, limitranges, namespaces, nodes, persistentvolumeclaims, persistentvolumes,
    pods, podtemplates, replicationcontrollers, resourcequotas, serviceaccounts, services]
  verbs: [get, list, watch]
- apiGroups: [admissionregistration.k8s.io, apiextensions.k8s.io, apiregistration.k8s.io, apps, autoscaling, batch,
    certificates.k8s.io, coordination.k8s.io, discovery.k8s.io, events.k8s.io, flowcontrol.apiserver.k8s.io,
    networking.k8s.io, node.k8s.io, policy, rbac.authorization.k8s.io, resource.k8s.io, scheduling.k8s.io, storage.k8s.io]
  resources: ["*"]
  verbs: [get, list, watch]
{{- if .Values.rbac.secrets }}
- apiGroups: [""]
  resources: [secrets]
  verbs: [get, list, watch]
{{- end }}
{{- with .Values.rbac.customResourceGroups }}
- apiGroups: {{ toJson . }}
  resources: ["*"]
  verbs: [get, list, watch]
{{- end }}
{{- if .Values.rbac.allCustomResources }}
- apiGroups: ["*"]
  resources: ["*"]
  verbs: [get, list, watch]
{{- end }}
{{- end }}

{{- /* A quantity (256Mi, 1Gi, 500M, 1073741824) in MiB, as a float; fails naming key when it is not one. */}}
{{- define "kubediff.mebibytes" -}}
{{- $q := toString .value -}}
{{- if not (regexMatch "^[0-9]+(\\.[0-9]+)?(Ki|Mi|Gi|Ti|k|M|G|T)?$" $q) -}}
{{- fail (printf "%s: %q is not a size the chart reads (a byte count, or a quantity such as 256Mi or 1Gi)" .key $q) -}}
{{- end -}}
{{- $unit := regexReplaceAll "^[0-9.]+" $q "" -}}
{{- $per := dict "" (divf 1 1048576) "Ki" (divf 1 1024) "Mi" 1 "Gi" 1024 "Ti" 1048576 "k" (divf 1000 1048576) "M" (divf 1000000 1048576) "G" (divf 1000000000 1048576) "T" (divf 1000000000000 1048576) -}}
{{- mulf (float64 (regexReplaceAll "[A-Za-z]+$" $q "")) (get $per $unit) -}}
{{- end -}}

{{- /* The state dir's volume must hold every queue full at its bound (each grows the file by up to 1.5 × queueMaxBytes: 352 MiB measured for a full 256Mi queue), the history at its bound (up to 2 × history.maxBytes: bbolt's pages of keys written in order are about half full; 241 MiB measured for 128Mi) and the objects' state; an emptyDir past its sizeLimit gets the Pod evicted and the dir deleted. */}}
{{- define "kubediff.checkStateSize" -}}
{{- $cfg := .Values.config -}}
{{- $global := default "256Mi" $cfg.queueMaxBytes -}}
{{- $queues := 0.0 -}}
{{- $count := 0 -}}
{{- if ne (default "json" $cfg.output) "none" -}}
{{- $queues = addf $queues (include "kubediff.mebibytes" (dict "key" "config.queueMaxBytes" "value" $global)) -}}
{{- $count = add1 $count -}}
{{- end -}}
{{- range $cfg.sinks -}}
{{- $queues = addf $queues (include "kubediff.mebibytes" (dict "key" (printf "config.sinks[%s].queueMaxBytes" .name) "value" (default $global .queueMaxBytes))) -}}
{{- $count = add1 $count -}}
{{- end -}}
{{- /* kubediff's defaults (7d, 1Gi) unless the config says; "0" in either turns history off. hasKey, not default: default takes 0 for unset. */}}
{{- $hist := default dict $cfg.history -}}
{{- $retention := ternary (toString $hist.retention) "7d" (hasKey $hist "retention") -}}
{{- $histMax := ternary (toString $hist.maxBytes) "1Gi" (hasKey $hist "maxBytes") -}}
{{- $history := 0.0 -}}
{{- if not (regexMatch "^[0.]+(d|h|m|s)?$" $retention) -}}
{{- $history = mulf (include "kubediff.mebibytes" (dict "key" "config.history.maxBytes" "value" $histMax)) 2 -}}
{{- end -}}
{{- $need := addf (mulf $queues 1.5) $history 256 -}}
{{- $key := ternary "persistence.size" "persistence.emptyDirSizeLimit" .Values.persistence.enabled -}}
{{- $size := ternary .Values.persistence.size .Values.persistence.emptyDirSizeLimit .Values.persistence.enabled -}}
{{- if lt (float64 (include "kubediff.mebibytes" (dict "key" $key "value" $size))) $need -}}
{{- fail (printf "%s: %s is less than the state dir may need, %.0fMi: %d queues on disk (stdout's and each sink's) of %.0fMi in all (queueMaxBytes) grow the file by up to 1.5 times that, the history takes up to 2 times history.maxBytes (%.0fMi), and the watched objects' state takes about 2 KB an object (256Mi counted). Raise %s, or lower queueMaxBytes or config.history.maxBytes" $key (toString $size) (ceil $need) $count $queues $history $key) -}}
{{- end -}}
{{- end -}}

{{- /* A StatefulSet: each replica its own claim (persistence) or its own name for the admission observer's per-replica Service. */}}
{{- define "kubediff.statefulSet" -}}
{{- if or .Values.persistence.enabled .Values.admissionObserver.enabled }}true{{ end -}}
{{- end -}}

{{- /* The admission observer's Service for replica .i (pod <fullname>-<i>). */}}
{{- define "kubediff.observerService" -}}
{{- printf "%s-observer-%d" (include "kubediff.fullname" .root | trunc 50 | trimSuffix "-") (int .i) -}}
{{- end -}}

{{- /* history.store: set through the chart's keys, which mount its password and TLS files; a DSN without a password (the schema refuses one too; this check holds with --skip-schema-validation, and names no part of the DSN). */}}
{{- define "kubediff.checkHistoryStore" -}}
{{- $store := .Values.history.store -}}
{{- $cfgHist := default dict .Values.config.history -}}
{{- if or $cfgHist.store $cfgHist.storePasswordFile -}}
{{- fail "config.history.store and config.history.storePasswordFile: set history.store.dsn and history.store.password.existingSecret instead; the chart mounts the password and TLS files" -}}
{{- end -}}
{{- if regexMatch "password=|^postgres(ql)?://[^/?#@]*:[^/?#]*@" $store.dsn -}}
{{- fail "history.store.dsn holds a password, which the rendered ConfigMap would show to anyone who may read it: put it in a Secret and name it in history.store.password.existingSecret" -}}
{{- end -}}
{{- if not $store.dsn -}}
{{- if $store.password.existingSecret -}}
{{- fail "history.store.password.existingSecret is set without history.store.dsn" -}}
{{- end -}}
{{- if or $store.tls.existingSecret $store.tls.sslMode $store.tls.clientCertificate -}}
{{- fail "history.store.tls is set without history.store.dsn" -}}
{{- end -}}
{{- end -}}
{{- if and $store.tls.clientCertificate (not $store.tls.existingSecret) -}}
{{- fail "history.store.tls.clientCertificate takes tls.crt and tls.key from history.store.tls.existingSecret: set it" -}}
{{- end -}}
{{- end -}}
