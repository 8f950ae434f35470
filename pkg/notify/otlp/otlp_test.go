package otlp

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	collogpb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logpb "go.opentelemetry.io/proto/otlp/logs/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/kubediff/kubediff/pkg/notify"
	"github.com/kubediff/kubediff/pkg/notify/notifytest"
	"github.com/kubediff/kubediff/pkg/record"
)

// receiver decodes OTLP log exports, as a collector's receiver does,
// over HTTP/protobuf (ServeHTTP) or gRPC (Export); it fails its first
// failFirst requests as a collector starting up would (503, Unavailable).
type receiver struct {
	collogpb.UnimplementedLogsServiceServer

	mu        sync.Mutex
	failFirst int
	// denyFirst requests after those are refused as a collector refuses
	// a bad token: with denyHTTP (401, 403) or denyGRPC (Unauthenticated,
	// PermissionDenied).
	denyFirst int
	denyHTTP  int
	denyGRPC  codes.Code
	requests  int
	auth      []string
	resources []map[string]string
	logs      []*logpb.LogRecord
}

// failing counts a request and reports whether to fail it.
func (r *receiver) failing() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	return r.requests <= r.failFirst
}

// denied reports whether the request failing just counted is refused.
func (r *receiver) denied() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests <= r.failFirst+r.denyFirst
}

func (r *receiver) add(auth string, export *collogpb.ExportLogsServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.auth = append(r.auth, auth)
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
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != "/otel/v1/logs" || req.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "not an OTLP logs export", http.StatusNotFound)
		return
	}
	if r.failing() {
		http.Error(w, "collector starting", http.StatusServiceUnavailable)
		return
	}
	if r.denied() {
		http.Error(w, "bad token", r.denyHTTP)
		return
	}
	body, _ := io.ReadAll(req.Body)
	var export collogpb.ExportLogsServiceRequest
	if err := proto.Unmarshal(body, &export); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.add(req.Header.Get("Authorization"), &export)
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

// Export implements the OTLP logs gRPC service.
func (r *receiver) Export(ctx context.Context, export *collogpb.ExportLogsServiceRequest) (*collogpb.ExportLogsServiceResponse, error) {
	if r.failing() {
		return nil, status.Error(codes.Unavailable, "collector starting")
	}
	if r.denied() {
		return nil, status.Error(r.denyGRPC, "bad token")
	}
	md, _ := metadata.FromIncomingContext(ctx)
	r.add(strings.Join(md.Get("authorization"), ","), export)
	return &collogpb.ExportLogsServiceResponse{}, nil
}

// start serves rcv with protocol and returns the sink's endpoint.
func start(t *testing.T, protocol string, rcv *receiver) string {
	t.Helper()
	if protocol == HTTPProtobuf {
		srv := httptest.NewServer(rcv)
		t.Cleanup(srv.Close)
		return srv.URL + "/otel/"
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	collogpb.RegisterLogsServiceServer(srv, rcv)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return "http://" + lis.Addr().String()
}

func attrs(lr *logpb.LogRecord) map[string]string {
	out := map[string]string{}
	for _, kv := range lr.Attributes {
		out[kv.Key] = kv.Value.GetStringValue()
		if i, ok := kv.Value.GetValue().(*commonpb.AnyValue_IntValue); ok {
			out[kv.Key] = strconv.FormatInt(i.IntValue, 10)
		}
	}
	return out
}

// TestEveryRecordArrivesWithItsAttributes: records exported through the
// sink's queue, over either protocol, reach an OTLP receiver as log
// records carrying the record's fields as attributes and its JSON as the
// body; a collector starting up (503, Unavailable) is retried; the
// configured auth header is sent.
func TestEveryRecordArrivesWithItsAttributes(t *testing.T) {
	for _, protocol := range []string{HTTPProtobuf, GRPC} {
		t.Run(protocol, func(t *testing.T) { exportsEveryRecord(t, protocol) })
	}
}

func exportsEveryRecord(t *testing.T, protocol string) {
	const token = "Bearer otlp-canary-5e6f"
	rcv := &receiver{failFirst: 1}
	sink, err := New(Options{Endpoint: start(t, protocol, rcv), Protocol: protocol, Headers: map[string]string{"Authorization": token}, Timeout: 5 * time.Second, Version: "v1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	at := record.Timestamp(time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC))
	records := []record.Change{
		{ID: "u1/7/updated", Time: at, Type: record.Updated, APIVersion: "apps/v1", Kind: "Deployment", Resource: "deployments", Namespace: "prod", Name: "web",
			UID: "u1", ResourceVersion: "7", Changed: "spec.template.spec.containers[name=nginx].image", Manager: &record.Manager{Name: "kubectl-set"},
			User:  &record.User{Name: "alice", Groups: []string{"dev", "system:authenticated"}, UserAgent: "kubectl/v1.31.0", SourceIP: "192.0.2.7"},
			Rules: []string{"image-changed", "prod-images"}, Severity: "warning", Summary: "web now runs nginx:1.28",
			Release: &record.Release{Tool: "helm", Namespace: "prod", Name: "web", Revision: 7, Status: "pending-upgrade", Chart: "web-1.4.2", AppVersion: "1.28"},
			GitOps: &record.GitOps{Via: record.ViaOutside, Tool: record.ToolHelm, Namespace: "prod", Name: "web",
				Drift: []record.DriftedField{{Path: "/spec/replicas", Field: "spec.replicas", Declared: 2, Now: 5}}}},
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
			"k8s.object.kind": "Deployment", "kubediff.changed": "spec.template.spec.containers[name=nginx].image", "kubediff.manager": "kubectl-set",
			"kubediff.user": "alice", "kubediff.user.groups": "dev,system:authenticated", "user_agent.original": "kubectl/v1.31.0", "client.address": "192.0.2.7",
			"kubediff.rules": "image-changed,prod-images", "kubediff.severity": "warning", "kubediff.summary": "web now runs nginx:1.28",
			"kubediff.release.tool": "helm", "kubediff.release.name": "web", "kubediff.release.namespace": "prod", "kubediff.release.revision": "7",
			"kubediff.release.chart": "web-1.4.2", "kubediff.release.app_version": "1.28", "kubediff.release.status": "pending-upgrade",
			"kubediff.gitops.via": "outside", "kubediff.gitops.owner": "Helm release prod/web", "kubediff.gitops.drift": "spec.replicas"},
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
		severity := map[int]string{0: "WARN"}[i] // what the rules said; INFO for no rule
		if severity == "" {
			severity = "INFO"
		}
		if lr.TimeUnixNano != uint64(time.Time(at).UnixNano()) || lr.SeverityText != severity || lr.EventName != "kubediff.change" {
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

// TestRefusedTokenLosesNothing: a collector refusing kubediff's token
// (HTTP 401, 403; gRPC Unauthenticated, PermissionDenied) is an
// operator's to fix: the records wait and are exported once it works,
// with one log line when the sink starts failing and one when it heals.
func TestRefusedTokenLosesNothing(t *testing.T) {
	for _, tt := range []struct {
		protocol string
		http     int
		grpc     codes.Code
		status   string
	}{
		{HTTPProtobuf, http.StatusUnauthorized, 0, "401 Unauthorized"},
		{HTTPProtobuf, http.StatusForbidden, 0, "403 Forbidden"},
		{GRPC, 0, codes.Unauthenticated, "Unauthenticated"},
		{GRPC, 0, codes.PermissionDenied, "PermissionDenied"},
	} {
		t.Run(tt.status, func(t *testing.T) {
			const token = "Bearer otlp-canary-7a8b"
			rcv := &receiver{denyFirst: 3, denyHTTP: tt.http, denyGRPC: tt.grpc}
			sink, err := New(Options{Endpoint: start(t, tt.protocol, rcv), Protocol: tt.protocol, Headers: map[string]string{"Authorization": token}, Timeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			var logs strings.Builder
			records := []record.Change{{ID: "a", Type: record.Added, Kind: "ConfigMap", Name: "a"}, {ID: "b", Type: record.Added, Kind: "ConfigMap", Name: "b"}}
			q := notifytest.Deliver(t, sink, records, notify.Backoff{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond}, &logs)
			if s := q.Stats(); s.Delivered != 2 || s.Failed != 0 {
				t.Fatalf("stats %+v: want both records exported once the token works; logs:\n%s", s, logs.String())
			}
			lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
			if len(lines) != 2 || !strings.Contains(lines[0], "sink failing") || !strings.Contains(lines[0], "credentials") ||
				!strings.Contains(lines[0], tt.status) || !strings.Contains(lines[1], "sink delivering again") {
				t.Fatalf("want one line naming %s when the sink starts failing, one when it heals:\n%s", tt.status, logs.String())
			}
			if strings.Contains(logs.String(), "otlp-canary") {
				t.Fatalf("the token is in the logs:\n%s", logs.String())
			}
		})
	}
}
