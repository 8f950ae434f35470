package history_test

import (
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/kubediff/kubediff/pkg/history"
)

// BenchmarkWritePerChange is the history's CPU per kept change as the
// state store's flush pays it at 100 changes a second: 1,000 objects,
// 100 changes a flush, each flush's states and records in one
// transaction (without the fsync, which costs the disk, not the CPU).
// One op is one change.
func BenchmarkWritePerChange(b *testing.B) {
	const objects, perFlush = 1000, 100
	db, err := bolt.Open(filepath.Join(b.TempDir(), "state.db"), 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	m := newMix(b, objects)
	if err := db.Update(func(tx *bolt.Tx) error { return firstList(tx, m) }); err != nil {
		b.Fatal(err)
	}
	policy := history.Policy{Retention: 7 * 24 * time.Hour, MaxBytes: 256 << 20}
	at := t0
	flush := func(n int) {
		at = at.Add(time.Second)
		updates := m.updates(b, at, n)
		b.StartTimer()
		err := db.Update(func(tx *bolt.Tx) error { return flushUpdates(tx, updates, policy, at) })
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.StopTimer()
	for done := 0; done < b.N; done += perFlush {
		flush(min(perFlush, b.N-done))
	}
}
