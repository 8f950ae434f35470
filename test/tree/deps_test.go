package tree

import (
	"os/exec"
	"strings"
	"testing"
)

// storage is where the history and the objects' states are kept: the
// state dir's packages and its database. The record path names what it
// writes with the light types of pkg/journal and pkg/change, and each
// stage declares the little of the store it calls (watcher.Journal,
// pipeline.StateHolds, pipeline.Keeper); internal/app wires the store
// in. So a second store (PostgreSQL) is a second implementation, not a
// change to the watcher or the pipeline.
var storage = []string{
	"github.com/kubediff/kubediff/pkg/state",
	"github.com/kubediff/kubediff/pkg/history",
	"go.etcd.io/bbolt",
}

// TestRecordPathImportsNoStorage: neither the watcher, the pipeline nor
// the diff engine depends on a storage package, directly or through
// another. The diff engine reads changes and writes records, so it
// depends on none of the watching either (the watcher, discovery,
// client-go): whatever reads changes without watching (rules, the
// history's readers, a benchmark) builds it without them; before the
// change event moved down into pkg/change, pkg/diff pulled in 753
// packages, bbolt among them.
func TestRecordPathImportsNoStorage(t *testing.T) {
	watching := []string{
		"github.com/kubediff/kubediff/pkg/watcher",
		"github.com/kubediff/kubediff/pkg/discovery",
		"k8s.io/client-go",
	}
	for pkg, forbidden := range map[string][]string{
		"pkg/watcher":  storage,
		"pkg/pipeline": storage,
		"pkg/diff":     append(watching, storage...),
	} {
		for _, dep := range deps(t, pkg) {
			for _, f := range forbidden {
				if dep == f || strings.HasPrefix(dep, f+"/") {
					t.Errorf("%s depends on %s", pkg, dep)
				}
			}
		}
	}
}

// deps lists the packages pkg (a directory of the repository) imports,
// directly or transitively, its tests' imports left out.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "./"+pkg)
	cmd.Dir = "../.."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", pkg, err, out)
	}
	return strings.Fields(string(out))
}
