package kubeevents

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestReadsBothAPIs(t *testing.T) {
	eventsAPI := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "events.k8s.io/v1", "kind": "Event",
		"metadata":  map[string]any{"name": "web-5d.1", "namespace": "shop", "uid": "e1", "resourceVersion": "42"},
		"regarding": map[string]any{"apiVersion": "apps/v1", "kind": "ReplicaSet", "namespace": "shop", "name": "web-5d", "uid": "rs1"},
		"reason":    "FailedCreate", "type": "Warning", "note": "exceeded quota", "reportingController": "replicaset-controller",
		"deprecatedCount": int64(3), "deprecatedFirstTimestamp": "2026-11-26T10:00:00Z", "deprecatedLastTimestamp": "2026-11-26T10:05:00Z",
	}}
	core := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Event",
		"metadata":       map[string]any{"name": "stuck.1", "namespace": "shop"},
		"involvedObject": map[string]any{"apiVersion": "v1", "kind": "Pod", "namespace": "shop", "name": "stuck"},
		"reason":         "FailedScheduling", "type": "Warning", "message": "0/3 nodes are available",
		"eventTime": "2026-11-26T10:00:00.123456Z", "series": map[string]any{"count": int64(7), "lastObservedTime": "2026-11-26T10:09:00.000000Z"},
		"reportingComponent": "default-scheduler",
	}}
	f, ok := Read(eventsAPI)
	if !ok || f.Regarding.Kind != "ReplicaSet" || f.Regarding.UID != "rs1" || f.Event.Message != "exceeded quota" || f.Event.Count != 3 ||
		f.Event.ReportingController != "replicaset-controller" || time.Time(f.Event.Last).Sub(time.Time(f.Event.First)) != 5*time.Minute || f.ResourceVersion != "42" {
		t.Errorf("events.k8s.io/v1: %+v", f)
	}
	f, ok = Read(core)
	if !ok || f.Regarding.Name != "stuck" || f.Event.Count != 7 || f.Event.ReportingController != "default-scheduler" ||
		time.Time(f.Event.Last).Sub(time.Time(f.Event.First)) != 9*time.Minute-123456*time.Microsecond {
		t.Errorf("core v1 with a series: %+v", f)
	}
}

func TestWithholdsAndBoundsMessages(t *testing.T) {
	event := func(kind, message string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"regarding": map[string]any{"apiVersion": "v1", "kind": kind, "name": "x"}, "reason": "R", "note": message}}
	}
	if f, _ := Read(event("Secret", "password=hunter2")); strings.Contains(f.Event.Message, "hunter2") {
		t.Errorf("an Event about a Secret kept its message: %q", f.Event.Message)
	}
	if f, _ := Read(event("ConfigMap", strings.Repeat("x", 5000))); len(f.Event.Message) > 1100 {
		t.Errorf("a message of %d bytes kept whole", len(f.Event.Message))
	}
	if _, ok := Read(&unstructured.Unstructured{Object: map[string]any{"reason": "R"}}); ok {
		t.Error("an Event about nothing was read")
	}
}

func TestScrubWithholdsAMessageAboutASecretBeforeCaching(t *testing.T) {
	for _, u := range []*unstructured.Unstructured{
		{Object: map[string]any{"regarding": map[string]any{"apiVersion": "v1", "kind": "Secret", "name": "db"}, "note": "password=hunter2"}},
		{Object: map[string]any{"involvedObject": map[string]any{"apiVersion": "v1", "kind": "Secret", "name": "db"}, "message": "password=hunter2"}},
	} {
		Scrub(u)
		if strings.Contains(fmt.Sprint(u.Object), "hunter2") {
			t.Errorf("scrubbed: %v", u.Object)
		}
	}
	other := &unstructured.Unstructured{Object: map[string]any{"regarding": map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}, "note": "kept"}}
	if Scrub(other); other.Object["note"] != "kept" {
		t.Errorf("an Event about a ConfigMap lost its note: %v", other.Object)
	}
}

// Core v1 bounds none of an Event's words (anyone who may create Events
// can write a 32 KiB reason); what is read is bounded as events.k8s.io
// bounds it, cut at a character and marked, on one line.
func TestBoundsWhatCoreV1DoesNot(t *testing.T) {
	huge := strings.Repeat("€", 14<<10) // 42 KiB, three bytes a character
	for _, tc := range []struct {
		name  string
		event map[string]any
	}{
		{"reason", map[string]any{"reason": huge}},
		{"type", map[string]any{"reason": "R", "type": huge}},
		{"reportingComponent", map[string]any{"reason": "R", "reportingComponent": huge}},
		{"source.component", map[string]any{"reason": "R", "source": map[string]any{"component": huge}}},
		{"message", map[string]any{"reason": "R", "message": huge}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.event["involvedObject"] = map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "shop", "name": "x"}
			f, ok := Read(&unstructured.Unstructured{Object: tc.event})
			if !ok {
				t.Fatal("not read")
			}
			e := f.Event
			for field, v := range map[string]string{"reason": e.Reason, "type": e.Type, "component": e.ReportingController, "message": e.Message} {
				if len(v) > 1100 || (field != "message" && len(v) > MaxReason+len(cutMarker)) {
					t.Errorf("%s kept %d bytes", field, len(v))
				}
				if !utf8.ValidString(v) || (len(v) > 100 && !strings.HasSuffix(v, cutMarker)) {
					t.Errorf("%s cut badly: …%q", field, v[max(0, len(v)-8):])
				}
			}
		})
	}
	f, _ := Read(&unstructured.Unstructured{Object: map[string]any{"reason": "Bad\x1b[2J\nReason",
		"involvedObject": map[string]any{"kind": "ConfigMap", "name": "x"}}})
	if strings.ContainsAny(f.Event.Reason, "\x1b\n") {
		t.Errorf("reason %q keeps control characters", f.Event.Reason)
	}
	for _, name := range []string{strings.Repeat("n", MaxRegardingName+1), "a\x00b"} {
		if _, ok := Read(&unstructured.Unstructured{Object: map[string]any{"reason": "R",
			"involvedObject": map[string]any{"kind": "ConfigMap", "name": name}}}); ok {
			t.Errorf("an Event about %q… was read: no object has that name", name[:min(len(name), 5)])
		}
	}
}
