// Package pipeline is the path of a change from the watch to the sinks,
// readable top to bottom in this one file:
//
//	watcher ──Event──▶ filter ──▶ diff ──record──▶ coalesce ──▶ gate ──▶ router ──▶ sink queues
//	  (before caching: CacheTransform, the diff's prune and redact passes)
//
// Every stage is a package of its own (watcher, diff, leader, notify);
// this one only connects them and counts what passes.
package pipeline

import (
	"context"
	"log/slog"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/kubediff/kubediff/pkg/diff"
	"github.com/kubediff/kubediff/pkg/discovery"
	"github.com/kubediff/kubediff/pkg/glob"
	"github.com/kubediff/kubediff/pkg/leader"
	"github.com/kubediff/kubediff/pkg/metrics"
	"github.com/kubediff/kubediff/pkg/notify"
	"github.com/kubediff/kubediff/pkg/record"
	"github.com/kubediff/kubediff/pkg/watcher"
)

// Options are the stages a Pipeline connects.
type Options struct {
	// Differ turns events into records.
	Differ *diff.Differ
	// Router hands records to the sinks' queues.
	Router notify.Router
	// Metrics count events observed and records emitted.
	Metrics *metrics.Metrics
	// ExcludeNamespaces are namespace globs never reported. The server
	// filters the namespaces that existed at the first plan; namespaces
	// created later that match are filtered here.
	ExcludeNamespaces []string
	// Election makes the gate start as a follower: it holds up to
	// HoldRecords records until leader.Elector makes it lead, and tracks
	// delivery progress for a takeover. Without it, the pipeline emits
	// from the start.
	Election    bool
	HoldRecords int
	// OwnLeases are kubediff's own election Leases ("namespace/name"),
	// never reported: a leader reporting the progress it publishes would
	// publish again on delivering that record, forever.
	OwnLeases []string
	// Holds keeps held updates' stored states in place (the state store;
	// nil without a state dir).
	Holds StateHolds
	Log   *slog.Logger
}

// Pipeline carries watch events to the sinks.
type Pipeline struct {
	differ    *diff.Differ
	exclude   []string
	ownLeases []string
	coalesce  *coalescer
	gate      *leader.Gate
	router    notify.Router
	metrics   *metrics.Metrics
}

// New connects the stages.
func New(o Options) *Pipeline {
	p := &Pipeline{differ: o.Differ, exclude: o.ExcludeNamespaces, ownLeases: o.OwnLeases, router: o.Router, metrics: o.Metrics}
	p.gate = leader.NewGate(p.dispatch, o.HoldRecords, o.Election, o.Log)
	if !o.Election {
		p.gate.Lead(0)
	}
	p.coalesce = newCoalescer(o.Differ, p.gate.Emit, o.Holds)
	return p
}

// Run releases the records the pipeline holds to merge (see coalesce.go)
// until ctx is done, and then all of them.
func (p *Pipeline) Run(ctx context.Context) { p.coalesce.run(ctx) }

// CacheTransform is what each object of type r goes through before the
// watcher caches it: the diff drops what is never reported and redacts
// sensitive values, so the cache is smaller, each update has less to
// compare, and secrets never sit in memory in the clear.
func (p *Pipeline) CacheTransform(r discovery.Resource) cache.TransformFunc {
	return p.differ.CacheTransform(r)
}

// Handle is the watcher's handler: it runs on the reflector's goroutine
// and does not block (the gate holds or enqueues, queues drop when full),
// except that stdout's queue waits for its reader: a slow pipe slows the
// watches down instead of losing records.
func (p *Pipeline) Handle(ev watcher.Event) {
	p.metrics.EventsObserved.WithLabelValues(ev.Resource.GVR.Resource, string(ev.Type)).Inc()
	// 1. Filter what the server could not, and kubediff's own Leases.
	obj := ev.Object()
	if ns := obj.GetNamespace(); ns != "" && glob.MatchAny(p.exclude, ns) || p.own(ev.Resource, obj) {
		return
	}
	// 2. Diff: nothing to report when only ignored fields changed.
	in := diff.Input{Type: string(ev.Type), Resource: ev.Resource, Old: ev.Old, New: ev.New, FinalStateUnknown: ev.FinalStateUnknown, AfterGap: ev.AfterGap}
	c, ok := p.differ.Diff(in)
	if !ok {
		return
	}
	// 3. Coalesce: a controller's quick steps on an object become one
	// record (its state before them diffed against its state after).
	// 4. Gate: the leader emits, a follower holds the record for a takeover.
	p.coalesce.add(in, ev.Stored, c)
}

// dispatch is the gate's way out: 5. route the record to every sink
// whose match selects it.
func (p *Pipeline) dispatch(c record.Change) []notify.Mark {
	p.metrics.RecordsEmitted.WithLabelValues(c.Resource, c.Type).Inc()
	return p.router.Dispatch(c)
}

// Gate is the leader gate, for the election to open and close.
func (p *Pipeline) Gate() *leader.Gate { return p.gate }

// own reports whether obj is one of kubediff's own election Leases.
func (p *Pipeline) own(r discovery.Resource, obj *unstructured.Unstructured) bool {
	return len(p.ownLeases) > 0 && r.GVR.Group == "coordination.k8s.io" && r.GVR.Resource == "leases" &&
		slices.Contains(p.ownLeases, obj.GetNamespace()+"/"+obj.GetName())
}
