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
