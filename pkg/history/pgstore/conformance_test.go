package pgstore_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/kubediff/kubediff/internal/testpg"
	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/history/historyapi"
	"github.com/kubediff/kubediff/pkg/history/historytest"
	"github.com/kubediff/kubediff/pkg/history/pgstore"
	"github.com/kubediff/kubediff/pkg/journal"
)

var _ historyapi.Store = (*pgstore.Reader)(nil)

// boltSpool is a state dir's outbox without the rest of the state dir.
type boltSpool struct{ db *bolt.DB }

func newSpool(t testing.TB) boltSpool {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "h.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return boltSpool{db}
}

// write keeps entries in the spool's history with the outbox on.
func write(t testing.TB, s boltSpool, now time.Time, entries ...journal.Entry) {
	t.Helper()
	keep := historytest.Keep
	keep.Outbox = true
	if err := s.db.Update(func(tx *bolt.Tx) error { return history.Write(tx, entries, keep, now) }); err != nil {
		t.Fatal(err)
	}
}

func (s boltSpool) waiting() (n int) {
	_ = s.db.View(func(tx *bolt.Tx) error { n = history.OutboxLen(tx); return nil })
	return n
}

func (s boltSpool) reader() *history.Reader { return history.NewReader(s.db, nil) }

func (s boltSpool) TakeOutbox(max int) ([]history.Row, func() error, error) {
	var rows []history.Row
	var last []byte
	err := s.db.View(func(tx *bolt.Tx) (err error) {
		rows, last, err = history.ReadOutbox(tx, max)
		return err
	})
	return rows, func() error { return s.db.Update(func(tx *bolt.Tx) error { return history.DropOutbox(tx, last) }) }, err
}

func (boltSpool) EachStored(func(change.ObjectID, []byte) error) error { return nil }

// openStore starts a PostgreSQL server for the test and opens the
// store in it.
func openStore(t testing.TB) (*pgstore.Store, *testpg.Postgres) {
	t.Helper()
	pg := testpg.StartPostgres(t)
	s, err := pgstore.Open(context.Background(), pg.DSN, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, pg
}

// harness writes entries to a state dir's history with the outbox on,
// and ships them to PostgreSQL as kubediff's shipper does.
func harness(t *testing.T, store *pgstore.Store, cluster string) (historytest.Harness, *pgstore.Shipper) {
	spool := newSpool(t)
	shipper := &pgstore.Shipper{Store: store, Spool: spool, Writer: pgstore.Writer{Cluster: cluster, Name: "test", Instance: "i1"}}
	return historytest.Harness{
		Write: func(t *testing.T, now time.Time, entries ...journal.Entry) {
			t.Helper()
			write(t, spool, now, entries...)
			if _, err := shipper.ShipAll(context.Background()); err != nil {
				t.Fatal(err)
			}
		},
		Trim: func(t *testing.T, retention time.Duration, now time.Time) {
			t.Helper()
			if err := store.Trim(context.Background(), cluster, retention, 0, now); err != nil {
				t.Fatal(err)
			}
		},
		Store: store.Cluster(cluster),
	}, shipper
}

// PostgreSQL passes the conformance suite the state dir does.
func TestConformance(t *testing.T) {
	store, _ := openStore(t)
	n := 0
	historytest.Run(t, func(t *testing.T) historytest.Harness {
		n++
		h, _ := harness(t, store, "cluster-"+string(rune('a'+n)))
		return h
	})
}
