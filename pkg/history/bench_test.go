package history_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime/debug"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/kubediff/kubediff/internal/changegen"
	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/journal"
)

// The query benchmarks ask a history of a million records: 10,000
// objects (ConfigMaps holding a config file and Deployments, half each)
// changed 100 times each, in turn, one change every 600 ms (a million
// over a week, the default retention). Each object's records are spread
// over the whole history, as a long-lived object's are.
const (
	millionObjects   = 10000
	changesPerObject = 100
	changeEvery      = 600 * time.Millisecond
	// perFlush is how many records one transaction writes while the
	// history is built, as a flush of a busy second would.
	perFlush = 3000
)

var (
	t0        = time.Date(2026, 11, 16, 0, 0, 0, 0, time.UTC)
	unlimited = history.Policy{Retention: 365 * 24 * time.Hour, MaxBytes: 1 << 40}
)

// BenchmarkMillion builds the history once (about a minute and a half
// on 2 cores), then opens it read-only as `kubediff history --state-dir`
// does, and times the queries people make of it: `kubediff history
// TYPE/NAME` (one object's records, a page of 100), the same over the
// last hour, the first of them in a process that has just opened the
// file (its pages not yet mapped), and `kubediff get --at` (an object at
// a moment).
func BenchmarkMillion(b *testing.B) {
	path, mix := buildMillion(b)
	db := openReadOnly(b, path)
	defer db.Close()
	r := history.NewReader(db, nil)
	end := t0.Add(millionObjects * changesPerObject * changeEvery)
	one := func(i int) history.Query {
		g, res, ns, name := mix.id(i).Parts()
		return history.Query{Select: []history.Selector{{Group: g, Resource: res, Name: name}}, Namespace: ns, Limit: 100}
	}
	b.Run("history-of-one-object", func(b *testing.B) {
		benchRecords(b, r, one, changesPerObject)
	})
	b.Run("history-of-one-object-just-opened", func(b *testing.B) {
		for b.Loop() {
			fresh := openReadOnly(b, path)
			if page, err := history.NewReader(fresh, nil).Records(one(0)); err != nil || len(page.Records) != changesPerObject {
				b.Fatalf("%d records, %v", len(page.Records), err)
			}
			fresh.Close()
		}
		reportMs(b)
	})
	b.Run("history-of-one-object-last-hour", func(b *testing.B) {
		benchRecords(b, r, func(i int) history.Query { q := one(i); q.From = end.Add(-time.Hour); return q }, -1)
	})
	b.Run("history-of-one-object-by-its-index", func(b *testing.B) {
		// Not what Records does today: the objects index read directly,
		// to show what using it for a query naming objects would cost.
		rng := rand.New(rand.NewPCG(1, 2))
		for b.Loop() {
			if n := byIndex(b, db, mix.id(rng.IntN(millionObjects)), 100); n != changesPerObject {
				b.Fatalf("%d records by the index, want %d", n, changesPerObject)
			}
		}
		reportMs(b)
	})
	b.Run("at", func(b *testing.B) { benchAt(b, r, mix, end) })
}

// benchAt times At for a random object at a random moment past the
// first round of changes (every object exists then: a state comes back).
func benchAt(b *testing.B, r *history.Reader, mix *mix, end time.Time) {
	rng := rand.New(rand.NewPCG(3, 4))
	first := t0.Add(millionObjects * changeEvery)
	span := int64(end.Sub(first))
	for b.Loop() {
		at := first.Add(time.Duration(rng.Int64N(span)))
		if raw, err := r.At(mix.id(rng.IntN(millionObjects)), at); err != nil || len(raw) == 0 {
			b.Fatalf("at %s: %d bytes, %v", at, len(raw), err)
		}
	}
	reportMs(b)
}

func openReadOnly(b *testing.B, path string) *bolt.DB {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	return db
}

// benchRecords times Records for a random object's query; want is how
// many records each page must hold (-1: any).
func benchRecords(b *testing.B, r *history.Reader, query func(i int) history.Query, want int) {
	rng := rand.New(rand.NewPCG(5, 6))
	// One query first, untimed: it maps the pages a scan reads, as a
	// running kubediff has them mapped.
	if _, err := r.Records(query(0)); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		page, err := r.Records(query(rng.IntN(millionObjects)))
		if err != nil || want >= 0 && len(page.Records) != want {
			b.Fatalf("%d records, %v; want %d", len(page.Records), err, want)
		}
	}
	reportMs(b)
}

// reportMs reports the query's time in milliseconds, the unit of the
// target (100 ms), beside ns/op.
func reportMs(b *testing.B) {
	b.ReportMetric(b.Elapsed().Seconds()*1000/float64(b.N), "ms/op")
}

// byIndex reads an object's first records through the objects index, as
// history.go lays it out (history/objects: id \x00 time|seq; records:
// time|seq → id \x00 record).
func byIndex(b *testing.B, db *bolt.DB, id change.ObjectID, limit int) int {
	n := 0
	err := db.View(func(tx *bolt.Tx) error {
		root := tx.Bucket([]byte("history"))
		records := root.Bucket([]byte("records"))
		prefix := append([]byte(id), 0)
		c := root.Bucket([]byte("objects")).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && n < limit; k, _ = c.Next() {
			_, line, _ := bytes.Cut(records.Get(k[len(prefix):]), []byte{0})
			if len(line) > 0 {
				n++
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// buildMillion writes the million records into a fresh database, a
// transaction per perFlush records, the changes made on one goroutine
// while the other writes.
func buildMillion(b *testing.B) (string, *mix) {
	start := time.Now()
	// The changes' objects (10,000 of them, unstructured) are most of the
	// live heap: collecting less often halves the build's time.
	defer debug.SetGCPercent(debug.SetGCPercent(800))
	db, err := bolt.Open(filepath.Join(b.TempDir(), "state.db"), 0o600, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	m := newMix(b, millionObjects)
	batches := make(chan batch, 2)
	go m.produce(batches, millionObjects*changesPerObject, perFlush, func(k int) time.Time { return t0.Add(time.Duration(k) * changeEvery) })
	for bt := range batches {
		if bt.err != nil {
			b.Fatal(bt.err)
		}
		if err := db.Update(func(tx *bolt.Tx) error { return history.Write(tx, bt.entries, unlimited, bt.now) }); err != nil {
			b.Fatal(err)
		}
	}
	built := time.Since(start)
	var f sizes
	measure(b, db, &f)
	// Printed, not logged: a parent benchmark's log shows only with -v.
	fmt.Printf("BenchmarkMillion: %d records of %d objects written in %.0f s: file %.0f MiB, used %.0f MiB, history pages %.0f MiB, counted %.0f MiB\n",
		millionObjects*changesPerObject, millionObjects, built.Seconds(), mib(f.file), mib(f.used), mib(f.pages), mib(f.counted))
	return db.Path(), m
}

// mix is ConfigMaps and Deployments updated in turn: object 2i is the
// ConfigMap i, 2i+1 the Deployment i.
type mix struct {
	streams [2]*changegen.Stream
	next    int
}

func newMix(b *testing.B, objects int) *mix {
	cms, err := changegen.NewConfigMaps((objects + 1) / 2)
	if err != nil {
		b.Fatal(err)
	}
	deploys, err := changegen.NewDeployments(objects / 2)
	if err != nil {
		b.Fatal(err)
	}
	return &mix{streams: [2]*changegen.Stream{cms, deploys}}
}

func (m *mix) len() int { return m.streams[0].Len() + m.streams[1].Len() }

func (m *mix) id(i int) change.ObjectID { return m.streams[i%2].ID(i / 2) }

// update changes the next object in turn.
func (m *mix) update(at time.Time) (changegen.Update, error) {
	i := m.next
	m.next = (m.next + 1) % m.len()
	return m.streams[i%2].Object(i/2, at)
}

// batch is one transaction's records, made at now.
type batch struct {
	entries []journal.Entry
	now     time.Time
	err     error
}

// produce sends total changes, size per batch, the k-th made at at(k).
func (m *mix) produce(out chan<- batch, total, size int, at func(k int) time.Time) {
	defer close(out)
	for k := 0; k < total; {
		bt := batch{entries: make([]journal.Entry, 0, size)}
		for ; k < total && len(bt.entries) < size; k++ {
			u, err := m.update(at(k))
			if err != nil {
				out <- batch{err: fmt.Errorf("change %d: %w", k, err)}
				return
			}
			bt.entries = append(bt.entries, u.Entry)
			bt.now = at(k)
		}
		out <- bt
	}
}
