package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// NodeLeaseSeconds is how long a simulated node's Lease lasts. KWOK renews
// it at a quarter of that, as a kubelet does; the controller manager marks
// a node NotReady only when it is not renewed for its grace period.
const NodeLeaseSeconds = 40

// kwokNodeAnnotation marks the nodes KWOK simulates (and their Pods').
const kwokNodeAnnotation = "kwok.x-k8s.io/node"

// StartLiving makes the control plane a living cluster: it starts
// kube-controller-manager and kube-scheduler (both with leader election,
// as in a real cluster), and KWOK simulating nodes nodes, which it
// creates and waits for until they are Ready. Pods scheduled to them go
// Pending → Running → Ready, and are deleted when asked, as with a
// kubelet; each node renews its Lease and posts its status, so an idle
// cluster is as busy as a real one.
func (e *Env) StartLiving(nodes int) error {
	bin, err := BinDir()
	if err != nil {
		return err
	}
	for _, name := range []string{"kube-controller-manager", "kube-scheduler", "kwok"} {
		if _, err := os.Stat(filepath.Join(bin, name)); err != nil {
			return fmt.Errorf("control plane binary %s missing in %s: run `make testenv` first", name, bin)
		}
	}
	certDir := e.env.ControlPlane.APIServer.CertDir
	kc := e.Kubeconfig
	procs := []struct {
		name string
		args []string
	}{
		{"kube-controller-manager", []string{
			"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
			"--secure-port=0", "--leader-elect=true",
			"--service-account-private-key-file=" + filepath.Join(certDir, "sa-signer.key"),
			"--root-ca-file=" + filepath.Join(certDir, "apiserver.crt"),
			"--use-service-account-credentials=false", "--allocate-node-cidrs=false",
		}},
		{"kube-scheduler", []string{
			"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
			"--secure-port=0", "--leader-elect=true",
		}},
		{"kwok", append([]string{
			"--kubeconfig=" + kc, "--manage-all-nodes=false",
			"--manage-nodes-with-annotation-selector=" + kwokNodeAnnotation + "=fake",
			"--node-lease-duration-seconds=" + fmt.Sprint(NodeLeaseSeconds),
			"--cidr=10.0.0.1/24", "--node-ip=10.0.0.1", "--server-address=",
		}, stageFlags(bin)...)},
	}
	for _, p := range procs {
		if err := e.startProcess(filepath.Join(bin, p.name), p.args); err != nil {
			e.stopProcesses()
			return err
		}
	}
	if err := e.createNodes(nodes); err != nil {
		e.stopProcesses()
		return err
	}
	return nil
}

// stageFlags passes KWOK the stage files `make testenv` copied from its
// module, and kubediff's own (crash loop), as config files.
func stageFlags(bin string) []string {
	var flags []string
	for _, dir := range []string{filepath.Join(bin, "kwok-stages"), kubediffStagesDir()} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		for _, f := range files {
			flags = append(flags, "--config="+f)
		}
	}
	return flags
}

// kubediffStagesDir holds KWOK stages written for kubediff's scenarios.
func kubediffStagesDir() string {
	bin, err := BinDir()
	if err != nil {
		return ""
	}
	return filepath.Join(filepath.Dir(filepath.Dir(bin)), "hack", "testenv", "stages")
}

func (e *Env) startProcess(path string, args []string) error {
	logPath := filepath.Join(e.dir, filepath.Base(path)+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the tests
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("start %s: %w", filepath.Base(path), err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(done)
	}()
	e.procs = append(e.procs, process{cmd: cmd, done: done, log: logPath})
	return nil
}

// stopProcesses stops what StartLiving started, newest first.
func (e *Env) stopProcesses() {
	for i := len(e.procs) - 1; i >= 0; i-- {
		p := e.procs[i]
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	e.procs = nil
}

// ProcessLogs returns the last lines of each living-cluster process's
// log, for a failing test to show.
func (e *Env) ProcessLogs(lines int) string {
	var b strings.Builder
	for _, p := range e.procs {
		data, _ := os.ReadFile(p.log)
		all := strings.Split(strings.TrimSpace(string(data)), "\n")
		fmt.Fprintf(&b, "--- %s (last %d lines)\n%s\n", filepath.Base(p.log), lines, strings.Join(all[max(0, len(all)-lines):], "\n"))
	}
	return b.String()
}

// NodeName is the name of simulated node i.
func NodeName(i int) string { return fmt.Sprintf("kwok-node-%d", i) }

func (e *Env) createNodes(n int) error {
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	capacity := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods: resource.MustParse("110"),
	}
	for i := range n {
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        NodeName(i),
				Annotations: map[string]string{kwokNodeAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0"},
				Labels: map[string]string{"kubernetes.io/hostname": NodeName(i), "kubernetes.io/os": "linux",
					"kubernetes.io/arch": "amd64", "type": "kwok"},
			},
			Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
		}
		if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create node %s: %w", node.Name, err)
		}
	}
	for {
		list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "type=kwok"})
		ready := 0
		if err == nil {
			for _, n := range list.Items {
				for _, c := range n.Status.Conditions {
					if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
						ready++
					}
				}
			}
		}
		if ready == n {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(fmt.Errorf("%d of %d simulated nodes Ready after 2 minutes", ready, n), err,
				errors.New(e.ProcessLogs(20)))
		case <-time.After(500 * time.Millisecond):
		}
	}
}
