// Command controlplane runs a local kube-apiserver and etcd until it is
// interrupted, for the demo and benchmarks; with -nodes, a living cluster:
// controller manager, scheduler and that many KWOK-simulated nodes. It prints the kubeconfig path on
// stdout once the API server answers, and writes it to -kubeconfig-out.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/kubediff/kubediff/internal/testenv"
)

func main() {
	out := flag.String("kubeconfig-out", "", "also copy the admin kubeconfig to this path")
	nodes := flag.Int("nodes", 0, "start a living cluster with this many simulated nodes (0: API server and etcd only)")
	flag.Parse()
	env, err := testenv.Start()
	if err == nil && *nodes > 0 {
		if err = env.StartLiving(*nodes); err != nil {
			_ = env.Stop()
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "controlplane:", err)
		os.Exit(1)
	}
	if *out != "" {
		data, err := os.ReadFile(env.Kubeconfig)
		if err == nil {
			err = os.WriteFile(*out, data, 0o600)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "controlplane: copy kubeconfig:", err)
		}
	}
	fmt.Println(env.Kubeconfig)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	<-ctx.Done()
	stop()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "controlplane: stop:", err)
		os.Exit(1)
	}
}
