// Package tree checks the repository itself: what a fresh clone downloads.
package tree

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
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

// TestUnitNeedsNoControlPlane: every package that `make unit` runs can
// pass on a machine without the local control plane: none of them
// imports internal/testenv (which starts one, or builds kubediff) in its
// tests. `make unit` leaves out test/e2e, test/living and test/dist.
func TestUnitNeedsNoControlPlane(t *testing.T) {
	cmd := exec.Command("make", "-s", "--no-print-directory", "-n", "unit")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make -n unit: %v", err)
	}
	excluded := regexp.MustCompile(`-e (/[\w/]+)`).FindAllStringSubmatch(string(out), -1)
	if !slices.ContainsFunc(excluded, func(m []string) bool { return m[1] == "/test/dist" }) {
		t.Error("`make unit` runs test/dist, which builds every release archive")
	}
	// Packages with tests, and what they and their tests import.
	list := exec.Command("go", "list", "-f", `{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}{{end}}`, "./...")
	list.Dir = "../.."
	pkgs, err := list.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(pkgs)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || !slices.Contains(fields[1:], "github.com/kubediff/kubediff/internal/testenv") || fields[0] == "github.com/kubediff/kubediff/internal/testenv" {
			continue
		}
		if !slices.ContainsFunc(excluded, func(m []string) bool { return strings.Contains(fields[0], m[1]) }) {
			t.Errorf("%s needs the control plane (it imports internal/testenv) but `make unit` runs it", fields[0])
		}
	}
}
