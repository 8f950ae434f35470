// Command kubediff watches every resource in a Kubernetes cluster and
// reports what changed.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/kubediff/kubediff/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
