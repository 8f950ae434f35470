package pipeline

import (
	"slices"

	"github.com/kubediff/kubediff/pkg/glob"
	"github.com/kubediff/kubediff/pkg/watcher"
)

// filter is the first stage: it drops what the API server could not
// filter (namespaces created after the plan that an exclude pattern
// matches), kubediff's own election Leases, and the APIServices the API
// server manages itself (one per API group, a CRD's among them: installing
// a CRD is the CRD's record, not also its group's APIService's).
type filter struct {
	excludeNamespaces []string
	ownLeases         []string // "namespace/name"
}

func (f filter) drops(ev watcher.Event) bool {
	obj := ev.Object()
	ns := obj.GetNamespace()
	if ns != "" && glob.MatchAny(f.excludeNamespaces, ns) {
		return true
	}
	gvr := ev.Resource.GVR
	if gvr.Group == "apiregistration.k8s.io" && gvr.Resource == "apiservices" && obj.GetLabels()[automanagedLabel] != "" {
		return true
	}
	return len(f.ownLeases) > 0 && gvr.Group == "coordination.k8s.io" && gvr.Resource == "leases" &&
		slices.Contains(f.ownLeases, ns+"/"+obj.GetName())
}

// automanagedLabel marks the APIServices the kube-aggregator creates and
// keeps for built-in and CRD groups ("true", or "onstart").
const automanagedLabel = "kube-aggregator.kubernetes.io/automanaged"
