package main

import (
	"fmt"
	"os/exec"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Fleet mode (-fleet N): two clusters (the control plane and another API
// server on an etcd of its own) with N ConfigMaps each, watched by one
// kubediff given both contexts and by two kubediffs, one per context:
// time to watching both, RSS, private memory and idle CPU, side by side
// (docs/fleet.md).
func (b *bench) fleet() error {
	other, err := b.env.StartAnotherCluster()
	if err != nil {
		return err
	}
	kubeconfig, err := b.env.TwoContexts(other)
	if err != nil {
		return err
	}
	otherConfig, err := clientcmd.BuildConfigFromFlags("", other.Kubeconfig)
	if err != nil {
		return err
	}
	otherConfig.QPS, otherConfig.Burst = 500, 1000
	step(fmt.Sprintf("creating %d ConfigMaps in each of the two clusters", b.o.fleet))
	for _, cs := range []*kubernetes.Clientset{b.cs, kubernetes.NewForConfigOrDie(otherConfig)} {
		if _, err := cs.CoreV1().Namespaces().Create(b.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}}, metav1.CreateOptions{}); err != nil {
			return err
		}
		if err := parallel(b.o.fleet, func(i int) error { return createConfigMap(b.ctx, cs, "fleet", i) }); err != nil {
			return err
		}
	}
	step("one kubediff, --context alpha --context beta")
	one, err := b.fleetRun(kubeconfig, []string{"--context", "alpha", "--context", "beta"})
	if err != nil {
		return err
	}
	step("two kubediffs, one per context")
	two, err := b.fleetRun(kubeconfig, []string{"--context", "alpha"}, []string{"--context", "beta"})
	if err != nil {
		return err
	}
	fmt.Printf("two clusters, %d ConfigMaps each | one process | two processes | ratio\n", b.o.fleet)
	fmt.Printf("watching both after            | %.1f s | %.1f s | %.2f×\n", one.synced.Seconds(), two.synced.Seconds(), one.synced.Seconds()/two.synced.Seconds())
	fmt.Printf("RSS                            | %.1f MB | %.1f MB | %.2f×\n", mb(one.rss), mb(two.rss), float64(one.rss)/float64(two.rss))
	fmt.Printf("private memory                 | %.1f MB | %.1f MB | %.2f×\n", mb(one.anon), mb(two.anon), float64(one.anon)/float64(two.anon))
	fmt.Printf("idle CPU over a minute         | %.2f%% | %.2f%% | \n", one.idleCPU, two.idleCPU)
	return nil
}

// fleetFigures are one way of watching the two clusters, summed over its
// processes.
type fleetFigures struct {
	synced    time.Duration
	rss, anon int64
	idleCPU   float64 // percent of a core
}

// fleetRun starts a kubediff per argument list, waits until every
// cluster is watched, settles 10 s, and reads the figures.
func (b *bench) fleetRun(kubeconfig string, argLists ...[]string) (fleetFigures, error) {
	var f fleetFigures
	start := time.Now()
	var kds []*kubediff
	defer func() {
		for _, kd := range kds {
			kd.stop()
		}
	}()
	for _, args := range argLists {
		kd, err := startCmd("", exec.Command(b.o.binary, append(watchArgs(kubeconfig), args...)...), nil)
		if err != nil {
			return f, err
		}
		kds = append(kds, kd)
	}
	clusters := 2 / len(argLists)
	waitFor(120, func() bool {
		for _, kd := range kds {
			if int(kd.watching.Load()) < clusters {
				return false
			}
		}
		return true
	})
	f.synced = time.Since(start)
	time.Sleep(10 * time.Second)
	var pids []int
	for _, kd := range kds {
		f.rss += kd.rss()
		f.anon += kd.anon()
		pids = append(pids, kd.cmd.Process.Pid)
	}
	before := cpuSeconds(pids)
	time.Sleep(time.Minute)
	f.idleCPU = (cpuSeconds(pids) - before) / 60 * 100
	return f, nil
}
