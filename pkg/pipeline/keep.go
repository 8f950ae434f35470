package pipeline

import (
	"sync/atomic"

	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/identity"
	"github.com/kubediff/kubediff/pkg/record"
	"github.com/kubediff/kubediff/pkg/state"
	"github.com/kubediff/kubediff/pkg/watcher"
)

// Keeper keeps records in the history (state.Store), each written with
// the state of the object stored at the ref.
type Keeper interface {
	Keep(history.Entry, state.Ref)
}

// keep is the stage that hands each record, with the object's states
// around it, to the history, before the gate: a follower keeps the same
// history as the leader, so either answers a query. The state store
// writes the record with the object's new state, which the watcher notes
// after the record is made.
type keep struct {
	history Keeper                          // nil: no history
	cluster *atomic.Pointer[record.Cluster] // set on every record (nil: none)
	next    *Gate
}

func (k keep) emit(ev watcher.Event, c record.Change, _ []identity.Hop) {
	c.Cluster = k.cluster.Load()
	if k.history != nil {
		k.history.Keep(history.Entry{Change: c, Resource: ev.Resource, Old: ev.Old, New: ev.New}, ev.Stored)
	}
	k.next.Emit(c)
}

// keepState hands the history an object's new state without a record:
// an update the quiet rules keep out of the stream (a replica counter, a
// Pod's readiness), which the object nonetheless went through. c is the
// declined record's header (its time and object).
func (k keep) keepState(ev watcher.Event, c record.Change) {
	if k.history != nil {
		k.history.Keep(history.Entry{Change: c, Resource: ev.Resource, Old: ev.Old, New: ev.New, StateOnly: true}, ev.Stored)
	}
}
