package changegen

import (
	"fmt"
	"math/rand/v2"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// deployment is a Deployment as the API server returns it once rolled
// out: spec, template with probes and resources, status with conditions.
func deployment(i int, rng *rand.Rand) map[string]any {
	meta := metadata("web", i, rng)
	meta["generation"] = int64(1)
	meta["annotations"] = map[string]any{"deployment.kubernetes.io/revision": "1"}
	labels := map[string]any{"app.kubernetes.io/name": fmt.Sprintf("svc-%d", i)}
	container := map[string]any{
		"name": "app", "image": "registry.example.com/shop/svc:1.0.0", "imagePullPolicy": "IfNotPresent",
		"ports": []any{map[string]any{"name": "http", "containerPort": int64(8080), "protocol": "TCP"}},
		"env": []any{
			map[string]any{"name": "SERVICE_NAME", "value": fmt.Sprintf("svc-%d", i)},
			map[string]any{"name": "LOG_LEVEL", "value": "info"},
			map[string]any{"name": "CONFIG_PATH", "value": "/etc/app/app.conf"},
		},
		"resources":              map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "128Mi"}, "limits": map[string]any{"memory": "256Mi"}},
		"readinessProbe":         map[string]any{"httpGet": map[string]any{"path": "/healthz", "port": "http", "scheme": "HTTP"}, "periodSeconds": int64(10), "timeoutSeconds": int64(1), "successThreshold": int64(1), "failureThreshold": int64(3)},
		"volumeMounts":           []any{map[string]any{"name": "config", "mountPath": "/etc/app"}},
		"terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
	}
	return map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
		"spec": map[string]any{
			"replicas": int64(2), "revisionHistoryLimit": int64(10), "progressDeadlineSeconds": int64(600),
			"selector": map[string]any{"matchLabels": labels},
			"strategy": map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxSurge": "25%", "maxUnavailable": "25%"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": labels},
				"spec": map[string]any{
					"containers": []any{container}, "restartPolicy": "Always", "terminationGracePeriodSeconds": int64(30), "dnsPolicy": "ClusterFirst",
					"volumes": []any{map[string]any{"name": "config", "configMap": map[string]any{"name": fmt.Sprintf("config-%d", i), "defaultMode": int64(420)}}},
				},
			},
		},
		"status": map[string]any{
			"observedGeneration": int64(1), "replicas": int64(2), "updatedReplicas": int64(2), "readyReplicas": int64(2), "availableReplicas": int64(2),
			"conditions": []any{
				map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "message": "Deployment has minimum availability.", "lastUpdateTime": "2026-11-20T08:00:05Z", "lastTransitionTime": "2026-11-20T08:00:05Z"},
				map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "message": fmt.Sprintf("ReplicaSet \"web-%d-6d4cf56db6\" has successfully progressed.", i), "lastUpdateTime": "2026-11-20T08:00:05Z", "lastTransitionTime": "2026-11-20T08:00:00Z"},
			},
		},
	}
}

// changeReplicasOrImage scales (odd versions) or rolls out a new image
// (even ones), with the generation the API server bumps and the
// controller's observedGeneration.
func changeReplicasOrImage(u *unstructured.Unstructured, _, version int) {
	if version%2 == 1 {
		_ = unstructured.SetNestedField(u.Object, int64(2+version%5), "spec", "replicas")
	} else {
		containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		containers[0].(map[string]any)["image"] = fmt.Sprintf("registry.example.com/shop/svc:1.%d.0", version)
		_ = unstructured.SetNestedSlice(u.Object, containers, "spec", "template", "spec", "containers")
	}
	generation := u.GetGeneration() + 1
	u.SetGeneration(generation)
	_ = unstructured.SetNestedField(u.Object, generation, "status", "observedGeneration")
}
