// Command kubediff watches every resource in a Kubernetes cluster and
// reports what changed.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/kubediff/kubediff/internal/cli"
)

func main() {
	if path := os.Getenv("KUBEDIFF_CPUPROFILE"); path != "" {
		profileOnSignal(path)
	}
	if path := os.Getenv("KUBEDIFF_HEAPPROFILE"); path != "" {
		heapProfileOnSignal(path)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.RunAs(ctx, cli.DisplayName(os.Args[0]), os.Args[1:], os.Stdout, os.Stderr)
	stop()
	pprof.StopCPUProfile()
	os.Exit(code)
}
