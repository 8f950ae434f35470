package state_test

import (
	"io"
	"log/slog"
	"syscall"
	"testing"
	"time"

	"github.com/kubediff/kubediff/internal/changegen"
	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/journal"
	"github.com/kubediff/kubediff/pkg/state"
)

// BenchmarkFlushHistory is the flush path's CPU per change with the
// history on and off, in the same run: of 1,000 stored objects, 100
// change a second; each change is a record kept (with history) and the
// object's new state noted, and the second's flush writes them. The
// changes are made before the clock starts: the differ's work is the
// watcher's, not the store's. One op is one change; cpu-vs-without is
// the CPU per change with history over the run without it just before.
// quiet-state keeps each change as a state alone (a status-only update
// the quiet rules keep out of the stream: StateOnly, no record line).
func BenchmarkFlushHistory(b *testing.B) {
	for _, kind := range []struct {
		name string
		new  func(int) (*changegen.Stream, error)
	}{{"configmap", changegen.NewConfigMaps}, {"deployment", changegen.NewDeployments}} {
		b.Run(kind.name, func(b *testing.B) {
			var without float64 // the baseline, measured first
			b.Run("without-history", func(b *testing.B) { without = benchFlush(b, kind.new, noHistory) })
			for _, mode := range []keptAs{asRecord, asQuietState} {
				b.Run(mode.String(), func(b *testing.B) {
					with := benchFlush(b, kind.new, mode)
					if without > 0 {
						b.ReportMetric(with/without, "cpu-vs-without")
					}
				})
			}
		})
	}
}

// keptAs is how a benchmark's changes reach the history.
type keptAs int

const (
	noHistory    keptAs = iota // the history is off
	asRecord                   // each change a record with its state
	asQuietState               // each change a state without a record
)

func (k keptAs) String() string {
	return [...]string{"without-history", "with-history", "quiet-state"}[k]
}

// benchFlush runs the steady state and returns the CPU (user and system)
// per change, in µs.
func benchFlush(b *testing.B, kind func(int) (*changegen.Stream, error), mode keptAs) float64 {
	const objects, pool, perFlush = 1000, 2000, 100
	s, target := storeWithObjects(b, kind, objects, mode != noHistory)
	stream, err := kind(objects)
	if err != nil {
		b.Fatal(err)
	}
	updates := make([]changegen.Update, pool)
	for i := range updates {
		if updates[i], err = stream.Next(time.Now()); err != nil {
			b.Fatal(err)
		}
		updates[i].Entry.StateOnly = mode == asQuietState
	}
	before := cpuTime()
	for i := 0; b.Loop(); i++ {
		u := updates[i%pool]
		// As the watcher does: the state with the record the pipeline kept.
		// (The store drops the record when the history is off.)
		s.Put(target, u.Key, &journal.Object{UID: u.UID, ResourceVersion: u.ResourceVersion, Raw: u.Raw}, u.Entry)
		if i%perFlush == perFlush-1 {
			if err := s.Flush(); err != nil {
				b.Fatal(err)
			}
		}
	}
	user, sys := cpuTime().sub(before)
	b.ReportMetric(user/float64(b.N), "user-µs/op")
	b.ReportMetric(sys/float64(b.N), "sys-µs/op")
	return (user + sys) / float64(b.N)
}

// storeWithObjects opens a store holding the stream's objects, with the
// history on or off.
func storeWithObjects(b *testing.B, kind func(int) (*changegen.Stream, error), objects int, on bool) (*state.Store, string) {
	s, err := state.Open(b.TempDir(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	if err := s.Bind("c1"); err != nil {
		b.Fatal(err)
	}
	if on {
		if err := s.SetHistory(history.Policy{Retention: 7 * 24 * time.Hour, MaxBytes: 1 << 30}); err != nil {
			b.Fatal(err)
		}
	}
	stream, err := kind(objects)
	if err != nil {
		b.Fatal(err)
	}
	r := stream.Resource()
	target := r.GVR.String() + "|||" // as the watcher names a cluster-wide watch
	for range objects {
		u, err := stream.Next(time.Now())
		if err != nil {
			b.Fatal(err)
		}
		s.Put(target, u.Key, &journal.Object{UID: u.UID, ResourceVersion: u.ResourceVersion, Raw: u.Raw})
	}
	if err := s.Flush(); err != nil {
		b.Fatal(err)
	}
	return s, target
}

// rusage is the process's CPU so far, in µs.
type rusage struct{ user, sys float64 }

func cpuTime() rusage {
	var r syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r)
	us := func(t syscall.Timeval) float64 { return float64(t.Sec)*1e6 + float64(t.Usec) }
	return rusage{us(r.Utime), us(r.Stime)}
}

func (r rusage) sub(before rusage) (user, sys float64) {
	return r.user - before.user, r.sys - before.sys
}
