package rollout

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func workload(kind string, generation int64, spec, status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec, "status": status}}
	u.SetKind(kind)
	u.SetGeneration(generation)
	return u
}

func TestOutcome(t *testing.T) {
	quota := map[string]any{"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate", "message": `pods "web-1" is forbidden: exceeded quota: q`}
	for _, tc := range []struct {
		name string
		u    *unstructured.Unstructured
		want string
	}{
		{"rolled out", workload("Deployment", 2, map[string]any{"replicas": int64(5)},
			map[string]any{"observedGeneration": int64(2), "replicas": int64(5), "updatedReplicas": int64(5), "availableReplicas": int64(5)}), "rolled out 5/5"},
		{"old Pods still there", workload("Deployment", 2, map[string]any{"replicas": int64(5)},
			map[string]any{"observedGeneration": int64(2), "replicas": int64(7), "updatedReplicas": int64(5), "availableReplicas": int64(5)}), ""},
		{"spec not yet seen", workload("Deployment", 3, map[string]any{"replicas": int64(5)},
			map[string]any{"observedGeneration": int64(2), "replicas": int64(5), "updatedReplicas": int64(5), "availableReplicas": int64(5)}), ""},
		{"over a quota", workload("Deployment", 1, map[string]any{"replicas": int64(3)},
			map[string]any{"observedGeneration": int64(1), "replicas": int64(1), "conditions": []any{quota}}), `stalled: FailedCreate: pods "web-1" is forbidden: exceeded quota: q`},
		{"past its deadline", workload("Deployment", 1, map[string]any{},
			map[string]any{"conditions": []any{map[string]any{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}}}), "stalled: ProgressDeadlineExceeded"},
		{"a DaemonSet", workload("DaemonSet", 1, map[string]any{},
			map[string]any{"observedGeneration": int64(1), "desiredNumberScheduled": int64(3), "currentNumberScheduled": int64(3), "updatedNumberScheduled": int64(3), "numberAvailable": int64(3)}), "rolled out 3/3"},
		{"not a workload", workload("ConfigMap", 1, map[string]any{}, map[string]any{}), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Outcome(tc.u); got != tc.want {
				t.Errorf("Outcome = %q, want %q", got, tc.want)
			}
		})
	}
}
