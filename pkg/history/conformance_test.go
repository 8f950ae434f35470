package history_test

import (
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/history/historytest"
	"github.com/kubediff/kubediff/pkg/journal"
)

// The state dir's history passes the conformance suite every store does.
func TestConformance(t *testing.T) {
	historytest.Run(t, func(t *testing.T) historytest.Harness {
		db, err := bolt.Open(filepath.Join(t.TempDir(), "h.db"), 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		// The state store's objects, which the history falls back on for
		// an object it keeps no record of.
		current := map[change.ObjectID][]byte{}
		return historytest.Harness{
			Write: func(t *testing.T, now time.Time, entries ...journal.Entry) {
				t.Helper()
				for _, e := range entries {
					if e.New == nil {
						delete(current, history.ObjectOf(e.Change))
						continue
					}
					current[history.ObjectOf(e.Change)], _ = e.New.MarshalJSON()
				}
				if err := db.Update(func(tx *bolt.Tx) error { return history.Write(tx, entries, historytest.Keep, now) }); err != nil {
					t.Fatal(err)
				}
			},
			Trim: func(t *testing.T, retention time.Duration, now time.Time) {
				t.Helper()
				p := historytest.Keep
				p.Retention = retention
				if err := db.Update(func(tx *bolt.Tx) error { return history.Write(tx, nil, p, now) }); err != nil {
					t.Fatal(err)
				}
			},
			Store: history.NewReader(db, func(_ *bolt.Tx, group, resource, namespace, name string) []byte {
				return current[change.NewObjectID(group, resource, namespace, name)]
			}),
		}
	})
}
