package state

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"syscall"
	"testing"

	"github.com/kubediff/kubediff/pkg/journal"
)

// BenchmarkSteadyState is the state dir's cost per update at a steady
// rate: of 5,000 stored ConfigMaps, 100 change a second, each with its
// record appended to a sink's queue and delivered before the flush (a
// sink that keeps up), then the flush.
func BenchmarkSteadyState(b *testing.B) {
	s, err := Open(b.TempDir(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := s.Bind("c1"); err != nil {
		b.Fatal(err)
	}
	raw := bytes.Repeat([]byte("x"), 1300)
	objects := map[string]*journal.Object{}
	for i := range 5000 {
		objects[fmt.Sprintf("ns/cm-%d", i)] = &journal.Object{UID: "u", ResourceVersion: "1", Raw: raw}
	}
	s.Replace("configmaps", objectsOf(objects))
	if err := s.Flush(); err != nil {
		b.Fatal(err)
	}
	q, err := s.Spool("stdout")
	if err != nil {
		b.Fatal(err)
	}
	const perFlush = 100
	b.Run("put", func(b *testing.B) {
		defer reportCPU(b)()
		for i := 0; b.Loop(); i++ {
			s.Put("configmaps", fmt.Sprintf("ns/cm-%d", (i*7919)%5000), &journal.Object{UID: "u", ResourceVersion: fmt.Sprint(i), Raw: raw})
			if i%perFlush == perFlush-1 {
				if err := s.Flush(); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("append", func(b *testing.B) {
		defer reportCPU(b)()
		for i := 0; b.Loop(); i++ {
			if err := q.Append(rec(i)); err != nil {
				b.Fatal(err)
			}
			q.Remove(q.Tail() - 1)
			if i%perFlush == perFlush-1 {
				if err := s.Flush(); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// reportCPU reports the process's user and system CPU per operation: a
// flush's fsync costs the kernel's time, which ns/op does not separate.
func reportCPU(b *testing.B) func() {
	var before syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	return func() {
		var after syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
		us := func(t syscall.Timeval) float64 { return float64(t.Sec)*1e6 + float64(t.Usec) }
		b.ReportMetric((us(after.Utime)-us(before.Utime))/float64(b.N), "user-µs/op")
		b.ReportMetric((us(after.Stime)-us(before.Stime))/float64(b.N), "sys-µs/op")
	}
}
