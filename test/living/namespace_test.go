package living

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/kubediff/kubediff/internal/testenv"
	"github.com/kubediff/kubediff/pkg/record"
)

// TestNamespaceDeletionOnALivingCluster deletes a namespace holding a
// Deployment with its Pods, Secrets, ConfigMaps and a NetworkPolicy, and
// lets the real namespace controller (kube-controller-manager) empty and
// remove it: with the pack's deletion rules on, only namespace-deleted
// fires, and every object's deletion is still printed, marked
// namespaceDeleting. test/e2e (TestNamespaceDeletionIsOneAlert) plays the
// controller's part; this holds kubediff to the real controller's order
// and speed, without an audit trail.
func TestNamespaceDeletionOnALivingCluster(t *testing.T) {
	run := kubectlOrFail(t)
	ns := fmt.Sprintf("gone-%d", time.Now().UnixNano()%100000)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	pack := "rulePack: [namespace-deleted, secret-deleted, configmap-deleted, workload-deleted, networkpolicy-deleted]\n"
	if err := os.WriteFile(cfg, []byte(pack), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, _, _ := watch(t, "-o", "json", "--config", cfg)
	run("", "create", "namespace", ns)
	run("", "-n", ns, "create", "deployment", "web", "--image=nginx:1.27", "--replicas=2")
	for i := range 3 {
		run("", "-n", ns, "create", "secret", "generic", fmt.Sprint("db-", i), "--from-literal=password=hunter2")
		run("", "-n", ns, "create", "configmap", fmt.Sprint("app-", i), "--from-literal=mode=on")
	}
	run(`{"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "deny-all"}, "spec": {"podSelector": {}}}`,
		"-n", ns, "create", "-f", "-")
	run("", "-n", ns, "rollout", "status", "deployment/web", "--timeout", "3m")
	waitQuiet(quietStream{func() int { return len(stdout.String()) }, settle})

	run("", "delete", "namespace", ns, "--timeout", "5m")
	testenv.Eventually(t, "the Namespace's deletion record", 2*time.Minute, func() bool {
		return slices.ContainsFunc(testenv.ParseRecords(t, stdout.String()), func(c record.Change) bool {
			return c.Kind == "Namespace" && c.Name == ns && c.Type == record.Deleted
		})
	})
	waitQuiet(quietStream{func() int { return len(stdout.String()) }, settle})
	checkNamespaceGone(t, testenv.ParseRecords(t, stdout.String()), ns)
}

// checkNamespaceGone holds the records of ns's deletion to one alert.
func checkNamespaceGone(t *testing.T, records []record.Change, ns string) {
	t.Helper()
	deleted := map[string]int{}
	var named []string
	for _, c := range records {
		switch {
		case c.Kind == "Namespace" && c.Name == ns && len(c.Rules) > 0:
			named = append(named, fmt.Sprint(c.Type, c.Rules))
		case c.Namespace != ns || c.Type != record.Deleted:
		case !c.NamespaceDeleting || len(c.Rules) > 0:
			t.Errorf("%s: namespaceDeleting %v, rules %v; want marked, naming no rule", describe(c), c.NamespaceDeleting, c.Rules)
		default:
			deleted[c.Kind]++
		}
	}
	t.Logf("deletions that went with the namespace: %v", deleted)
	for kind, least := range map[string]int{"Secret": 3, "ConfigMap": 3, "Deployment": 1, "NetworkPolicy": 1} {
		if deleted[kind] < least {
			t.Errorf("%d %s deletions printed, want at least %d: %v", deleted[kind], kind, least, deleted)
		}
	}
	if !slices.Equal(named, []string{"updated[namespace-deleted]"}) {
		t.Errorf("the Namespace's records naming rules: %v, want its deletion beginning alone naming namespace-deleted", named)
	}
}
