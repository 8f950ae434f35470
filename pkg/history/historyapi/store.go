package historyapi

import (
	"time"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/history"
)

// Store is the history as the query layer reads it: a state dir's
// (history.Reader) or a PostgreSQL database's, one cluster of it
// (pgstore.Reader). Blame, restore, the two-moment diff and access
// decisions are built on it here, once for both.
type Store interface {
	// Records returns a page of the records q selects, oldest first.
	Records(q history.Query) (history.Page, error)
	// At returns the object's state at t (history.ErrNotFound,
	// history.ErrBeforeHistory).
	At(id change.ObjectID, t time.Time) ([]byte, error)
	// Steps returns at most limit of the object's kept steps at or
	// before until, newest first.
	Steps(id change.ObjectID, until time.Time, limit int) (history.Steps, error)
	// Resolve returns the kept types whose names match name.
	Resolve(name string) ([]change.Resource, error)
	// Scopes returns the types and namespaces kept that q may read.
	Scopes(q history.Query) ([]history.Scope, error)
}

var _ Store = (*history.Reader)(nil)
