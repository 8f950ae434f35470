// Package watcher runs one reflector per watched type and namespace scope
// and turns what the reflectors see into Events: objects added,
// updated or deleted after the caches first synced.
package watcher

import (
	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/journal"
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
// the change itself, and where the journal keeps the object.
type Event struct {
	change.Event
	// Note names the object in the journal and gathers the records the
	// pipeline keeps of the event (nil without a journal): the watcher
	// hands it to the Journal with the object's new state once the
	// handler returns, so that both reach the disk together (the
	// protocol is in pkg/journal's package comment).
	Note *journal.Note
}

// Handler receives events on the reflector's goroutine. It must be quick and
// must never block: a slow handler delays every later event of its type.
type Handler func(Event)
