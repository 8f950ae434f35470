// Package rollout says how a workload controller's rollout stands, from
// the object's spec and status as the controller reports them: rolled
// out ("rolled out 5/5"), stalled ("stalled: FailedCreate: pods … is
// forbidden: exceeded quota"), or under way (""). It reads Deployments,
// StatefulSets, DaemonSets and ReplicaSets.
package rollout

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Outcome says how the workload's rollout ended, or "" while it is under
// way (or the object is not a workload).
func Outcome(u *unstructured.Unstructured) string {
	if u == nil {
		return ""
	}
	if why := stalled(u); why != "" {
		return "stalled: " + why
	}
	if observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration"); observed < u.GetGeneration() {
		return "" // the controller has not seen the latest spec yet
	}
	status := func(field string) int64 {
		n, _, _ := unstructured.NestedInt64(u.Object, "status", field)
		return n
	}
	var desired, done, current int64
	switch u.GetKind() {
	case "Deployment":
		desired, done, current = replicas(u), min(status("updatedReplicas"), status("availableReplicas")), status("replicas")
	case "StatefulSet":
		if rev, _, _ := unstructured.NestedString(u.Object, "status", "updateRevision"); rev != "" {
			if cur, _, _ := unstructured.NestedString(u.Object, "status", "currentRevision"); cur != rev && status("updatedReplicas") < replicas(u) {
				return ""
			}
		}
		desired, done, current = replicas(u), status("readyReplicas"), status("replicas")
	case "DaemonSet":
		desired, done, current = status("desiredNumberScheduled"), min(status("updatedNumberScheduled"), status("numberAvailable")), status("currentNumberScheduled")
	case "ReplicaSet":
		desired, done, current = replicas(u), status("availableReplicas"), status("replicas")
	default:
		return ""
	}
	if done < desired || current != desired {
		return ""
	}
	return fmt.Sprintf("rolled out %d/%d", done, desired)
}

// UnderWay says whether u is a workload whose rollout has neither ended
// nor stalled: its status will move again as its Pods become ready.
func UnderWay(u *unstructured.Unstructured) bool {
	if u == nil {
		return false
	}
	switch u.GetKind() {
	case "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet":
		return Outcome(u) == ""
	}
	return false
}

// replicas is spec.replicas, 1 when unset, as the API server defaults it.
func replicas(u *unstructured.Unstructured) int64 {
	n, found, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
	if !found {
		return 1
	}
	return n
}

// stalled is why the controller says the rollout cannot go on ("" when
// it does not): a ReplicaFailure condition, or Progressing false.
func stalled(u *unstructured.Unstructured) string {
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conditions {
		m, _ := c.(map[string]any)
		typ, _ := m["type"].(string)
		status, _ := m["status"].(string)
		reason, _ := m["reason"].(string)
		message, _ := m["message"].(string)
		if typ == "ReplicaFailure" && status == "True" || typ == "Progressing" && status == "False" {
			if message != "" {
				return reason + ": " + message
			}
			return reason
		}
	}
	return ""
}
