package e2e

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kubediff/kubediff/internal/testenv"
)

// bodyRecorder keeps every request body a sink sends (gunzipped): the
// leak test searches them byte for byte, whatever the encoding.
type bodyRecorder struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (b *bodyRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		if z, err := gzip.NewReader(r.Body); err == nil {
			body = z
		}
	}
	data, _ := io.ReadAll(body)
	b.mu.Lock()
	b.bodies = append(b.bodies, data)
	b.mu.Unlock()
	if ct := r.Header.Get("Content-Type"); ct == "application/x-protobuf" {
		w.Header().Set("Content-Type", ct) // OTLP/HTTP's success answer may be empty
	}
	w.WriteHeader(http.StatusOK)
}

func (b *bodyRecorder) all() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Join(b.bodies, []byte("\n"))
}

// TestSecretValuesLeakNowhere sends canary values through every way a
// Secret's value travels — data, stringData, kubectl's and kapp's copies of
// the object in annotations, a label and an annotation equal to a value or
// holding its base64 form, a Helm release kept in a ConfigMap, a
// ConfigMap key and an env var that look sensitive — and searches every
// place kubediff writes: stdout (text with unified diffs and patches),
// its logs at debug level, a webhook, a CloudEvents webhook, OTLP, Slack,
// and the state dir's files.
func TestSecretValuesLeakNowhere(t *testing.T) {
	ns := newNamespace(t)
	const (
		value   = "Leak-Canary-41c7e2"
		later   = "Leak-Canary-9f03ab"
		release = "H4sIAAAAAAAA/leak-canary-release-77d1"
	)
	encoded := base64.StdEncoding.EncodeToString([]byte(value))
	hook, events, otlp, slackAPI := &bodyRecorder{}, &bodyRecorder{}, &bodyRecorder{}, &testenv.SlackServer{}
	var urls []string
	for _, h := range []http.Handler{hook, events, otlp, slackAPI} {
		srv := httptest.NewServer(h)
		defer srv.Close()
		urls = append(urls, srv.URL)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`
sinks:
  - {name: hook, type: webhook, url: %s/hook}
  - {name: events, type: webhook, format: cloudevents, url: %s/events}
  - {name: otel, type: otlp, endpoint: %s}
  - {name: chat, type: slack, token: xoxb-leak-test, channel: "#changes", apiURL: %s/api/}
`, urls[0], urls[1], urls[2], urls[3])), 0o600); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	w := startBinary(t, "watch", "-n", ns, "--config", cfg, "--state-dir", state, "-o", "text", "--diff-style", "unified",
		"--patch", "--log-level", "debug", "--color", "always")

	secret := func(meta, body string) string {
		return "apiVersion: v1\nkind: Secret\nmetadata: {name: s, " + meta + "}\n" + body + "\n"
	}
	kappCopy := fmt.Sprintf(`{"apiVersion":"v1","kind":"Secret","data":{"password":"%s"}}`, encoded)
	steps := []string{
		secret("", "stringData: {password: "+value+"}"),
		secret(`annotations: {kapp.k14s.io/original: '`+kappCopy+`'}`, "stringData: {password: "+value+"}"),
		secret(`labels: {copy: `+value+`}, annotations: {note: "was `+encoded+`"}`, "stringData: {password: "+value+"}"),
		secret(`annotations: {example.com/copy: '{"stringData":{"password":"`+later+`"}}'}`, "stringData: {password: "+value+"}"),
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: sh.helm.release.v1.web.v1, labels: {owner: helm, name: web}}\ndata: {release: " + release + "}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: sh.helm.release.v1.web.v1, labels: {owner: helm, name: web}}\ndata: {release: " + release + "-2}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app}\ndata: {db_password: " + value + "}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app}\ndata: {db_password: " + later + "}\n",
	}
	for _, manifest := range steps {
		kubectl(t, manifest, "-n", ns, "apply", "-f", "-")
	}
	kubectl(t, "", "-n", ns, "create", "secret", "generic", "plain", "--from-literal=token="+later)
	kubectl(t, "", "-n", ns, "delete", "secret", "s")
	marker := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: leak-marker}\n"
	kubectl(t, marker, "-n", ns, "apply", "-f", "-")
	eventually(t, "the marker at every sink", func() bool {
		return strings.Contains(w.stdout.String(), "leak-marker") && bytes.Contains(hook.all(), []byte("leak-marker")) &&
			bytes.Contains(events.all(), []byte("leak-marker")) && bytes.Contains(otlp.all(), []byte("leak-marker")) &&
			strings.Contains(strings.Join(slackAPI.Messages(), "\n"), "leak-marker")
	})
	w.shutdown() // the state dir's last write too
	places := map[string][]byte{
		"stdout": []byte(w.stdout.String()), "logs": []byte(w.stderr.String()),
		"webhook": hook.all(), "cloudevents": events.all(), "otlp": otlp.all(), "slack": []byte(strings.Join(slackAPI.Messages(), "\n")),
	}
	files, _ := filepath.Glob(filepath.Join(state, "*"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		places["state dir "+filepath.Base(f)] = data
	}
	if !bytes.Contains(places["stdout"], []byte("Secret")) || !bytes.Contains(places["webhook"], []byte("sh.helm.release.v1.web.v1")) {
		t.Fatalf("the Secret's and the release's records are missing: nothing was checked\n%s", places["stdout"])
	}
	canaries := []string{value, later, encoded, base64.StdEncoding.EncodeToString([]byte(later)), "leak-canary-release-77d1"}
	for place, data := range places {
		for _, c := range canaries {
			if bytes.Contains(data, []byte(c)) {
				t.Errorf("%q appears in %s", c, place)
			}
		}
	}
}
