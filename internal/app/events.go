package app

import (
	"slices"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/config"
	"github.com/kubediff/kubediff/pkg/discovery"
	"github.com/kubediff/kubediff/pkg/pipeline"
	"github.com/kubediff/kubediff/pkg/record"
	"github.com/kubediff/kubediff/pkg/rollout"
	"github.com/kubediff/kubediff/pkg/state"
	"github.com/kubediff/kubediff/pkg/watcher"
)

// eventOptions reads Events as facts about objects (docs/why.md) when
// the stream shows some or the history keeps them; nil: neither.
func eventOptions(cfg config.Config, st *state.Store, objects *objectLookup) *pipeline.EventOptions {
	if cfg.Events == config.EventsNone && (st == nil || !historyOn(cfg)) {
		return nil
	}
	o := &pipeline.EventOptions{AsChanges: eventsAreChanges(cfg), Objects: objects}
	switch cfg.Events {
	case config.EventsAll:
		o.Show = func(record.Event) bool { return true }
	case config.EventsWarnings:
		o.Show = record.Event.Warning
	}
	return o
}

// coreEvents is the core Event type, for the names people give it.
var coreEvents = change.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "events"}, Kind: "Event", Namespaced: true,
	Singular: "event", ShortNames: []string{"ev"}}

// eventsAreChanges says whether the user asked for Event objects as
// changes of their own: named in resources, or the default rule that
// leaves them unwatched turned off.
func eventsAreChanges(cfg config.Config) bool {
	return !cfg.Diff.Defaults.Events || slices.ContainsFunc(cfg.Resources, func(name string) bool {
		return coreEvents.Matches(name) || coreEvents.Matches(name+".v1") ||
			change.Resource{GVR: schema.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}, Kind: "Event", Singular: "event", ShortNames: []string{"ev"}}.Matches(name)
	})
}

// objectLookup finds the objects Events regard: their types in the
// latest plan, their states in the watcher's caches.
type objectLookup struct {
	// everyType is set when a global selector narrows every type
	// (labelSelector, or a fieldSelector on more than the namespace),
	// those not watched too.
	everyType bool
	kinds     atomic.Pointer[map[schema.GroupVersionKind]change.Resource]
	// narrowed are the types (group and resource) a label selector, or
	// a field selector on more than the namespace, narrows in the latest
	// plan.
	narrowed atomic.Pointer[map[schema.GroupResource]bool]
	watcher  atomic.Pointer[watcher.Watcher]
}

// learn takes the types of a plan, and which its label selectors narrow.
func (l *objectLookup) learn(plan discovery.Plan) {
	kinds := make(map[schema.GroupVersionKind]change.Resource, len(plan.All))
	for _, r := range plan.All {
		kinds[r.GVR.GroupVersion().WithKind(r.Kind)] = r
	}
	narrowed := map[schema.GroupResource]bool{}
	for _, t := range plan.Targets {
		if t.Narrowed {
			narrowed[t.Resource.GVR.GroupResource()] = true
		}
	}
	l.kinds.Store(&kinds)
	l.narrowed.Store(&narrowed)
}

// Narrowed implements pipeline.ObjectLookup.
func (l *objectLookup) Narrowed(r change.Resource) bool {
	narrowed := l.narrowed.Load()
	return l.everyType || narrowed != nil && (*narrowed)[r.GVR.GroupResource()]
}

// Resource implements pipeline.ObjectLookup. A kind of another version
// of the group than the one watched is found too.
func (l *objectLookup) Resource(apiVersion, kind string) (change.Resource, bool) {
	kinds := l.kinds.Load()
	if kinds == nil {
		return change.Resource{}, false
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return change.Resource{}, false
	}
	if r, ok := (*kinds)[gv.WithKind(kind)]; ok {
		return r, true
	}
	for gvk, r := range *kinds {
		if gvk.Group == gv.Group && gvk.Kind == kind {
			return r, true
		}
	}
	return change.Resource{}, false
}

// Object implements pipeline.ObjectLookup.
func (l *objectLookup) Object(r change.Resource, namespace, name string) *unstructured.Unstructured {
	w := l.watcher.Load()
	if w == nil {
		return nil
	}
	return w.Object(r.GVR.Group, r.GVR.Resource, namespace, name)
}

// outcome says how a workload's rollout stands now (fold.Outcome), from
// the object as the watcher caches it.
func (l *objectLookup) outcome(kind, namespace, name string, _ time.Time) string {
	r, ok := l.Resource("apps/v1", kind)
	if !ok {
		return ""
	}
	return rollout.Outcome(l.Object(r, namespace, name))
}
