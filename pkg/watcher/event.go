// Package watcher runs one reflector per watched type and namespace scope
// and turns what the reflectors see into Events: objects added,
// updated or deleted after the caches first synced.
package watcher

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubediff/kubediff/pkg/discovery"
	"github.com/kubediff/kubediff/pkg/state"
)

// EventType says what happened to an object.
type EventType string

// Event types, as they appear in change records.
const (
	Added   EventType = "added"
	Updated EventType = "updated"
	Deleted EventType = "deleted"
)

// Event is one observed change. Old is nil for Added, New is nil for
// Deleted (Old then holds the last state kubediff knew).
type Event struct {
	Type     EventType
	Resource discovery.Resource
	Old, New *unstructured.Unstructured
	// FinalStateUnknown marks a deletion noticed only on relisting after a
	// watch gap: Old is the last state kubediff saw, not the deleted one.
	FinalStateUnknown bool
	// AfterGap marks a change found by comparing a list with the cache
	// after a gap: a restart with a state dir, or a watch whose
	// resourceVersion the server no longer had. States in between are
	// merged.
	AfterGap bool
	// Stored names the object in the state dir (zero without one), for
	// the pipeline to hold its stored state while it holds the update.
	Stored state.Ref
}

// Object returns the newest known state: New, or Old for a deletion.
func (e Event) Object() *unstructured.Unstructured {
	if e.New != nil {
		return e.New
	}
	return e.Old
}

// Handler receives events on the reflector's goroutine. It must be quick and
// must never block: a slow handler delays every later event of its type.
type Handler func(Event)
