package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubediff/kubediff/pkg/discovery"
	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/record"
)

var configMapType = discovery.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true}

// configMapTarget is a target key as the watcher names a cluster-wide
// ConfigMap watch.
const configMapTarget = "/v1, Resource=configmaps|||"

func keptUpdate(level string, at time.Time) history.Entry {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": "ns", "name": "a"}, "data": map[string]any{"level": level}}}
	c := record.Change{Time: record.Timestamp(at), Type: record.Updated, APIVersion: "v1", Kind: "ConfigMap",
		Resource: "configmaps", Namespace: "ns", Name: "a", UID: "u1", ResourceVersion: level}
	return history.Entry{Change: c, Resource: configMapType, Old: u, New: u}
}

// A kept record is written by the flush that writes its object's state,
// and read back while the store is open and, after it closes, from the
// state dir; while it is open, reading the dir says to ask the running
// kubediff.
func TestHistoryWrittenWithTheState(t *testing.T) {
	dir := t.TempDir()
	var logs bytes.Buffer
	s := openBound(t, dir, "c1", &logs)
	if err := s.SetHistory(history.Policy{Retention: time.Hour, MaxBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	s.Keep(keptUpdate("debug", now))
	s.Put(configMapTarget, "ns/a", &Object{UID: "u1", ResourceVersion: "debug", Raw: []byte(`{"data":{"level":"debug"}}`)})
	s.Put(configMapTarget, "ns/steady", &Object{UID: "u2", ResourceVersion: "1", Raw: []byte(`{"data":{"level":"steady"}}`)})
	if page, _ := s.History().Records(history.Query{}); len(page.Records) != 0 {
		t.Fatal("a record is readable before the flush that writes its state")
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	page, err := s.History().Records(history.Query{})
	if err != nil || len(page.Records) != 1 {
		t.Fatalf("after the flush: %d records, %v", len(page.Records), err)
	}
	if _, _, err := OpenHistory(dir); err == nil || !strings.Contains(err.Error(), "--server") {
		t.Errorf("reading the dir of a running kubediff: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	r, closeDB, err := OpenHistory(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer closeDB()
	raw, err := r.At(history.NewObjectID("", "configmaps", "ns", "a"), now)
	var got map[string]any
	if err != nil || json.Unmarshal(raw, &got) != nil || got["data"].(map[string]any)["level"] != "debug" {
		t.Errorf("state at the record's time: %s, %v", raw, err)
	}
	// An object with no record: its stored state, found among the targets.
	if steady, err := r.At(history.NewObjectID("", "configmaps", "ns", "steady"), now); string(steady) != `{"data":{"level":"steady"}}` {
		t.Errorf("an object never changed: %s, %v", steady, err)
	}
	if none, err := r.At(history.NewObjectID("", "configmaps", "ns", "none"), now); !errors.Is(err, history.ErrNotFound) {
		t.Errorf("an object never stored: %s, %v", none, err)
	}
}

// The cluster's current state answers for an object never changed, by
// its type's target whatever the version or namespace scope.
func TestTargetOf(t *testing.T) {
	for target, want := range map[string]bool{
		"/v1, Resource=configmaps|||":          true,
		"/v1, Resource=configmaps|ns||":        true,
		"apps/v1, Resource=configmaps|||":      false,
		"/v1, Resource=configmapsx|||":         false,
		"example.com/v1, Resource=configmaps|": false,
	} {
		if got := targetOf(target, "", "configmaps"); got != want {
			t.Errorf("targetOf(%q) = %v", target, got)
		}
	}
}
