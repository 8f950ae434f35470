package history_test

import (
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

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
		return historytest.Harness{
			Write: func(t *testing.T, now time.Time, entries ...journal.Entry) {
				t.Helper()
				if err := db.Update(func(tx *bolt.Tx) error { return history.Write(tx, entries, historytest.Keep, now) }); err != nil {
					t.Fatal(err)
				}
			},
			Store: history.NewReader(db, nil),
		}
	})
}
