// Command startprobe starts kubediff many times against a local control
// plane kept busy with writes, and counts the starts that said the
// cluster changed (a restore from a backup or a rebuild) although nobody
// touched it: the race issue 33 found in the cluster check. It prints one
// line per start that raised a false alarm and the totals.
//
//	go run ./hack/startprobe -starts 100 -writes 100
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubediff/kubediff/internal/testenv"
)

func main() {
	starts := flag.Int("starts", 100, "how many times to start kubediff")
	writes := flag.Int("writes", 100, "ConfigMap updates per second while kubediff starts")
	runFor := flag.Duration("run", 3*time.Second, "how long each kubediff runs before it is stopped")
	binary := flag.String("kubediff", "", "the kubediff binary to start (default: built from this checkout)")
	flag.Parse()
	if err := probe(*starts, *writes, *runFor, *binary); err != nil {
		fmt.Fprintln(os.Stderr, "startprobe:", err)
		os.Exit(1)
	}
}

func probe(starts, writesPerSecond int, runFor time.Duration, binary string) error {
	env, err := testenv.Start()
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	if binary == "" {
		var remove func()
		if binary, remove, err = testenv.BuildKubediff(); err != nil {
			return err
		}
		defer remove()
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = float32(2*writesPerSecond), 2*writesPerSecond
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var written atomic.Int64
	if err := startWriting(ctx, client, writesPerSecond, &written); err != nil {
		return err
	}
	began := time.Now()
	alarms := 0
	for i := range starts {
		stderr, err := startOnce(binary, env.Kubeconfig, runFor)
		if err != nil {
			return fmt.Errorf("start %d: %w", i+1, err)
		}
		if strings.Contains(stderr, "the cluster behind the API server changed") {
			alarms++
			fmt.Printf("start %d: false alarm: %s\n", i+1, firstLine(stderr, "the cluster behind the API server changed"))
		}
	}
	rate := float64(written.Load()) / time.Since(began).Seconds()
	fmt.Printf("%d starts, %d false alarms (\"the cluster behind the API server changed\"), %.0f writes/s during the starts\n", starts, alarms, rate)
	return nil
}

// startWriting updates 50 ConfigMaps round robin, writesPerSecond a
// second, until ctx is done.
func startWriting(ctx context.Context, client kubernetes.Interface, writesPerSecond int, written *atomic.Int64) error {
	const n = 50
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "startprobe"}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return err
	}
	for i := range n {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("busy-%d", i)}, Data: map[string]string{"n": "0"}}
		if _, err := client.CoreV1().ConfigMaps(ns.Name).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	// Several writers, each on its share of the ticks: one request's
	// latency must not cap the rate.
	const writers = 8
	for w := range writers {
		go func() {
			tick := time.NewTicker(time.Second * writers / time.Duration(writesPerSecond))
			defer tick.Stop()
			for i := w; ; i += writers {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("busy-%d", i%n)}, Data: map[string]string{"n": fmt.Sprint(i)}}
				if _, err := client.CoreV1().ConfigMaps(ns.Name).Update(ctx, cm, metav1.UpdateOptions{}); err == nil {
					written.Add(1)
				}
			}
		}()
	}
	return nil
}

// startOnce runs `kubediff watch` for runFor, stops it and returns its
// logs.
func startOnce(binary, kubeconfig string, runFor time.Duration) (string, error) {
	var stderr strings.Builder
	cmd := exec.Command(binary, "watch", "-o", "json", "--kubeconfig", kubeconfig, "--http-address", "")
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return "", err
	}
	time.Sleep(runFor) // a driver's pacing, not a test's wait
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Wait()
	return stderr.String(), nil
}

func firstLine(s, containing string) string {
	for line := range strings.Lines(s) {
		if strings.Contains(line, containing) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}
