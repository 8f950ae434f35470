package app

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/history/historyapi"
	"github.com/kubediff/kubediff/pkg/history/pgstore"
	"github.com/kubediff/kubediff/pkg/state"
)

// catchUpWait bounds how long a read waits for the rows waiting in the
// state dir to reach the database before it asks.
const catchUpWait = 2 * time.Second

// historyReader is what the cluster's history API, page, MCP and
// aggregated API read: the state dir's history, or, with a history
// store reached at start, this cluster's history in the database, which
// outlives the Pod (a replica rescheduled with an empty state dir still
// answers for the days before it). A read of the database first writes
// what waits, so that a change kubediff printed is in the answer; while
// the database cannot answer, the state dir does.
func historyReader(st *state.Store, shipper *pgstore.Shipper, log *slog.Logger) historyapi.Store {
	if st == nil {
		return nil
	}
	if shipper == nil || shipper.Store == nil {
		return st.History()
	}
	return &databaseFirst{db: shipper.Store.Cluster(shipper.Writer.Cluster), dir: st.History(), log: log,
		catchUp: func() {
			st.CatchUp()
			ctx, cancel := context.WithTimeout(context.Background(), catchUpWait)
			defer cancel()
			_, _ = shipper.ShipAll(ctx) // a failure is the shipper's to report
		}}
}

// databaseFirst reads the database, and the state dir while the
// database cannot answer (said once a run).
type databaseFirst struct {
	db, dir historyapi.Store
	catchUp func()
	log     *slog.Logger
	warned  atomic.Bool
}

// readFirst asks the database, then, failing that, the state dir.
func readFirst[T any](d *databaseFirst, ask func(historyapi.Store) (T, error)) (T, error) {
	d.catchUp()
	v, err := ask(d.db)
	if err == nil || !pgstore.Unreachable(err) {
		return v, err
	}
	if !d.warned.Swap(true) {
		d.log.Warn("history store: cannot read; the history API answers from the state dir meanwhile", "err", err)
	}
	return ask(d.dir)
}

// Records implements historyapi.Store.
func (d *databaseFirst) Records(q history.Query) (history.Page, error) {
	return readFirst(d, func(s historyapi.Store) (history.Page, error) { return s.Records(q) })
}

// At implements historyapi.Store.
func (d *databaseFirst) At(id change.ObjectID, t time.Time) ([]byte, error) {
	return readFirst(d, func(s historyapi.Store) ([]byte, error) { return s.At(id, t) })
}

// Steps implements historyapi.Store.
func (d *databaseFirst) Steps(id change.ObjectID, until time.Time, limit int) (history.Steps, error) {
	return readFirst(d, func(s historyapi.Store) (history.Steps, error) { return s.Steps(id, until, limit) })
}

// Resolve implements historyapi.Store.
func (d *databaseFirst) Resolve(name string) ([]change.Resource, error) {
	return readFirst(d, func(s historyapi.Store) ([]change.Resource, error) { return s.Resolve(name) })
}

// Scopes implements historyapi.Store.
func (d *databaseFirst) Scopes(q history.Query) ([]history.Scope, error) {
	return readFirst(d, func(s historyapi.Store) ([]history.Scope, error) { return s.Scopes(q) })
}
