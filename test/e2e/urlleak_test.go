package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSinkURLPathTokensStayOutOfLogs runs the built binary with sinks
// whose URLs carry a token in the path, as Slack's, Discord's and Teams'
// incoming webhooks do, against receivers that answer 502 or refuse the
// connection: the sinks fail and say so, naming the sink and its host,
// and the token appears nowhere in what kubediff prints (its own logs and
// anything a library writes to stderr).
func TestSinkURLPathTokensStayOutOfLogs(t *testing.T) {
	const token = "T0PATH/B0PATH/e2e-path-canary-5150"
	ns := newNamespace(t)
	// Its answer quotes the request, as many receivers' errors do.
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down for maintenance: "+r.Method+" "+r.URL.RequestURI(), http.StatusBadGateway)
	}))
	defer failing.Close()
	refused := "http://127.0.0.1:1"
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`
sinks:
  - name: hook-502
    type: webhook
    url: %[1]s/services/%[3]s
  - name: hook-refused
    type: webhook
    url: %[2]s/services/%[3]s
  - name: otlp-502
    type: otlp
    endpoint: %[1]s/%[3]s
  - name: otlp-grpc-refused
    type: otlp
    protocol: grpc
    endpoint: %[2]s/%[3]s
  - name: slack-502
    type: slack
    token: xoxb-not-the-canary
    channel: "#changes"
    apiURL: %[1]s/%[3]s/api/
`, failing.URL, refused, token)), 0o600); err != nil {
		t.Fatal(err)
	}
	w := startBinary(t, "watch", "-n", ns, "--config", cfg, "--log-level", "debug")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "leak-probe"}, Data: map[string]string{"k": "v"}}
	if _, err := clients.CoreV1().ConfigMaps(ns).Create(bg, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sinks := []string{"hook-502", "hook-refused", "otlp-502", "otlp-grpc-refused", "slack-502"}
	eventually(t, "every sink to report failing", func() bool {
		for _, name := range sinks {
			if !hasLine(w.stderr.String(), "sink="+name, "sink failing") {
				return false
			}
		}
		return true
	})
	w.shutdown() // the drain's last words too
	output := w.stdout.String() + w.stderr.String()
	for _, part := range strings.Split(token, "/") {
		if strings.Contains(output, part) {
			t.Errorf("the URL path's token %q appears in kubediff's output:\n%s", part, output)
		}
	}
	if host := strings.TrimPrefix(failing.URL, "http://"); !strings.Contains(output, host) {
		t.Errorf("no log line names the failing receiver's host %s: a person cannot tell which sink fails:\n%s", host, output)
	}
}

// hasLine reports whether one line of logs holds every one of parts.
func hasLine(logs string, parts ...string) bool {
	for _, line := range strings.Split(logs, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}
