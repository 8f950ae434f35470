package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// helm runs the Helm binary `make helm` builds from hack/helm.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin := filepath.Join(repoRoot(t), ".tools", "bin", "helm")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("helm is not built (make helm): %v", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestHelmChart: the chart lints, renders with default and namespaced
// values into manifests the API server accepts (server-side dry run),
// refuses a wrong value with a message naming it, and its RBAC is enough
// for kubediff, running as the chart's ServiceAccount, to elect a leader
// and report a change.
func TestHelmChart(t *testing.T) {
	chart := filepath.Join(repoRoot(t), "charts", "kubediff")
	namespaced := filepath.Join(chart, "ci", "namespaced-values.yaml")
	const release = "chart-test"
	for _, ns := range []string{release, "team-a", "team-b"} {
		ensureNamespace(t, ns)
	}
	for _, args := range [][]string{{"lint", chart, "--strict"}, {"lint", chart, "--strict", "-f", namespaced}} {
		if out, err := helm(t, args...); err != nil {
			t.Fatalf("helm %v: %v\n%s", args, err, out)
		}
	}
	render := func(extra ...string) string {
		t.Helper()
		out, err := helm(t, append([]string{"template", release, chart, "--namespace", release}, extra...)...)
		if err != nil {
			t.Fatalf("helm template %v: %v\n%s", extra, err, out)
		}
		return out
	}
	defaults, nsMode := render(), render("-f", namespaced)
	withAPIService := render("--set", "apiService.enabled=true")
	for name, manifests := range map[string]string{"default values": defaults, "namespaced values": nsMode, "the history's APIService": withAPIService} {
		if out := kubectl(t, manifests, "apply", "--dry-run=server", "-f", "-"); !strings.Contains(out, "(server dry run)") {
			t.Fatalf("%s: dry run:\n%s", name, out)
		}
	}
	for _, want := range []string{"kind: APIService", "address: :8443", "name: extension-apiserver-authentication-reader", "aggregate-to-view"} {
		if !strings.Contains(withAPIService, want) || strings.Contains(defaults, want) {
			t.Errorf("apiService.enabled should add %q, and only then", want)
		}
	}
	if !strings.Contains(nsMode, "kind: StatefulSet") || !strings.Contains(nsMode, "volumeClaimTemplates") || strings.Contains(nsMode, "kind: ClusterRole\nmetadata:\n  name: chart-test-kubediff-read") {
		t.Errorf("namespaced values: want a StatefulSet with a claim per replica and Roles, not a cluster-wide read role:\n%s", nsMode)
	}
	// The config file the chart writes is one kubediff accepts.
	for name, manifests := range map[string]string{"default values": defaults, "namespaced values": nsMode} {
		var cm corev1.ConfigMap
		for _, doc := range strings.Split(manifests, "\n---\n") {
			if strings.Contains(doc, "\nkind: ConfigMap\n") {
				if err := yaml.Unmarshal([]byte(doc), &cm); err != nil {
					t.Fatal(err)
				}
			}
		}
		file := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(file, []byte(cm.Data["config.yaml"]), 0o600); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr syncBuffer
		if code := runCLI(&stdout, &stderr, "resources", "--kubeconfig", env.Kubeconfig, "--config", file); code != 0 {
			t.Errorf("%s: kubediff refuses the chart's config file (exit %d): %s\n%s", name, code, stderr.String(), cm.Data["config.yaml"])
		}
	}
	if strings.Contains(defaults+nsMode, "xoxb") {
		t.Error("a credential appears in the rendered chart")
	}
	checkServiceMonitor(t, render("--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.serviceMonitor.labels.release=prom", "--set", "apiService.enabled=true"))
	if strings.Contains(defaults, "kind: ServiceMonitor") {
		t.Error("the default values render a ServiceMonitor, whose CRD a cluster may not have")
	}
	for set, want := range map[string]string{"metrics.serviceMonitor.interval=30": "/metrics/serviceMonitor/interval", "replicaCount=0": "/replicaCount", "rbac.mode=everywhere": "/rbac/mode", "persistence.size=lots": "/persistence/size"} {
		out, err := helm(t, "template", release, chart, "--set", set)
		if err == nil || !strings.Contains(out, want) {
			t.Errorf("--set %s: err %v, output %q; want a failure naming %s", set, err, out, want)
		}
	}

	// For real: the default chart's objects, then kubediff as its
	// ServiceAccount with exactly its RBAC.
	kubectl(t, defaults, "apply", "-f", "-")
	runsAs(t, release, release+"-kubediff", release+"-kubediff")
}

// checkServiceMonitor checks the chart's ServiceMonitor: it scrapes
// /metrics on the metrics Service's named port, that Service alone (by
// its labels), every interval, with the labels a Prometheus selects by.
func checkServiceMonitor(t *testing.T, manifests string) {
	t.Helper()
	type object struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name   string            `json:"name"`
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
		Spec struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			Endpoints []struct{ Port, Path, Interval string } `json:"endpoints"`
			Ports     []struct{ Name string }                 `json:"ports"`
		} `json:"spec"`
	}
	var monitor *object
	var services []object
	for _, doc := range strings.Split(manifests, "\n---\n") {
		var o object
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatal(err)
		}
		switch o.Kind {
		case "ServiceMonitor":
			monitor = &o
		case "Service":
			services = append(services, o)
		}
	}
	if monitor == nil || len(monitor.Spec.Endpoints) != 1 || monitor.Metadata.Labels["release"] != "prom" {
		t.Fatalf("metrics.serviceMonitor.enabled renders no ServiceMonitor with one endpoint and the labels given:\n%s", manifests)
	}
	ep := monitor.Spec.Endpoints[0]
	if ep.Path != "/metrics" || ep.Interval != "30s" {
		t.Errorf("the ServiceMonitor's endpoint: %+v, want /metrics every 30s", ep)
	}
	var selected []string
	for _, svc := range services {
		matches := true
		for k, v := range monitor.Spec.Selector.MatchLabels {
			matches = matches && svc.Metadata.Labels[k] == v
		}
		hasPort := slices.ContainsFunc(svc.Spec.Ports, func(p struct{ Name string }) bool { return p.Name == ep.Port })
		if matches && hasPort {
			selected = append(selected, svc.Metadata.Name)
		}
	}
	if len(selected) != 1 || !strings.HasSuffix(selected[0], "-metrics") {
		t.Errorf("the ServiceMonitor scrapes port %q of the Services %v, want the metrics Service alone", ep.Port, selected)
	}
}
