package pipeline

import (
	"sync/atomic"

	"github.com/kubediff/kubediff/pkg/drift"
	"github.com/kubediff/kubediff/pkg/identity"
	"github.com/kubediff/kubediff/pkg/metrics"
	"github.com/kubediff/kubediff/pkg/record"
	"github.com/kubediff/kubediff/pkg/watcher"
)

// gitops is the stage that says how each record stands to its object's
// GitOps owner (pkg/drift): made by it (via sync) or outside it, with
// the fields that drifted from the declared state and the outside
// record a sync put back. It comes after coalesce and identify, which
// keep each object's records in order (the drift of one write is known
// from those before it), and before judge, so that a rule may test it.
// It makes no API call: an update costs a few map reads unless its
// object carries a GitOps mark. It keeps kubediff_drift_total and
// kubediff_drift_open (the latter told by the classifier as drift opens
// and ends), counting every record, whatever a rule later drops.
type gitops struct {
	classifier *drift.Classifier
	metrics    *metrics.Metrics // nil: none kept
	next       emitter
}

// newGitops is the stage, its metrics (nil: none) labelled with the
// cluster cluster holds when a drift opens or ends.
func newGitops(classifier *drift.Classifier, m *metrics.Metrics, cluster *atomic.Pointer[record.Cluster], next emitter) gitops {
	if m != nil {
		classifier.OnTransition(func(t drift.Transition) {
			name := ""
			if c := cluster.Load(); c != nil {
				name = c.Name
			}
			if t.Open {
				m.DriftOpened(name, t.Namespace, t.Owner)
			} else {
				m.DriftEnded(name, t.Namespace, t.Owner)
			}
		})
	}
	return gitops{classifier: classifier, metrics: m, next: next}
}

func (g gitops) emit(ev watcher.Event, c record.Change, hops []identity.Hop) {
	g.classifier.Classify(ev.Old, ev.New, &c)
	if g.metrics != nil && c.GitOps != nil {
		g.metrics.CountDrift(c.GitOps.Tool, c.GitOps.Via)
	}
	g.next.emit(ev, c, hops)
}

func (g gitops) keepState(ev watcher.Event, c record.Change) { g.next.keepState(ev, c) }
