// Package journal holds what the history is written as: an Entry (a
// record with the object's states around it), the Note a watch event
// carries its entries in, the stored Object state they lead to, and the
// Ref naming that object. It sits low, beside pkg/change, and imports no
// storage: the watcher and the pipeline name what they write with these
// types and declare, each in its own package, the little of the store
// they call (watcher.Journal, pipeline.StateHolds, pipeline.Keeper), so
// that neither imports a storage package (test/tree guards it). The
// state dir (pkg/state) implements them; internal/app wires it in.
//
// # A record and its state go together
//
// A record reaches the store in the call that notes its object's new
// state, never apart from it. A record written alone, a crash, and the
// restart finds the old state stored, reports the change again, and the
// history holds it twice; a state written alone, and the change is lost.
// So the store takes both in one call, and no record ever waits for a
// state that comes later:
//
//   - The watcher makes a Note for each watch event; the pipeline's keep
//     stage adds the records (or the state alone: Entry.StateOnly) it
//     keeps of the event to it; once the pipeline's handler returns, the
//     watcher hands the note to the store with the object's new state
//     (Put, Delete; Unstored when the state cannot be encoded). A stage
//     that drops or filters the event keeps nothing: its state alone goes.
//   - A stage that holds an update past that call (the coalescer joining
//     a rollout's steps, identify waiting for who made a write) holds the
//     object's stored state too (Hold): states noted meanwhile, and their
//     records, wait in memory, so the state on disk stays the one the held
//     record starts from. The stage gives the held event a note of its
//     own, and Release takes its records; the last Release notes the
//     newest state with every record that waited for it.
//   - A type's first list is written with the records of what it reports
//     (WriteFull; noted for the next write when that write fails).
//     Forget, a type no longer watched, ends its holds: their records go
//     with the next write.
//   - Records of no stored object (an Event's facts about another object)
//     go with the next write (Keep).
package journal

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/record"
)

// Entry is one record to keep, with the object's states around it.
type Entry struct {
	Change record.Change
	// Resource is the record's type, so that a query names it as
	// kubectl does.
	Resource change.Resource
	// Old and New are the object's states before and after the record
	// (nil: none), as the watcher caches them: pruned and redacted. Old
	// is kept only for the oldest record of an object.
	Old, New *unstructured.Unstructured
	// NewJSON, when set, is New as JSON already (the state store's copy):
	// it is kept instead of encoding New again.
	NewJSON []byte
	// StateOnly keeps the object's new state without its record: an
	// update the quiet rules hid (status counters, a Pod starting up).
	// The object's states at every moment are then what the cluster
	// held; queries for records never list it. Change gives its time and
	// object.
	StateOnly bool
	// Owners are, for an event record (record.EventRecord), the object's
	// owners, nearest first: the event is listed among their changes too
	// (a Pod's FailedScheduling under its Deployment).
	Owners []change.ObjectID
}

// Ref names one stored object: its target and key.
type Ref struct{ Target, Key string }

// Note gathers what the pipeline keeps of one watch event for the
// history: the records (or the state alone, Entry.StateOnly) of the
// object at Ref. The watcher makes it, the event carries it down the
// pipeline, and the watcher hands it to the store with the object's new
// state in one call. A stage that holds the event past that call gives
// it a note of its own, whose records Release takes. Only the stage that
// has the event keeps in its note: it is not safe for concurrent use.
type Note struct {
	Ref     Ref
	Records []Entry
}

// Keep adds a record of the note's event.
func (n *Note) Keep(e Entry) { n.Records = append(n.Records, e) }

// Object is an object's state as the watcher caches it.
type Object struct {
	UID, ResourceVersion string
	// Raw is the object's JSON after the cache transform (pruned, secrets
	// redacted): nothing is written to disk that is not in memory.
	Raw []byte
}

// List is a target's complete state, read as it is written: a full
// write (the first list of a type) goes to disk a few MiB per
// transaction, so that neither it nor its transaction is ever all in
// memory at once.
type List interface {
	Len() int
	Key(i int) string     // in ascending order
	Object(i int) *Object // nil: left out
}
