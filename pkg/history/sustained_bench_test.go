package history_test

import (
	"fmt"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/kubediff/kubediff/internal/changegen"
	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/journal"
)

// BenchmarkSustainedSize is the file over an hour of changes with a
// small bound (maxBytes 4 MiB), past the point where the oldest records
// are dropped as new ones come: 1,000 objects (ConfigMaps and
// Deployments), 10 changed a second, each second's states and records in
// one transaction as the state store's flush writes them. bbolt never
// shrinks its file, so what matters is whether it reuses what retention
// frees and the file stops growing. One op is the simulated hour.
//
//	file-MiB              the file at the end
//	file-max/maxBytes     its largest over the run, against the bound
//	used-max/maxBytes     the largest used extent (free pages included)
//	counted/maxBytes      what the history counts at the end
//	history-pages/maxBytes the pages its buckets take at the end
//	state-MiB             the objects' states' pages (the first list)
func BenchmarkSustainedSize(b *testing.B) {
	const objects, flushes, perFlush = 1000, 3600, 10
	policy := history.Policy{Retention: 7 * 24 * time.Hour, MaxBytes: 4 << 20}
	var run sustained
	for b.Loop() {
		run = sustain(b, policy, objects, flushes, perFlush)
	}
	bound := float64(policy.MaxBytes)
	b.ReportMetric(float64(run.end.file)/(1<<20), "file-MiB")
	b.ReportMetric(float64(run.maxFile)/bound, "file-max/maxBytes")
	b.ReportMetric(float64(run.maxUsed)/bound, "used-max/maxBytes")
	b.ReportMetric(float64(run.end.counted)/bound, "counted/maxBytes")
	b.ReportMetric(float64(run.end.pages)/bound, "history-pages/maxBytes")
	b.ReportMetric(float64(run.statePages)/(1<<20), "state-MiB")
	b.ReportMetric(float64(run.kept), "records-kept")
}

// sustained is what a run measured.
type sustained struct {
	end              sizes
	maxFile, maxUsed int64
	statePages       int64
	kept             int
}

// stateBucket stands for the state store's objects: the flush writes
// each changed object's state in the transaction that keeps its record.
var stateBucket = []byte("targets")

func sustain(b *testing.B, policy history.Policy, objects, flushes, perFlush int) sustained {
	db := openBench(b)
	m := newMix(b, objects)
	if err := db.Update(func(tx *bolt.Tx) error { return firstList(tx, m) }); err != nil {
		b.Fatal(err)
	}
	var run sustained
	for f := range flushes {
		at := t0.Add(time.Duration(f) * time.Second)
		updates := m.updates(b, at, perFlush)
		err := db.Update(func(tx *bolt.Tx) error { return flushUpdates(tx, updates, policy, at) })
		if err != nil {
			b.Fatal(err)
		}
		var now sizes
		measure(b, db, &now)
		run.maxFile, run.maxUsed = max(run.maxFile, now.file), max(run.maxUsed, now.used)
		if (f+1)%600 == 0 {
			b.Logf("after %2d min: file %.1f MiB, used %.1f MiB, history pages %.1f MiB, counted %.1f MiB",
				(f+1)/60, mib(now.file), mib(now.used), mib(now.pages), mib(now.counted))
		}
	}
	measure(b, db, &run.end)
	err := db.View(func(tx *bolt.Tx) error {
		st := tx.Bucket(stateBucket).Stats()
		run.statePages = int64(st.BranchAlloc + st.LeafAlloc)
		run.kept = tx.Bucket([]byte("history")).Bucket([]byte("records")).Stats().KeyN
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return run
}

// firstList writes every object's state, as the store's first write of a
// type does (keys in order, pages filled).
func firstList(tx *bolt.Tx, m *mix) error {
	bucket, err := tx.CreateBucket(stateBucket)
	if err != nil {
		return err
	}
	bucket.FillPercent = 1.0
	updates := make([]changegen.Update, 0, m.len())
	for range m.len() {
		u, err := m.update(t0.Add(-time.Hour))
		if err != nil {
			return err
		}
		updates = append(updates, u)
	}
	return putStates(bucket, updates)
}

// putStates writes the objects' states as the store encodes them:
// uid \n resourceVersion \n JSON.
// updates makes n updates at at.
func (m *mix) updates(b *testing.B, at time.Time, n int) []changegen.Update {
	updates := make([]changegen.Update, n)
	for i := range updates {
		var err error
		if updates[i], err = m.update(at); err != nil {
			b.Fatal(err)
		}
	}
	return updates
}

// flushUpdates writes updates' states and keeps their records, as the
// state store's flush does.
func flushUpdates(tx *bolt.Tx, updates []changegen.Update, policy history.Policy, at time.Time) error {
	if err := putStates(tx.Bucket(stateBucket), updates); err != nil {
		return err
	}
	entries := make([]journal.Entry, len(updates))
	for i, u := range updates {
		entries[i] = u.Entry
	}
	return history.Write(tx, entries, policy, at)
}

func putStates(bucket *bolt.Bucket, updates []changegen.Update) error {
	for _, u := range updates {
		v := fmt.Appendf(nil, "%s\n%s\n%s", u.UID, u.ResourceVersion, u.Raw)
		if err := bucket.Put([]byte(u.Key), v); err != nil {
			return err
		}
	}
	return nil
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }
