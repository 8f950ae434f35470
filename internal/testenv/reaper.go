package testenv

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// childrenNamed returns the processes this process started whose command
// is name (as /proc/PID/stat spells it).
func childrenNamed(name string) []int {
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	var pids []int
	for _, stat := range procs {
		b, err := os.ReadFile(stat)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		end := bytes.LastIndexByte(b, ')')
		if end < 0 || !bytes.HasSuffix(b[:end], []byte("("+name)) {
			continue
		}
		fields := strings.Fields(string(b[end+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(stat))); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// reapWithUs kills pids when this process ends, however it ends: envtest
// starts etcd and kube-apiserver without a parent-death signal, and a
// test binary that panicked or timed out left them running, loading the
// machine for every later run. A small shell outside this process's
// group waits for it to go, then kills them; they are gone already when
// the tests stopped them themselves.
func reapWithUs(pids []int) {
	if len(pids) == 0 {
		return
	}
	args := []string{"-c", `p=$1; shift; while kill -0 "$p" 2>/dev/null; do sleep 2; done; kill -9 "$@" 2>/dev/null; exit 0`,
		"kubediff-testenv-reaper", strconv.Itoa(os.Getpid())}
	for _, pid := range pids {
		args = append(args, strconv.Itoa(pid))
	}
	cmd := exec.Command("sh", args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if cmd.Start() == nil {
		go func() { _ = cmd.Wait() }()
	}
}
