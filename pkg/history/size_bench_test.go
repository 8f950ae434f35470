package history_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/kubediff/kubediff/internal/changegen"
	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/journal"
)

// BenchmarkDiskPerChange is what the history takes on disk per change,
// against the JSON it keeps: 200 objects changed 50 times each, 100
// changes a second, each second's in one transaction (the flush's), into
// a database that holds nothing else. One op is the whole run.
//
//	json-B/change     the record's JSON and the state after it, as JSON
//	record-B/change   the record's JSON alone
//	state-B/change    the state after it, as kept (zstd JSON)
//	counted-B/change  what the history counts against maxBytes
//	pages-B/change    the pages the history's buckets take
//	disk-B/change     the file's used extent (bbolt's high-water mark, free pages included)
func BenchmarkDiskPerChange(b *testing.B) {
	for _, kind := range []struct {
		name string
		new  func(int) (*changegen.Stream, error)
	}{{"configmap", changegen.NewConfigMaps}, {"deployment", changegen.NewDeployments}} {
		b.Run(kind.name, func(b *testing.B) {
			const objects, changes, perSecond = 200, 10000, 100
			var f sizes
			for b.Loop() {
				s, err := kind.new(objects)
				if err != nil {
					b.Fatal(err)
				}
				f = keepChanges(b, s, changes, perSecond)
			}
			n := float64(changes)
			b.ReportMetric(float64(f.recordJSON+f.stateJSON)/n, "json-B/change")
			b.ReportMetric(float64(f.recordJSON)/n, "record-B/change")
			b.ReportMetric(float64(f.packed)/n, "state-B/change")
			b.ReportMetric(float64(f.counted)/n, "counted-B/change")
			b.ReportMetric(float64(f.pages)/n, "pages-B/change")
			b.ReportMetric(float64(f.used)/n, "disk-B/change")
			b.ReportMetric(float64(f.used)/float64(f.recordJSON+f.stateJSON), "disk/json")
			b.ReportMetric(float64(f.used)/float64(f.counted), "disk/counted")
		})
	}
}

// sizes are a history's figures after a run.
type sizes struct {
	recordJSON, stateJSON int64 // summed over the changes kept
	packed                int64 // the kept states after the records (zstd)
	counted               int64 // the history's own count (meta "bytes")
	pages                 int64 // pages allocated to the history's buckets
	used                  int64 // the file's used extent
	file                  int64 // the file's size
}

// keepChanges keeps changes of s, perSecond per transaction, in a fresh
// database, and measures it.
func keepChanges(b *testing.B, s *changegen.Stream, changes, perSecond int) sizes {
	db := openBench(b)
	var f sizes
	for k := 0; k < changes; {
		at := t0.Add(time.Duration(k/perSecond) * time.Second)
		entries := make([]journal.Entry, 0, perSecond)
		for ; k < changes && len(entries) < perSecond; k++ {
			u, err := s.Next(at)
			if err != nil {
				b.Fatal(err)
			}
			f.recordJSON += int64(changegen.RecordJSON(u.Entry))
			f.stateJSON += int64(changegen.StateJSON(u.Entry))
			entries = append(entries, u.Entry)
		}
		if err := db.Update(func(tx *bolt.Tx) error { return history.Write(tx, entries, unlimited, at) }); err != nil {
			b.Fatal(err)
		}
	}
	measure(b, db, &f)
	return f
}

// measure reads the history's count, its pages, and the file's extent.
func measure(b *testing.B, db *bolt.DB, f *sizes) {
	err := db.View(func(tx *bolt.Tx) error {
		f.used = tx.Size()
		root := tx.Bucket([]byte("history"))
		if root == nil {
			return fmt.Errorf("no history")
		}
		st := root.Stats()
		f.pages = int64(st.BranchAlloc + st.LeafAlloc)
		if v := root.Bucket([]byte("meta")).Get([]byte("bytes")); len(v) == 8 {
			f.counted = int64(binary.BigEndian.Uint64(v))
		}
		return root.Bucket([]byte("after")).ForEach(func(_, v []byte) error {
			f.packed += int64(len(v))
			return nil
		})
	})
	if err != nil {
		b.Fatal(err)
	}
	info, err := os.Stat(db.Path())
	if err != nil {
		b.Fatal(err)
	}
	f.file = info.Size()
}

func openBench(b *testing.B) *bolt.DB {
	db, err := bolt.Open(filepath.Join(b.TempDir(), "state.db"), 0o600, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}
