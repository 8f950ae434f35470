package otlp

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	collogpb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	logpb "go.opentelemetry.io/proto/otlp/logs/v1"
	"google.golang.org/protobuf/proto"

	"github.com/kubediff/kubediff/pkg/notify"
	"github.com/kubediff/kubediff/pkg/notify/notifytest"
	"github.com/kubediff/kubediff/pkg/record"
)

// receiver decodes OTLP/HTTP protobuf log exports, as a collector's
// receiver does; it answers 503 to its first failFirst requests.
type receiver struct {
	mu        sync.Mutex
	failFirst int
	requests  int
	auth      []string
	resources []map[string]string
	logs      []*logpb.LogRecord
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	if req.URL.Path != "/otel/v1/logs" || req.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "not an OTLP logs export", http.StatusNotFound)
		return
	}
	if r.requests <= r.failFirst {
		http.Error(w, "collector starting", http.StatusServiceUnavailable)
		return
	}
	body, _ := io.ReadAll(req.Body)
	var export collogpb.ExportLogsServiceRequest
	if err := proto.Unmarshal(body, &export); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.auth = append(r.auth, req.Header.Get("Authorization"))
	for _, rl := range export.ResourceLogs {
		res := map[string]string{}
		for _, kv := range rl.GetResource().GetAttributes() {
			res[kv.Key] = kv.Value.GetStringValue()
		}
		for _, sl := range rl.ScopeLogs {
			for _, lr := range sl.LogRecords {
				r.resources = append(r.resources, res)
				r.logs = append(r.logs, lr)
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

func attrs(lr *logpb.LogRecord) map[string]string {
	out := map[string]string{}
	for _, kv := range lr.Attributes {
		out[kv.Key] = kv.Value.GetStringValue()
	}
	return out
}

// TestEveryRecordArrivesWithItsAttributes: records exported through the
// sink's queue reach an OTLP receiver as log records carrying the
// record's fields as attributes and its JSON as the body; a 503 is
// retried; the configured auth header is sent.
func TestEveryRecordArrivesWithItsAttributes(t *testing.T) {
	const token = "Bearer otlp-canary-5e6f"
	rcv := &receiver{failFirst: 1}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	sink, err := New(Options{Endpoint: srv.URL + "/otel/", Headers: map[string]string{"Authorization": token}, Timeout: 5 * time.Second, Version: "v1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	at := record.Timestamp(time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC))
	records := []record.Change{
		{ID: "u1/7/updated", Time: at, Type: record.Updated, APIVersion: "apps/v1", Kind: "Deployment", Resource: "deployments", Namespace: "prod", Name: "web",
			UID: "u1", ResourceVersion: "7", Changed: "spec.template.spec.containers[name=nginx].image", Manager: &record.Manager{Name: "kubectl-set"}},
		{ID: "u2/8/added", Time: at, Type: record.Added, APIVersion: "v1", Kind: "Pod", Resource: "pods", Namespace: "prod", Name: "web-1",
			UID: "u2", ResourceVersion: "8", Owner: &record.Owner{Kind: "ReplicaSet", Name: "web-5d"}},
		{ID: "u3/9/deleted", Time: at, Type: record.Deleted, APIVersion: "v1", Kind: "Node", Resource: "nodes", Name: "node-1", UID: "u3", ResourceVersion: "9", AfterGap: true},
	}
	var logs strings.Builder
	q := notifytest.Deliver(t, sink, records, notify.Backoff{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond}, &logs)
	if s := q.Stats(); s.Delivered != 3 || s.Retries == 0 {
		t.Fatalf("stats %+v: want 3 delivered after a retried 503; logs:\n%s", s, logs.String())
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(rcv.logs) != 3 {
		t.Fatalf("the receiver decoded %d log records, want 3", len(rcv.logs))
	}
	for _, a := range rcv.auth {
		if a != token {
			t.Errorf("Authorization = %q, want the configured header", a)
		}
	}
	if strings.Contains(logs.String(), "otlp-canary") {
		t.Errorf("the auth header appears in the logs:\n%s", logs.String())
	}
	want := []map[string]string{
		{"kubediff.id": "u1/7/updated", "kubediff.type": "updated", "k8s.namespace.name": "prod", "k8s.deployment.name": "web", "k8s.deployment.uid": "u1",
			"k8s.object.kind": "Deployment", "kubediff.changed": "spec.template.spec.containers[name=nginx].image", "kubediff.manager": "kubectl-set"},
		{"kubediff.type": "added", "k8s.pod.name": "web-1", "kubediff.owner": "ReplicaSet/web-5d"},
		{"kubediff.type": "deleted", "k8s.node.name": "node-1", "k8s.object.resource_version": "9"},
	}
	for i, lr := range rcv.logs {
		got := attrs(lr)
		for k, v := range want[i] {
			if got[k] != v {
				t.Errorf("record %d: attribute %s = %q, want %q (all: %v)", i, k, got[k], v, got)
			}
		}
		var body record.Change
		if err := json.Unmarshal([]byte(lr.Body.GetStringValue()), &body); err != nil || body.ID != records[i].ID {
			t.Errorf("record %d: body is not the record's JSON: %v %q", i, err, lr.Body.GetStringValue())
		}
		if lr.TimeUnixNano != uint64(time.Time(at).UnixNano()) || lr.SeverityText != "INFO" || lr.EventName != "kubediff.change" {
			t.Errorf("record %d: time %d, severity %q, event %q", i, lr.TimeUnixNano, lr.SeverityText, lr.EventName)
		}
		if rcv.resources[i]["service.name"] != "kubediff" || rcv.resources[i]["service.version"] != "v1.2.3" {
			t.Errorf("record %d: resource %v", i, rcv.resources[i])
		}
	}
	afterGap := false
	for _, kv := range rcv.logs[2].Attributes {
		afterGap = afterGap || (kv.Key == "kubediff.after_gap" && kv.Value.GetBoolValue())
	}
	if !afterGap {
		t.Error("record 2: kubediff.after_gap is not true")
	}
}

// A 400 is final: the records are counted as failed, not retried forever.
func TestRejectedExportIsNotRetried(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "malformed", http.StatusBadRequest)
	}))
	defer srv.Close()
	sink, err := New(Options{Endpoint: srv.URL, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	q := notifytest.Deliver(t, sink, []record.Change{{ID: "x", Type: record.Added, Kind: "ConfigMap", Name: "a"}}, notify.Backoff{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond}, nil)
	if s := q.Stats(); s.Failed != 1 || s.Retries != 0 {
		t.Fatalf("stats %+v: want 1 failed, no retries", s)
	}
}
