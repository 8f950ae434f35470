package diff

import (
	"os/exec"
	"strings"
	"testing"
)

// The diff engine reads changes and writes records: it depends on neither
// the watcher that makes the changes, client-go (its caches, its clients),
// discovery, nor the state dir's database. Whatever reads changes without
// watching (rules, the history's readers, a benchmark) then builds it
// without them; before the change event moved down into pkg/change, this
// package pulled in 753 packages, bbolt among them.
func TestDiffDependsOnNeitherWatcherNorStorage(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	forbidden := []string{"github.com/kubediff/kubediff/pkg/watcher", "github.com/kubediff/kubediff/pkg/state",
		"github.com/kubediff/kubediff/pkg/discovery", "github.com/kubediff/kubediff/pkg/history", "go.etcd.io/bbolt", "k8s.io/client-go"}
	for _, pkg := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if pkg == f || strings.HasPrefix(pkg, f+"/") {
				t.Errorf("pkg/diff depends on %s", pkg)
			}
		}
	}
}
