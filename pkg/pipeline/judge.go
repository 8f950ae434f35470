package pipeline

import (
	"sync/atomic"

	"github.com/kubediff/kubediff/pkg/identity"
	"github.com/kubediff/kubediff/pkg/metrics"
	"github.com/kubediff/kubediff/pkg/record"
	"github.com/kubediff/kubediff/pkg/rules"
	"github.com/kubediff/kubediff/pkg/watcher"
)

// judge is the stage that says what the rules (pkg/rules) say of each
// record, between identify (a rule may test the user) and keep (the
// history keeps what they said): it names the rules matched, the highest
// severity and a summary on the record, and counts the record. A record
// that a drop rule matched goes on as a state only: the history still
// moves the object to its new state, no sink gets it.
type judge struct {
	rules      *rules.Set                      // nil or empty: no rules
	namespaces *namespaceDeletions             // marks deletions made with their namespace, for rules to read
	cluster    *atomic.Pointer[record.Cluster] // set on every record first: a rule may test it
	metrics    *metrics.Metrics
	next       emitter
}

func (j judge) emit(ev watcher.Event, c record.Change, hops []identity.Hop) {
	c.Cluster = j.cluster.Load()
	j.namespaces.mark(&c)
	if j.rules.Len() > 0 {
		in := rules.Input{Record: &c}
		if ev.New != nil {
			in.Object = ev.New.Object
		}
		if ev.Old != nil {
			in.OldObject = ev.Old.Object
		}
		v := j.rules.Judge(in)
		c.Rules, c.Severity, c.Summary = v.Rules, v.Severity, v.Summary
		for _, name := range v.Rules {
			j.metrics.CountRuleMatch(clusterName(c), name, j.rules.Severity(name))
		}
		for _, name := range v.Failed {
			j.metrics.RuleFailures.WithLabelValues(name).Inc()
		}
		if v.Drop {
			j.count(c)
			j.next.keepState(ev, c)
			return
		}
	}
	j.count(c)
	j.next.emit(ev, c, hops)
}

func (j judge) count(c record.Change) {
	j.metrics.CountChange(clusterName(c), c.Resource, c.Type, c.Namespace, c.Severity)
	if r := c.Release; r != nil {
		state := "unknown"
		if r.Revision > 0 || r.GitRevision != "" || r.Chart != "" || r.Status != "" {
			state = "known"
		}
		j.metrics.ReleaseRecords.WithLabelValues(r.Tool, state).Inc()
	}
}

func (j judge) keepState(ev watcher.Event, c record.Change) { j.next.keepState(ev, c) }

// clusterName is the cluster label of the records' metrics: the name of
// the cluster of a fleet (or the one given), "" when none is known.
func clusterName(c record.Change) string {
	if c.Cluster == nil {
		return ""
	}
	return c.Cluster.Name
}
