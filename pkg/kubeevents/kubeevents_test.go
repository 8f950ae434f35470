package kubeevents

import (
	"fmt"
	"strings"
	"testing"
	"time"

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
