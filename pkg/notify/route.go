package notify

import (
	"slices"

	"github.com/kubediff/kubediff/pkg/glob"
	"github.com/kubediff/kubediff/pkg/record"
)

// GroupResource names a type by API group and plural resource name.
type GroupResource struct{ Group, Resource string }

// Match selects the records a sink receives. Empty fields match everything.
type Match struct {
	// Resources are the types to send, resolved from the names users write.
	Resources []GroupResource
	// Namespaces are glob patterns (prod-*); cluster-scoped objects match
	// only when this is empty.
	Namespaces []string
	// Types are record types: added, updated, deleted.
	Types []string
	// Labels selects by the object's labels (a parsed label selector); nil
	// matches everything.
	Labels func(map[string]string) bool
	// Clusters are glob patterns of the records' cluster names (several
	// clusters watched in one process).
	Clusters []string
	// Rules are names or glob patterns of rules (pkg/rules): a record
	// that matched one of them is sent.
	Rules []string
	// Severity is the least severity sent (record.Severities): a record
	// that matched no rule has none.
	Severity string
}

// Matches reports whether c is for this sink.
func (m Match) Matches(c record.Change) bool {
	if len(m.Types) > 0 && !slices.Contains(m.Types, c.Type) {
		return false
	}
	if len(m.Resources) > 0 && !slices.Contains(m.Resources, GroupResource{Group: c.Group(), Resource: c.Resource}) {
		return false
	}
	if len(m.Namespaces) > 0 && (c.Namespace == "" || !glob.MatchAny(m.Namespaces, c.Namespace)) {
		return false
	}
	if len(m.Clusters) > 0 && (c.Cluster == nil || !glob.MatchAny(m.Clusters, c.Cluster.Name)) {
		return false
	}
	if len(m.Rules) > 0 && !slices.ContainsFunc(c.Rules, func(name string) bool { return glob.MatchAny(m.Rules, name) }) {
		return false
	}
	if m.Severity != "" && record.SeverityRank(c.Severity) < record.SeverityRank(m.Severity) {
		return false
	}
	return m.Labels == nil || m.Labels(c.Labels)
}

// Route is one sink's queue and what it wants.
type Route struct {
	Queue Queue
	Match Match
}

// Router hands each record to every sink whose match selects it.
type Router []Route

// Dispatch enqueues c on each matching sink and returns where it went. It
// waits only for a queue made with Block (stdout read by a slow pipe).
func (r Router) Dispatch(c record.Change) []Mark {
	var marks []Mark
	for _, route := range r {
		if route.Match.Matches(c) {
			if m, ok := route.Queue.enqueue(c); ok {
				marks = append(marks, m)
			}
		}
	}
	return marks
}

// Queues returns the sinks' queues.
func (r Router) Queues() []Queue {
	out := make([]Queue, 0, len(r))
	for _, route := range r {
		out = append(out, route.Queue)
	}
	return out
}
