package pipeline

import (
	"github.com/kubediff/kubediff/pkg/drift"
	"github.com/kubediff/kubediff/pkg/identity"
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
// object carries a GitOps mark.
type gitops struct {
	classifier *drift.Classifier
	next       emitter
}

func (g gitops) emit(ev watcher.Event, c record.Change, hops []identity.Hop) {
	g.classifier.Classify(ev.Old, ev.New, &c)
	g.next.emit(ev, c, hops)
}

func (g gitops) keepState(ev watcher.Event, c record.Change) { g.next.keepState(ev, c) }
