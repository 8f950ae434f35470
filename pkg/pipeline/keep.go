package pipeline

import (
	"sync/atomic"

	"github.com/kubediff/kubediff/pkg/identity"
	"github.com/kubediff/kubediff/pkg/journal"
	"github.com/kubediff/kubediff/pkg/record"
	"github.com/kubediff/kubediff/pkg/watcher"
)

// Keeper keeps records of no stored object in the history: an Event's
// facts about the object it regards. The records of a watch event go in
// its note instead (watcher.Event.Note), which the watcher's Journal
// takes with the object's new state. The pipeline declares it and
// imports no store; the state dir's store implements it.
type Keeper interface {
	Keep(...journal.Entry)
}

// keep is the stage that hands each record, with the object's states
// around it, to the history, before the gate: a follower keeps the same
// history as the leader, so either answers a query. The record goes in
// the event's note, which the watcher hands to its Journal with the
// object's new state once the pipeline returns (or, for a held update,
// the holding stage hands to Release): record and state reach the disk
// together.
type keep struct {
	history Keeper                          // nil: no history
	cluster *atomic.Pointer[record.Cluster] // set on every record (nil: none)
	next    *Gate
}

func (k keep) emit(ev watcher.Event, c record.Change, _ []identity.Hop) {
	c.Cluster = k.cluster.Load()
	k.keep(ev, journal.Entry{Change: c, Resource: ev.Resource, Old: ev.Old, New: ev.New})
	k.next.Emit(c)
}

// keepState hands the history an object's new state without a record:
// an update the quiet rules keep out of the stream (a replica counter, a
// Pod's readiness), which the object nonetheless went through. c is the
// declined record's header (its time and object).
func (k keep) keepState(ev watcher.Event, c record.Change) {
	k.keep(ev, journal.Entry{Change: c, Resource: ev.Resource, Old: ev.Old, New: ev.New, StateOnly: true})
}

// keep puts e in ev's note, or, for an event of no stored object, hands
// it to the history at once.
func (k keep) keep(ev watcher.Event, e journal.Entry) {
	switch {
	case k.history == nil:
	case ev.Note != nil:
		ev.Note.Keep(e)
	default:
		k.history.Keep(e)
	}
}
