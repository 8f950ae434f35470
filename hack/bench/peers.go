package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/kubediff/kubediff/internal/testenv"
)

// kubewatchConfig makes kubewatch (its last Go module release, built by
// `make peers`) watch ConfigMaps with its default handler, which does
// nothing with an event: the cheapest kubewatch a user can run.
const kubewatchConfig = "resource:\n  configmap: true\n"

// peerProcess is a compared tool running against the benchmark's cluster.
type peerProcess struct {
	name string
	cmd  *exec.Cmd
	dir  string
}

// startKubewatch runs kubewatch on ConfigMaps in all namespaces and waits
// until its initial list is done (its CPU stops growing).
func startKubewatch(env *testenv.Env) (*peerProcess, error) {
	bin, err := testenv.BinDir()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(bin, "kubewatch")
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("%s: %w (run make peers)", path, err)
	}
	dir, err := os.MkdirTemp("", "kubediff-bench-kubewatch-")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, ".kubewatch.yaml"), []byte(kubewatchConfig), 0o600); err != nil {
		return nil, err
	}
	p := &peerProcess{name: "kubewatch", dir: dir, cmd: exec.Command(path)}
	p.cmd.Env = append(os.Environ(), "KW_CONFIG="+dir, "KUBECONFIG="+env.Kubeconfig, "HOME="+dir)
	p.cmd.Stdout, p.cmd.Stderr = io.Discard, io.Discard
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	waitCPUSettled(p.cmd.Process.Pid)
	return p, nil
}

// waitCPUSettled returns once a process has spent no CPU for two seconds
// (past its start and initial list), or after two minutes.
func waitCPUSettled(pid int) {
	time.Sleep(2 * time.Second)
	last := -1.0
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(2 * time.Second) {
		now := cpuSeconds([]int{pid})
		if now == last {
			return
		}
		last = now
	}
}

func (p *peerProcess) pid() int { return p.cmd.Process.Pid }

func (p *peerProcess) stop() {
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	_ = os.RemoveAll(p.dir)
}
