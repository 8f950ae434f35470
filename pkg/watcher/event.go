// Package watcher runs one reflector per watched type and namespace scope
// and turns what the reflectors see into Events: objects added,
// updated or deleted after the caches first synced.
package watcher

import (
	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/state"
)

// EventType says what happened to an object.
type EventType = change.Type

// Event types, as they appear in change records.
const (
	Added   = change.Added
	Updated = change.Updated
	Deleted = change.Deleted
)

// Event is one observed change, as the watcher hands it to its handler:
// the change itself, and where the state dir keeps the object.
type Event struct {
	change.Event
	// Note names the object in the state dir and gathers the records the
	// pipeline keeps of the event (nil without a state dir): the watcher
	// hands it to the state store with the object's new state once the
	// handler returns, so that both reach the disk together (the
	// protocol is in pkg/state's package comment).
	Note *state.Note
}

// Handler receives events on the reflector's goroutine. It must be quick and
// must never block: a slow handler delays every later event of its type.
type Handler func(Event)
