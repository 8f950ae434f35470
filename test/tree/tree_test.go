// Package tree checks the repository itself: what a fresh clone downloads.
package tree

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// maxTrackedBytes is the largest file the tree may track outside testdata/.
// Every build output is far larger (kubediff's binary is about 45 MB), and
// one committed binary stays in every clone for good.
const maxTrackedBytes = 2 << 20

func TestNoLargeTrackedFiles(t *testing.T) {
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v (the tree test needs a git checkout)", err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if name == "" || strings.Contains(name, "/testdata/") {
			continue
		}
		info, err := os.Stat("../../" + name)
		if err != nil {
			continue // deleted in the work tree, not yet committed
		}
		if info.Size() > maxTrackedBytes {
			t.Errorf("%s is tracked and %d bytes (limit %d): build outputs belong in .gitignore", name, info.Size(), maxTrackedBytes)
		}
	}
}
