//go:build !windows

package main

import (
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
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
