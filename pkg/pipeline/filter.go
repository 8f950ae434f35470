package pipeline

import (
	"slices"

	"github.com/kubediff/kubediff/pkg/glob"
	"github.com/kubediff/kubediff/pkg/watcher"
)

// filter is the first stage: it drops what the API server could not
// filter (namespaces created after the plan that an exclude pattern
// matches) and kubediff's own election Leases.
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
	return len(f.ownLeases) > 0 && gvr.Group == "coordination.k8s.io" && gvr.Resource == "leases" &&
		slices.Contains(f.ownLeases, ns+"/"+obj.GetName())
}
