package release

import (
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubediff/kubediff/pkg/record"
)

// maxStates bounds the states kept per Application, Kustomization or
// HelmRelease: only states that differ in what a record names count.
const maxStates = 32

// timeline is an object's states as the watch saw them, oldest first.
type timeline []versioned[record.Release]

// add notes r as of rv, unless it is the state already noted last.
func (t timeline) add(rv uint64, r record.Release) timeline {
	if n := len(t); n > 0 && t[n-1].value == r {
		return t
	}
	t = append(t, versioned[record.Release]{rv, r})
	if len(t) > maxStates {
		t = append(t[:0:0], t[len(t)-maxStates:]...)
	}
	return t
}

// at is the state at resourceVersion rv (0: the newest): the newest one
// written before it.
func (t timeline) at(rv uint64) (record.Release, bool) {
	for i := len(t) - 1; i >= 0; i-- {
		if rv == 0 || t[i].rv < rv {
			return t[i].value, true
		}
	}
	return record.Release{}, false
}

// applicationState is what a record names of an Argo CD Application:
// its operation's phase and times, and the Git revision being synced
// while the operation runs (Argo CD writes the running operation before
// it applies anything), else the revision last synced.
func applicationState(obj *unstructured.Unstructured) record.Release {
	r := record.Release{Tool: record.ToolArgoCD, Kind: kindApplication, Namespace: obj.GetNamespace(), Name: obj.GetName()}
	status, _, _ := unstructured.NestedMap(obj.Object, "status")
	synced := str(status, "sync", "revision")
	if synced == "" {
		if revs, _, _ := unstructured.NestedStringSlice(status, "sync", "revisions"); len(revs) > 0 {
			synced = revs[0] // a multi-source Application: its first source
		}
	}
	op, _, _ := unstructured.NestedMap(status, "operationState")
	r.Status, r.StartedAt, r.FinishedAt = str(op, "phase"), str(op, "startedAt"), str(op, "finishedAt")
	r.GitRevision = synced
	if r.Status == "Running" {
		r.GitRevision = first(str(op, "syncResult", "revision"), str(op, "operation", "sync", "revision"), synced)
	}
	return r
}

// kustomizationState is what a record names of a Flux Kustomization:
// the revision it applied last or, while it reconciles (the controller
// writes lastAttemptedRevision and the Reconciling condition before it
// applies), the revision it is applying.
func kustomizationState(obj *unstructured.Unstructured) record.Release {
	r := record.Release{Tool: record.ToolFlux, Kind: kindKustomization, Namespace: obj.GetNamespace(), Name: obj.GetName()}
	status, _, _ := unstructured.NestedMap(obj.Object, "status")
	r.GitRevision = str(status, "lastAppliedRevision")
	r.Status = fluxStatus(status)
	if r.Status == "Reconciling" {
		r.GitRevision = first(str(status, "lastAttemptedRevision"), r.GitRevision)
	}
	return r
}

// helmReleaseState is what a record names of a Flux HelmRelease: the
// Helm release it made last (status.history, v2) or the chart version
// it applied (lastAppliedRevision, v2beta1) or, while it reconciles,
// the chart version it is applying (lastAttemptedRevision), without a
// Helm revision: helm-controller writes lastAttemptedRevision and the
// Reconciling condition before Helm's action and the release it made
// to status.history only after it, so the hooks and objects Helm
// writes meanwhile belong to a release history does not name yet.
func helmReleaseState(obj *unstructured.Unstructured) record.Release {
	r := record.Release{Tool: record.ToolFlux, Kind: kindHelmRelease, Namespace: obj.GetNamespace(), Name: obj.GetName()}
	status, _, _ := unstructured.NestedMap(obj.Object, "status")
	r.Status = fluxStatus(status)
	history, _, _ := unstructured.NestedSlice(status, "history")
	last, made := firstMap(history)
	chart := first(str(obj.Object, "spec", "chart", "spec", "chart"), str(last, "chartName"))
	if attempted := str(status, "lastAttemptedRevision"); r.Status == "Reconciling" && attempted != "" {
		r.Chart = chart + "-" + attempted
		return r
	}
	if made {
		r.Chart = str(last, "chartName") + "-" + str(last, "chartVersion")
		r.AppVersion = str(last, "appVersion")
		if v, ok := last["version"].(int64); ok {
			r.Revision = int(v)
		}
		return r
	}
	if v := first(str(status, "lastAppliedRevision"), str(status, "lastAttemptedRevision")); v != "" {
		r.Chart = chart + "-" + v
	}
	return r
}

// fluxStatus is Reconciling while the Reconciling condition is True,
// else the Ready condition's reason (ReconciliationSucceeded, …).
func fluxStatus(status map[string]any) string {
	conditions, _, _ := unstructured.NestedSlice(status, "conditions")
	ready := ""
	for _, c := range conditions {
		m, _ := c.(map[string]any)
		switch str(m, "type") {
		case "Reconciling":
			if str(m, "status") == "True" {
				return "Reconciling"
			}
		case "Ready":
			ready = str(m, "reason")
		}
	}
	return ready
}

func str(m map[string]any, path ...string) string {
	s, _, _ := unstructured.NestedFieldNoCopy(m, path...)
	switch v := s.(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	}
	return ""
}

func first(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

func firstMap(list []any) (map[string]any, bool) {
	if len(list) == 0 {
		return nil, false
	}
	m, ok := list[0].(map[string]any)
	return m, ok
}
