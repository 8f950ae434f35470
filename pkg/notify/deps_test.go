package notify

import (
	"os/exec"
	"strings"
	"testing"
)

// A sink depends on the record, not on the Kubernetes API machinery:
// someone writing a sink must not pull in client-go. pkg/record is checked
// too, since every sink imports it.
func TestSinksDoNotDependOnKubernetes(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "./...", "../record").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	var heavy []string
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "k8s.io/") || strings.HasPrefix(pkg, "sigs.k8s.io/") {
			heavy = append(heavy, pkg)
		}
	}
	if len(heavy) > 0 {
		t.Fatalf("packages under pkg/notify depend on %d Kubernetes packages, such as %v", len(heavy), heavy[:min(5, len(heavy))])
	}
}
