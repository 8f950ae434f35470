// Command kubediff watches every resource in a Kubernetes cluster and
// reports what changed.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/kubediff/kubediff/internal/cli"
)

func main() {
	// KUBEDIFF_CPUPROFILE=FILE profiles the whole run, for benchmarks
	// (docs/benchmarks.md).
	if path := os.Getenv("KUBEDIFF_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil {
			if err := pprof.StartCPUProfile(f); err != nil {
				fmt.Fprintln(os.Stderr, "kubediff: cpu profile:", err)
			}
			defer f.Close()
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	pprof.StopCPUProfile()
	os.Exit(code)
}
