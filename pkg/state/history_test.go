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

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/discovery"
	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/journal"
	"github.com/kubediff/kubediff/pkg/record"
)

var configMapType = discovery.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true}

// configMapTarget is a target key as the watcher names a cluster-wide
// ConfigMap watch.
const configMapTarget = "/v1, Resource=configmaps|||"

func keptUpdate(level string, at time.Time) journal.Entry {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": "ns", "name": "a"}, "data": map[string]any{"level": level}}}
	c := record.Change{Time: record.Timestamp(at), Type: record.Updated, APIVersion: "v1", Kind: "ConfigMap",
		Resource: "configmaps", Namespace: "ns", Name: "a", UID: "u1", ResourceVersion: level}
	return journal.Entry{Change: c, Resource: configMapType, Old: u, New: u}
}

// withHistory turns s's history on, an hour and a MiB of it.
func withHistory(t *testing.T, s *Store) *Store {
	t.Helper()
	if err := s.SetHistory(history.Policy{Retention: time.Hour, MaxBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	return s
}

// A record is written with its object's state, and read back while the
// store is open and, after it closes, from the state dir; while it is
// open, reading the dir says to ask the running kubediff.
func TestHistoryWrittenWithTheState(t *testing.T) {
	dir := t.TempDir()
	var logs bytes.Buffer
	s := openBound(t, dir, "c1", &logs)
	if err := s.SetHistory(history.Policy{Retention: time.Hour, MaxBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	s.Put(configMapTarget, "ns/steady", &journal.Object{UID: "u2", ResourceVersion: "1", Raw: []byte(`{"data":{"level":"steady"}}`)})
	s.Put(configMapTarget, "ns/a", &journal.Object{UID: "u1", ResourceVersion: "debug", Raw: []byte(`{"data":{"level":"debug"}}`)}, keptUpdate("debug", now))
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
	raw, err := r.At(change.NewObjectID("", "configmaps", "ns", "a"), now)
	var got map[string]any
	if err != nil || json.Unmarshal(raw, &got) != nil || got["data"].(map[string]any)["level"] != "debug" {
		t.Errorf("state at the record's time: %s, %v", raw, err)
	}
	// An object with no record: its stored state, found among the targets.
	if steady, err := r.At(change.NewObjectID("", "configmaps", "ns", "steady"), now); string(steady) != `{"data":{"level":"steady"}}` {
		t.Errorf("an object never changed: %s, %v", steady, err)
	}
	if none, err := r.At(change.NewObjectID("", "configmaps", "ns", "none"), now); !errors.Is(err, history.ErrNotFound) {
		t.Errorf("an object never stored: %s, %v", none, err)
	}
}

// A record whose state is noted is in the running kubediff's answers at
// once, not after the next second's write: a page opened just after
// kubediff printed a change shows it.
func TestHistoryAnswersWithWhatWasJustNoted(t *testing.T) {
	s := withHistory(t, openBound(t, t.TempDir(), "c1", &bytes.Buffer{}))
	s.Put(configMapTarget, "ns/a", &journal.Object{UID: "u1", ResourceVersion: "debug", Raw: []byte(`{"data":{"level":"debug"}}`)}, keptUpdate("debug", time.Now()))
	page, err := s.History().Records(history.Query{})
	if err != nil || len(page.Records) != 1 {
		t.Fatalf("just after the record was noted: %d records, %v", len(page.Records), err)
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

// The record of an update the pipeline held is written with the state
// released after it, not before; a state noted while held waits with its
// record for the release too.
func TestHeldRecordWaitsForItsRelease(t *testing.T) {
	s := withHistory(t, openBound(t, t.TempDir(), "c1", &bytes.Buffer{}))
	defer s.Close()
	ref := journal.Ref{Target: configMapTarget, Key: "ns/a"}
	s.Put(ref.Target, ref.Key, &journal.Object{UID: "u1", ResourceVersion: "1", Raw: []byte(`{"data":{"level":"one"}}`)})
	s.Hold(ref)
	s.Put(ref.Target, ref.Key, &journal.Object{UID: "u1", ResourceVersion: "2", Raw: []byte(`{"data":{"level":"two"}}`)})
	s.Put(ref.Target, ref.Key, &journal.Object{UID: "u1", ResourceVersion: "three", Raw: []byte(`{"data":{"level":"three"}}`)}, keptUpdate("three", time.Now()))
	count := func() int {
		t.Helper()
		if err := s.Flush(); err != nil {
			t.Fatal(err)
		}
		page, _ := s.History().Records(history.Query{})
		return len(page.Records)
	}
	if n := count(); n != 0 {
		t.Fatalf("%d records written while their state is held", n)
	}
	if rv := storedRV(t, s, ref.Target, ref.Key); rv != "1" {
		t.Fatalf("held object stored at %q, want the state before the held update (1)", rv)
	}
	s.Release(ref, keptUpdate("two", time.Now()))
	if n := count(); n != 2 {
		t.Fatalf("%d records written after the release, want the held one and the one noted while held", n)
	}
	if rv := storedRV(t, s, ref.Target, ref.Key); rv != "three" {
		t.Errorf("after the release stored at %q, want the newest state (three)", rv)
	}
}

// Records held together for one object each keep the state they lead
// to: identify held two writes of an object, and the history's state
// between them is the first write's, not the last one's (the held state
// released with both).
func TestHeldRecordsKeepTheirOwnStates(t *testing.T) {
	s := withHistory(t, openBound(t, t.TempDir(), "c1", &bytes.Buffer{}))
	defer s.Close()
	ref := journal.Ref{Target: configMapTarget, Key: "ns/a"}
	first := time.Now().Add(-time.Minute)
	s.Hold(ref)
	s.Hold(ref)
	s.Put(ref.Target, ref.Key, &journal.Object{UID: "u1", ResourceVersion: "two", Raw: []byte(`{"data":{"level":"two"}}`)})
	s.Put(ref.Target, ref.Key, &journal.Object{UID: "u1", ResourceVersion: "three", Raw: []byte(`{"data":{"level":"three"}}`)})
	s.Release(ref, keptUpdate("two", first))
	s.Release(ref, keptUpdate("three", first.Add(30*time.Second)))
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	raw, err := s.History().At(change.NewObjectID("", "configmaps", "ns", "a"), first.Add(time.Second))
	var got struct{ Data struct{ Level string } }
	if err != nil || json.Unmarshal(raw, &got) != nil || got.Data.Level != "two" {
		t.Errorf("state between the two held records: %s (%v), want level two", raw, err)
	}
}

// A record whose object's state never comes is written at the next flush
// all the same, without a timer: its object could not be stored, its type
// stopped being watched while the pipeline held it, or the hold Forget
// dropped was released. None is left behind once written.
func TestRecordsWhoseStateNeverComesAreWritten(t *testing.T) {
	ref := journal.Ref{Target: configMapTarget, Key: "ns/a"}
	record := keptUpdate("debug", time.Now())
	for name, end := range map[string]func(s *Store){
		"an object that cannot be stored": func(s *Store) { s.Unstored(ref.Target, ref.Key, record) },
		"a type no longer watched while held": func(s *Store) {
			s.Hold(ref)
			s.Put(ref.Target, ref.Key, &journal.Object{UID: "u1", ResourceVersion: "debug", Raw: []byte(`{}`)}, record)
			s.Forget(ref.Target)
		},
		"a hold dropped by Forget": func(s *Store) { s.Hold(ref); s.Forget(ref.Target); s.Release(ref, record) },
	} {
		t.Run(name, func(t *testing.T) {
			s := withHistory(t, openBound(t, t.TempDir(), "c1", &bytes.Buffer{}))
			end(s)
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
			if page, err := s.History().Records(history.Query{}); err != nil || len(page.Records) != 1 {
				t.Errorf("after the flush the history holds %d records (%v), want the one kept", len(page.Records), err)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if len(s.held) != 0 || len(s.kept) != 0 {
				t.Errorf("%d refs still held, %d records still kept after they were written", len(s.held), len(s.kept))
			}
		})
	}
}

// A type's first list whose write fails is written by the next flush,
// with the records it was reported with, in one transaction: neither is
// lost, and neither goes alone.
func TestAFailedFullWriteIsTriedAgainWithItsRecords(t *testing.T) {
	s := withHistory(t, openBound(t, t.TempDir(), "c1", &bytes.Buffer{}))
	defer s.Close()
	list := &failingOnce{List: objectsOf(map[string]*journal.Object{"ns/a": {UID: "u1", ResourceVersion: "debug", Raw: []byte(`{}`)}})}
	if err := s.WriteFull(configMapTarget, "rules-1", list, keptUpdate("debug", time.Now())); err == nil {
		t.Fatal("a full write with an empty key did not fail")
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	page, err := s.History().Records(history.Query{})
	if rv := storedRV(t, s, configMapTarget, "ns/a"); rv != "debug" || err != nil || len(page.Records) != 1 {
		t.Errorf("after the next flush: stored at %q, %d records (%v); want the list and its record", rv, len(page.Records), err)
	}
}

// failingOnce is a List whose first key is empty the first time it is
// read, which bbolt refuses.
type failingOnce struct {
	journal.List
	failed bool
}

func (l *failingOnce) Key(i int) string {
	if i == 0 && !l.failed {
		l.failed = true
		return ""
	}
	return l.List.Key(i)
}
