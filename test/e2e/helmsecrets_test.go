package e2e

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// renderChart renders charts/kubediff with a values file, or returns
// helm's error output.
func renderChart(t *testing.T, namespace, values string, extra ...string) (string, error) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(file, []byte(values), 0o600); err != nil {
		t.Fatal(err)
	}
	chart := filepath.Join(repoRoot(t), "charts", "kubediff")
	return helm(t, append([]string{"template", "secret-env", chart, "--namespace", namespace, "-f", file}, extra...)...)
}

// renderedConfigFile writes the config file of the chart's ConfigMap.
func renderedConfigFile(t *testing.T, manifests string) string {
	t.Helper()
	for _, doc := range strings.Split(manifests, "\n---\n") {
		var cm corev1.ConfigMap
		if err := yaml.Unmarshal([]byte(doc), &cm); err != nil {
			t.Fatal(err)
		}
		if cm.Kind == "ConfigMap" && cm.Data["config.yaml"] != "" {
			file := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(file, []byte(cm.Data["config.yaml"]), 0o600); err != nil {
				t.Fatal(err)
			}
			return file
		}
	}
	t.Fatalf("no config file in:\n%s", manifests)
	return ""
}

// TestHelmChartTakesHeaderTokensFromASecret: a webhook's header token,
// which has no file form, comes from an existing Secret through
// credentials.env: the rendered chart holds only the Secret's name and
// key, the API server accepts the Pod spec, and kubediff run with the
// environment the kubelet would give it (the Secret's value) sends the
// token to the receiver without printing it.
func TestHelmChartTakesHeaderTokensFromASecret(t *testing.T) {
	const token = "hdr-canary-4242-from-secret"
	ns := newNamespace(t)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kubediff-creds"}, StringData: map[string]string{"hook-token": token}}
	if _, err := clients.CoreV1().Secrets(ns).Create(bg, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var auths []string
	receiver := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		auths = append(auths, r.Header.Get("Authorization"))
	}))
	defer receiver.Close()

	manifests, err := renderChart(t, ns, `
replicaCount: 1
credentials:
  existingSecret: kubediff-creds
  env:
    HOOK_TOKEN: hook-token
config:
  output: none
  sinks:
    - name: audit
      type: webhook
      url: `+receiver.URL+`/hook
      headers: {Authorization: "Bearer ${HOOK_TOKEN}"}
`)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, manifests)
	}
	if strings.Contains(manifests, token) {
		t.Fatal("the Secret's value appears in the rendered chart")
	}
	if out := kubectl(t, manifests, "apply", "--dry-run=server", "-f", "-"); !strings.Contains(out, "(server dry run)") {
		t.Fatalf("dry run:\n%s", out)
	}
	var environment []string
	for _, e := range podSpecs(t, manifests)[0].Containers[0].Env {
		if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			continue
		}
		ref := e.ValueFrom.SecretKeyRef
		s, err := clients.CoreV1().Secrets(ns).Get(bg, ref.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("env %s names Secret %s: %v", e.Name, ref.Name, err)
		}
		environment = append(environment, e.Name+"="+string(s.Data[ref.Key])) // as the kubelet sets it
	}
	if len(environment) != 1 || !strings.HasPrefix(environment[0], "HOOK_TOKEN=") {
		t.Fatalf("env from the Secret = %q, want HOOK_TOKEN", environment)
	}

	w := startBinaryWithEnv(t, environment, "watch", "--config", renderedConfigFile(t, manifests),
		"--state-dir", t.TempDir(), "--log-format", "text", "-n", ns)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe"}, Data: map[string]string{"k": "v"}}
	if _, err := clients.CoreV1().ConfigMaps(ns).Create(bg, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a delivery with the Secret's token", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, a := range auths {
			if a == "Bearer "+token {
				return true
			}
		}
		return false
	})
	w.shutdown()
	if strings.Contains(w.stdout.String()+w.stderr.String(), token) {
		t.Error("the token appears in kubediff's output")
	}
}

// The state dir's volume holds what its queues and its history may grow
// to: the chart refuses an emptyDir (or a claim) smaller than the sinks'
// queues full at queueMaxBytes and the history full at history.maxBytes
// need, naming the figure, instead of a Pod the kubelet evicts, deleting
// its state, history and undelivered records, in a long outage.
func TestHelmChartStateVolumeHoldsTheQueues(t *testing.T) {
	const twoSinks = `
config:
  sinks:
    - {name: audit, type: webhook, url: "http://audit.example"}
    - {name: collector, type: otlp, endpoint: "http://collector.example:4318", queueMaxBytes: 1Gi}
`
	// 1.5 × (256 + 256 + 1024) + 2 × 512 (the chart's history) + 256.
	out, err := renderChart(t, "default", twoSinks)
	for _, want := range []string{"persistence.emptyDirSizeLimit: 2Gi is less than the state dir may need, 3584Mi", "3 queues", "2 times history.maxBytes (1024Mi)"} {
		if err == nil || !strings.Contains(out, want) {
			t.Errorf("stdout and two sinks (256Mi, 256Mi, 1Gi) and a 512Mi history in a 2Gi emptyDir: err %v, output %q; want a failure saying %q", err, out, want)
		}
	}
	out, err = renderChart(t, "default", twoSinks, "--set", "persistence.emptyDirSizeLimit=4Gi")
	if err != nil || !strings.Contains(out, "sizeLimit: 4Gi") {
		t.Errorf("with a 4Gi emptyDir: err %v, output:\n%s", err, out)
	}
	out, err = renderChart(t, "default", twoSinks, "--set", "persistence.enabled=true", "--set", "persistence.size=3Gi")
	if err == nil || !strings.Contains(out, "persistence.size: 3Gi is less than") {
		t.Errorf("a 3Gi claim: err %v, output %q; want a failure naming persistence.size", err, out)
	}
	// History off ("0" in either key): the queues and the objects, 2560Mi,
	// fit 3Gi. The keys are strings (kubediff refuses a number there, and
	// so does the chart's schema): --set-string.
	for _, off := range []string{"config.history.maxBytes=0", "config.history.retention=0"} {
		if out, err := renderChart(t, "default", twoSinks, "--set-string", off, "--set", "persistence.emptyDirSizeLimit=3Gi"); err != nil {
			t.Errorf("history off (%s) in a 3Gi emptyDir: %v\n%s", off, err, out)
		}
	}
	// kubediff's own history bound, 1Gi, needs more than the default 2Gi
	// even with stdout alone: 1.5 × 256 + 2 × 1024 + 256.
	if out, err := renderChart(t, "default", "", "--set", "config.history.maxBytes=1Gi"); err == nil || !strings.Contains(out, "2Gi is less than the state dir may need, 2688Mi") {
		t.Errorf("a 1Gi history in the default 2Gi emptyDir: err %v, output %q", err, out)
	}
	if out, err := renderChart(t, "default", "config: {history: {maxBytes: lots}}\n"); err == nil || !strings.Contains(out, `config.history.maxBytes: "lots" is not a size`) {
		t.Errorf("history.maxBytes lots: err %v, output %q", err, out)
	}
	if out, err := renderChart(t, "default", "config: {queueMaxBytes: lots}\n"); err == nil || !strings.Contains(out, `config.queueMaxBytes: "lots" is not a size`) {
		t.Errorf("queueMaxBytes lots: err %v, output %q", err, out)
	}
}
