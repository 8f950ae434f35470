package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/kubediff/kubediff/internal/testsync"
)

// BuildKubediff builds the kubediff binary into a new temporary directory
// and returns its path and a function removing it: tests that run it as a
// separate process (signals, exit codes, a second API server) use the real
// binary.
func BuildKubediff() (path string, remove func(), err error) {
	dir, err := os.MkdirTemp("", "kubediff-bin-")
	if err != nil {
		return "", nil, err
	}
	remove = func() { _ = os.RemoveAll(dir) }
	path = filepath.Join(dir, "kubediff")
	build := exec.Command("go", "build", "-o", path, "github.com/kubediff/kubediff/cmd/kubediff")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		remove()
		return "", nil, fmt.Errorf("build kubediff: %w", err)
	}
	return path, remove, nil
}

// SyncBuffer is an io.Writer safe for a writing process and a polling
// test at once (testsync.Buffer, for tests without a control plane).
type SyncBuffer = testsync.Buffer
