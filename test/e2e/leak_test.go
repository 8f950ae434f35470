package e2e

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubediff/kubediff/internal/testenv"
	"github.com/kubediff/kubediff/internal/toolcopy"
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
// the object in annotations, Rancher's wrangler copy (gzipped, then
// base64'd) and a made-up tool's, a label and an annotation equal to a
// value or holding its base64 form, a Helm release kept in a ConfigMap, a
// ConfigMap key and an env var that look sensitive — and searches every
// place kubediff writes: stdout (text with unified diffs and patches),
// its logs at debug level, a webhook, a CloudEvents webhook, OTLP, Slack,
// the state dir's files, and what the history answers from it (history,
// get --at each record's moment, diff between them).
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
		"--patch", "--log-level", "debug", "--color", "always", "--show-helm-storage")

	secret := func(meta, body string) string {
		return "apiVersion: v1\nkind: Secret\nmetadata: {name: s, " + meta + "}\n" + body + "\n"
	}
	kappCopy := fmt.Sprintf(`{"apiVersion":"v1","kind":"Secret","data":{"password":"%s"}}`, encoded)
	// Wrangler's copy of what it applied, and a made-up tool's of the
	// same kind, hold the values out of sight of any search for them.
	wranglerCopy := toolcopy.GzipBase64(kappCopy)
	laterCopy := toolcopy.GzipBase64(fmt.Sprintf(`{"apiVersion":"v1","kind":"Secret","stringData":{"password":"%s"}}`, later))
	toolCopy := toolcopy.GzipBase64(`{"secret":{"password":"` + value + `"},"by":"example.dev"}`)
	configMapCopy := toolcopy.GzipBase64(`{"kind":"ConfigMap","data":{"db_password":"` + later + `"}}`)
	wrangler := func(copied string) string {
		return `annotations: {objectset.rio.cattle.io/applied: "` + copied + `", objectset.rio.cattle.io/id: app, kubernetes.io/service-account.name: builder}`
	}
	steps := []string{
		secret("", "stringData: {password: "+value+"}"),
		secret(`annotations: {kapp.k14s.io/original: '`+kappCopy+`'}`, "stringData: {password: "+value+"}"),
		secret(`labels: {copy: `+value+`}, annotations: {note: "was `+encoded+`"}`, "stringData: {password: "+value+"}"),
		secret(`annotations: {example.com/copy: '{"stringData":{"password":"`+later+`"}}'}`, "stringData: {password: "+value+"}"),
		secret(wrangler(wranglerCopy), "stringData: {password: "+value+"}"),
		secret(wrangler(laterCopy), "stringData: {password: "+value+"}"),
		secret(`annotations: {example.dev/state: "`+toolCopy+`"}`, "stringData: {password: "+value+"}"),
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: sh.helm.release.v1.web.v1, labels: {owner: helm, name: web}}\ndata: {release: " + release + "}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: sh.helm.release.v1.web.v1, labels: {owner: helm, name: web}}\ndata: {release: " + release + "-2}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app}\ndata: {db_password: " + value + "}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, annotations: {objectset.rio.cattle.io/applied: \"" + configMapCopy + "\"}}\ndata: {db_password: " + later + "}\n",
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
	for place, data := range keptAnswers(t, state, ns) {
		places[place] = data
	}
	if !bytes.Contains(places["stdout"], []byte("Secret")) || !bytes.Contains(places["webhook"], []byte("sh.helm.release.v1.web.v1")) {
		t.Fatalf("the Secret's and the release's records are missing: nothing was checked\n%s", places["stdout"])
	}
	if !bytes.Contains(places["stdout"], []byte("objectset.rio.cattle.io/applied")) || !bytes.Contains(places["history get secrets/s"], []byte("objectset.rio.cattle.io/applied")) ||
		!bytes.Contains(places["history get secrets/s"], []byte("service-account.name: builder")) {
		t.Errorf("the wrangler annotation's key, or the safe one's value, is missing from stdout or the history:\n%s\n%s", places["stdout"], places["history get secrets/s"])
	}
	canaries := []string{value, later, encoded, base64.StdEncoding.EncodeToString([]byte(later)), "leak-canary-release-77d1"}
	// Each copy is searched for by a piece from its middle (its start is
	// gzip's header, the same in every copy), so a cut value is found too.
	for _, copied := range []string{wranglerCopy, laterCopy, toolCopy, configMapCopy} {
		canaries = append(canaries, copied[len(copied)/2-12:len(copied)/2+12])
	}
	for place, data := range places {
		for _, c := range canaries {
			if bytes.Contains(data, []byte(c)) {
				t.Errorf("%q appears in %s", c, place)
			}
		}
	}
}

// keptAnswers asks a stopped kubediff's state dir what its history
// holds of namespace ns: the records, each object at each record's moment
// (get --at) and between consecutive moments (diff), by place.
func keptAnswers(t *testing.T, state, ns string) map[string][]byte {
	t.Helper()
	records, code := cliOutput(t, "history", "-n", ns, "--state-dir", state)
	if code != 0 {
		t.Fatalf("history: exit %d: %s", code, records)
	}
	answers := map[string][]byte{"history records": []byte(records)}
	moments := map[string][]string{} // resource/name → RFC 3339 moments, oldest first
	var objects []string
	for _, line := range strings.Split(strings.TrimSpace(records), "\n") {
		var r struct{ Time, Resource, Name string }
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("history record %q: %v", line, err)
		}
		at, err := time.Parse(time.RFC3339Nano, r.Time)
		if err != nil {
			t.Fatal(err)
		}
		object := r.Resource + "/" + r.Name
		if moments[object] == nil {
			objects = append(objects, object)
		}
		// Just after the record, which is kept to the nanosecond.
		moments[object] = append(moments[object], at.Add(time.Millisecond).Format(time.RFC3339Nano))
	}
	for _, object := range objects {
		var got, diffs []string
		for i, at := range moments[object] {
			out, _ := cliOutput(t, "get", object, "-n", ns, "--at", at, "--state-dir", state)
			got = append(got, out)
			if i > 0 {
				out, _ := cliOutput(t, "diff", object, "-n", ns, "--from", moments[object][i-1], "--to", at, "--state-dir", state)
				diffs = append(diffs, out)
			}
		}
		answers["history get "+object] = []byte(strings.Join(got, "\n"))
		answers["history diff "+object] = []byte(strings.Join(diffs, "\n"))
	}
	return answers
}
