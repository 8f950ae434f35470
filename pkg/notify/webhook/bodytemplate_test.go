package webhook

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubediff/kubediff/pkg/notify"
	"github.com/kubediff/kubediff/pkg/notify/notifytest"
	"github.com/kubediff/kubediff/pkg/record"
)

// bodyReceiver is an HTTP server on 127.0.0.1 keeping each body and its
// content type.
type bodyReceiver struct {
	mu     sync.Mutex
	bodies []string
	types  []string
}

func (r *bodyReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bodies = append(r.bodies, string(b))
	r.types = append(r.types, req.Header.Get("Content-Type"))
}

func templateSink(t *testing.T, url string, c Config) notify.Notifier {
	t.Helper()
	c.URL, c.Format = url, FormatTemplate
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	n, err := c.Build(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func templateRecords() []record.Change {
	var out []record.Change
	for _, name := range []string{"web", "api", `x"y`} {
		out = append(out, record.Change{ID: "id-" + name, Type: record.Updated, APIVersion: "apps/v1", Kind: "Deployment", Namespace: "prod", Name: name,
			Changes: []record.FieldChange{{Op: record.OpReplace, Path: "/spec/replicas", Field: "spec.replicas", From: 1, To: 3}},
			Time:    record.Timestamp(time.Unix(1700000000, 0))})
	}
	return out
}

// A body template lays out waiting records in one body of the user's
// JSON, every value from the cluster encoded as a JSON string.
func TestBodyTemplatePostsTheUsersJSON(t *testing.T) {
	rcv := &bodyReceiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	sink := templateSink(t, srv.URL, Config{Body: `{"count": {{len .Sections}}, "items": [{{range $i, $s := .Sections}}{{if $i}},{{end}}` +
		`{"title": {{json $s.Title}}, "ns": {{json $s.Record.Namespace}}, "first": {{json (index $s.Lines 0)}}}{{end}}]}`})
	notifytest.Deliver(t, sink, templateRecords(), notify.Backoff{Initial: time.Millisecond, Max: time.Millisecond}, nil)
	var items []map[string]any
	for i, body := range rcv.bodies {
		var got struct {
			Count int
			Items []map[string]any
		}
		if err := json.Unmarshal([]byte(body), &got); err != nil || rcv.types[i] != "application/json" {
			t.Fatalf("body %q (%s): %v", body, rcv.types[i], err)
		}
		items = append(items, got.Items...)
	}
	if len(items) != 3 || items[2]["title"] != `updated Deployment prod/x"y` || items[0]["ns"] != "prod" || items[0]["first"] != "~ spec.replicas: 1 → 3" {
		t.Errorf("items %v", items)
	}
}

// A plain-text template posts its text as it is, with its content type.
func TestBodyTemplatePlainText(t *testing.T) {
	rcv := &bodyReceiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	sink := templateSink(t, srv.URL, Config{ContentType: "text/plain; charset=utf-8", Body: "{{range .Sections}}{{.Title}}\n{{end}}"})
	notifytest.Deliver(t, sink, templateRecords(), notify.Backoff{Initial: time.Millisecond, Max: time.Millisecond}, nil)
	all := strings.Join(rcv.bodies, "")
	if all != "updated Deployment prod/web\nupdated Deployment prod/api\nupdated Deployment prod/x\"y\n" || rcv.types[0] != "text/plain; charset=utf-8" {
		t.Errorf("bodies %q, types %v", rcv.bodies, rcv.types)
	}
}

// Mistakes are configuration errors at start.
func TestBodyTemplateMistakes(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{Format: FormatTemplate}, "set body or bodyFile"},
		{Config{Format: FormatTemplate, Body: "{{.Sections"}, "body:"},
		{Config{Format: FormatTemplate, Body: "x", BodyFile: "/f"}, "set body or bodyFile"},
		{Config{Format: FormatRecord, Body: "x"}, "are for format: template"},
	} {
		tc.c.URL = "http://127.0.0.1:1/hook"
		if err := tc.c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.c, err, tc.want)
		}
	}
}
