//go:build !windows

package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"syscall"
)

// profileOnSignal writes a CPU profile to path from the first SIGUSR1 to
// the second (or to exit), so a benchmark can profile one phase of a run
// (docs/benchmarks.md). A profile from the start would mostly show the
// initial sync.
func profileOnSignal(path string) {
	usr1 := make(chan os.Signal, 2)
	signal.Notify(usr1, syscall.SIGUSR1)
	go func() {
		<-usr1
		f, err := os.Create(path)
		if hz, _ := strconv.Atoi(os.Getenv("KUBEDIFF_CPUPROFILE_HZ")); hz > 0 && err == nil {
			// pprof samples at 100 Hz: a paced phase's few CPU-seconds
			// are too few samples to tell a stage's share. The runtime
			// keeps a rate set first (pprof warns that it does).
			runtime.SetCPUProfileRate(hz)
		}
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "kubediff: cpu profile:", err)
			return
		}
		<-usr1
		pprof.StopCPUProfile()
		f.Close()
	}()
}

// heapProfileOnSignal writes a heap profile at each SIGUSR2, to path.1,
// path.2, ..., after a garbage collection, and the goroutines beside it
// (path.N.goroutines): a benchmark compares what is in use after the sync
// with what is in use after a sustained phase, to see that nothing grows
// without bound.
func heapProfileOnSignal(path string) {
	usr2 := make(chan os.Signal, 1)
	signal.Notify(usr2, syscall.SIGUSR2)
	go func() {
		for n := 1; ; n++ {
			<-usr2
			runtime.GC()
			f, err := os.Create(fmt.Sprintf("%s.%d", path, n))
			if err == nil {
				err = errors.Join(pprof.WriteHeapProfile(f), f.Close())
			}
			if err == nil {
				f, err = os.Create(fmt.Sprintf("%s.%d.goroutines", path, n))
			}
			if err == nil {
				err = errors.Join(pprof.Lookup("goroutine").WriteTo(f, 1), f.Close())
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "kubediff: heap profile:", err)
			}
		}
	}()
}
