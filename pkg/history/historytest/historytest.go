// Package historytest is the conformance suite of history stores: the
// same questions, with the same answers, asked of every store that keeps
// kubediff's history (the state dir's bbolt, PostgreSQL, any later one),
// through the read interface the query layer uses (historyapi.Store).
// A store's test gives Run a Harness: how entries reach it, as the state
// dir's flush hands them over, and its reader.
package historytest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/history/historyapi"
	"github.com/kubediff/kubediff/pkg/journal"
	"github.com/kubediff/kubediff/pkg/record"
)

// Harness is one store under test.
type Harness struct {
	// Write keeps entries as one flush of the state dir, at now.
	Write func(t *testing.T, now time.Time, entries ...journal.Entry)
	// Trim drops what a retention no longer keeps, at now.
	Trim func(t *testing.T, retention time.Duration, now time.Time)
	// Store reads what was written.
	Store historyapi.Store
}

// Run runs every conformance test against fresh harnesses open makes.
func Run(t *testing.T, open func(t *testing.T) Harness) {
	for _, c := range []struct {
		name string
		test func(*testing.T, Harness)
	}{
		{"RecordsInOrderEachOnce", recordsInOrderEachOnce},
		{"AtBetweenAndAtRecords", atBetweenAndAtRecords},
		{"PagesAndCursors", pagesAndCursors},
		{"BadWindowsAndTokens", badWindowsAndTokens},
		{"FiltersByNamespaceUserAndType", filters},
		{"DriftAndItsPutBack", driftAndPutBack},
		{"VisibilityPerNamespace", visibilityPerNamespace},
		{"EventsFoldedAndListedUnderOwners", eventsFolded},
		{"StepsAndBlame", stepsAndBlame},
		{"RestoreManifest", restoreManifest},
		{"QuietStatesAreStatesNotRecords", quietStates},
		{"TypesResolveByKubectlNames", typesResolve},
		{"LongNamesAndReasons", longNames},
		{"RetentionKeepsStatesKnown", retentionKeepsStatesKnown},
	} {
		t.Run(c.name, func(t *testing.T) { c.test(t, open(t)) })
	}
}

// T0 is when the suite's histories begin.
var T0 = time.Date(2026, 11, 23, 14, 0, 0, 0, time.UTC)

var (
	configMaps  = change.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true, Singular: "configmap", ShortNames: []string{"cm"}}
	replicaSets = change.Resource{GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}, Kind: "ReplicaSet", Namespaced: true, Singular: "replicaset", ShortNames: []string{"rs"}}
	webID       = change.NewObjectID("apps", "deployments", "shop", "web")
)

func minute(m float64) time.Time { return T0.Add(time.Duration(m * float64(time.Minute))) }

// ConfigMap is ConfigMap ns/name with data.level = level.
func ConfigMap(ns, name, level string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetUID(types.UID("uid-" + ns + "-" + name))
	_ = unstructured.SetNestedField(u.Object, level, "data", "level")
	return u
}

// Entry is the record and entry of ConfigMap ns/name going from old to
// new ("": none) at T0+m minutes, made by user ("": unknown).
func Entry(ns, name, old, new string, m float64, user string) journal.Entry {
	c := record.Change{Time: record.Timestamp(minute(m)), APIVersion: "v1", Kind: "ConfigMap", Resource: "configmaps",
		Namespace: ns, Name: name, UID: "uid-" + ns + "-" + name, ResourceVersion: fmt.Sprint(int(m * 1000))}
	e := journal.Entry{Resource: configMaps}
	switch {
	case old == "":
		c.Type = record.Added
	case new == "":
		c.Type = record.Deleted
	default:
		c.Type = record.Updated
		c.Changes = []record.FieldChange{{Op: record.OpReplace, Path: "/data/level", Field: "data.level", From: old, To: new}}
	}
	if user != "" {
		c.User = &record.User{Name: user}
	}
	if old != "" {
		e.Old = ConfigMap(ns, name, old)
	}
	if new != "" {
		e.New = ConfigMap(ns, name, new)
	}
	c.ID = c.StableID()
	e.Change = c
	return e
}

// Event is a Warning event about ReplicaSet shop/web-1 (owned by
// Deployment shop/web) of Event object name, counted count, last at
// T0+second.
func Event(name, reason string, count, second int) journal.Entry {
	at := record.Timestamp(T0.Add(time.Duration(second) * time.Second))
	c := record.Change{Time: at, Type: record.EventRecord, APIVersion: "apps/v1", Kind: "ReplicaSet", Resource: "replicasets",
		Namespace: "shop", Name: "web-1", UID: "uid-rs", ResourceVersion: fmt.Sprint(100 + second),
		Event: &record.Event{Reason: reason, Type: record.EventWarning, Message: "exceeded quota", Count: count, First: record.Timestamp(T0), Last: at, Name: name, Namespace: "shop"}}
	c.ID = c.StableID()
	return journal.Entry{Change: c, Resource: replicaSets, Owners: []change.ObjectID{webID}}
}

// changes reads a page's records.
func changes(t *testing.T, page history.Page) []record.Change {
	t.Helper()
	out := make([]record.Change, len(page.Records))
	for i, raw := range page.Records {
		if err := json.Unmarshal(raw, &out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func records(t *testing.T, h Harness, q history.Query) []record.Change {
	t.Helper()
	page, err := h.Store.Records(q)
	if err != nil {
		t.Fatal(err)
	}
	return changes(t, page)
}

// ids are the records' ids, in order.
func ids(cs []record.Change) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

// levelAt is data.level of the object's state at t, or the error.
func levelAt(t *testing.T, h Harness, id change.ObjectID, at time.Time) (string, error) {
	t.Helper()
	raw, err := h.Store.At(id, at)
	if err != nil {
		return "", err
	}
	var u unstructured.Unstructured
	if err := json.Unmarshal(raw, &u.Object); err != nil {
		t.Fatal(err)
	}
	level, _, _ := unstructured.NestedString(u.Object, "data", "level")
	return level, nil
}

func cmID(ns, name string) change.ObjectID { return change.NewObjectID("", "configmaps", ns, name) }

// write keeps a small history: settings in default made at 1, changed at
// 2 (by alice) and 3 (by bob), deleted at 5; settings in other made at 4.
func writeStory(t *testing.T, h Harness) {
	h.Write(t, T0)
	h.Write(t, minute(1), Entry("default", "settings", "", "1", 1, ""), Entry("default", "settings", "1", "2", 2, "alice"))
	h.Write(t, minute(3), Entry("default", "settings", "2", "3", 3, "bob"))
	h.Write(t, minute(4), Entry("other", "settings", "", "a", 4, "alice"), Entry("default", "settings", "3", "", 5, "bob"))
}

func recordsInOrderEachOnce(t *testing.T, h Harness) {
	writeStory(t, h)
	got := records(t, h, history.Query{})
	want := []string{"uid-default-settings/1000/added", "uid-default-settings/2000/updated", "uid-default-settings/3000/updated",
		"uid-other-settings/4000/added", "uid-default-settings/5000/deleted"}
	if !slices.Equal(ids(got), want) {
		t.Fatalf("records %v, want %v", ids(got), want)
	}
	page, _ := h.Store.Records(history.Query{})
	if page.Begin == nil || !page.Begin.Equal(T0) {
		t.Errorf("begin %v, want %v", page.Begin, T0)
	}
	window := records(t, h, history.Query{From: minute(2), Until: minute(4)})
	if !slices.Equal(ids(window), want[1:4]) {
		t.Errorf("window 2..4: %v, want %v", ids(window), want[1:4])
	}
}

func atBetweenAndAtRecords(t *testing.T, h Harness) {
	writeStory(t, h)
	id := cmID("default", "settings")
	for _, c := range []struct {
		at   float64
		want string
		err  error
	}{{0.5, "", history.ErrNotFound}, {1, "1", nil}, {1.5, "1", nil}, {2, "2", nil}, {3.9, "3", nil}, {5, "", history.ErrNotFound}, {60, "", history.ErrNotFound}} {
		got, err := levelAt(t, h, id, minute(c.at))
		if got != c.want || !errors.Is(err, c.err) && !(err == nil && c.err == nil) {
			t.Errorf("at minute %v: %q, %v; want %q, %v", c.at, got, err, c.want, c.err)
		}
	}
	if _, err := h.Store.At(id, T0.Add(-time.Hour)); !errors.Is(err, history.ErrBeforeHistory) {
		t.Errorf("an hour before the history: %v, want ErrBeforeHistory", err)
	}
	if got, err := levelAt(t, h, cmID("other", "settings"), minute(4)); got != "a" || err != nil {
		t.Errorf("other/settings at 4: %q, %v", got, err)
	}
}

func pagesAndCursors(t *testing.T, h Harness) {
	writeStory(t, h)
	all := ids(records(t, h, history.Query{}))
	var paged []string
	q := history.Query{Limit: 2}
	for range 10 {
		page, err := h.Store.Records(q)
		if err != nil {
			t.Fatal(err)
		}
		paged = append(paged, ids(changes(t, page))...)
		if page.Next == "" {
			break
		}
		q.After = page.Next
	}
	if !slices.Equal(paged, all) {
		t.Fatalf("paged by 2: %v, want %v", paged, all)
	}
	// A token of a page taken before more was written goes on from there.
	first, _ := h.Store.Records(history.Query{Limit: 4})
	h.Write(t, minute(6), Entry("other", "settings", "a", "b", 6, ""))
	rest := records(t, h, history.Query{After: first.Next})
	if len(rest) != 2 || rest[1].ResourceVersion != "6000" {
		t.Errorf("after the 4th record: %v", ids(rest))
	}
}

func badWindowsAndTokens(t *testing.T, h Harness) {
	writeStory(t, h)
	if got := records(t, h, history.Query{From: minute(4.5), Until: minute(1)}); len(got) != 0 {
		t.Errorf("a window ending before it starts listed %v", ids(got))
	}
	if _, err := h.Store.Records(history.Query{After: "not-a-token"}); !errors.Is(err, history.ErrBadPageToken) {
		t.Errorf("bad token: %v, want ErrBadPageToken", err)
	}
	if got := records(t, h, history.Query{From: minute(90)}); len(got) != 0 {
		t.Errorf("a window after everything listed %v", ids(got))
	}
}

func filters(t *testing.T, h Harness) {
	writeStory(t, h)
	for _, c := range []struct {
		name string
		q    history.Query
		want int
	}{
		{"namespace other", history.Query{Namespace: "other"}, 1},
		{"by alice", history.Query{User: "alice"}, 2},
		{"by nobody named", history.Query{User: "carol"}, 0},
		{"one object", history.Query{Namespace: "default", Select: []history.Selector{{Resource: "configmaps", Name: "settings"}}}, 4},
		{"another type", history.Query{Select: []history.Selector{{Group: "apps", Resource: "deployments"}}}, 0},
	} {
		if got := records(t, h, c.q); len(got) != c.want {
			t.Errorf("%s: %d records (%v), want %d", c.name, len(got), ids(got), c.want)
		}
	}
}

// Drifted is e made outside the GitOps owner (via outside), or by it
// (via sync) putting back the drift that reverts ("": none) started.
func Drifted(e journal.Entry, via, reverts string) journal.Entry {
	e.Change.GitOps = &record.GitOps{Via: via, Tool: record.ToolArgoCD, Kind: "Application", Namespace: "argocd", Name: "shop", Reverts: reverts}
	if via == record.ViaOutside {
		e.Change.GitOps.Drift = []record.DriftedField{{Path: "/data/level", Field: "data.level", Declared: "1", Before: "1", Now: "2"}}
	}
	return e
}

// driftAndPutBack: a drift query lists the outside change and the sync
// that put it back, not the owner's other writes nor changes of objects
// no GitOps tool owns.
func driftAndPutBack(t *testing.T, h Harness) {
	h.Write(t, T0)
	sync := Drifted(Entry("default", "settings", "", "1", 1, ""), record.ViaSync, "")
	outside := Drifted(Entry("default", "settings", "1", "2", 2, "alice"), record.ViaOutside, "")
	back := Drifted(Entry("default", "settings", "2", "1", 3, ""), record.ViaSync, outside.Change.ID)
	h.Write(t, minute(3), sync, outside, back, Entry("other", "plain", "", "a", 4, "alice"))
	got := records(t, h, history.Query{Drift: true})
	if want := []string{outside.Change.ID, back.Change.ID}; !slices.Equal(ids(got), want) {
		t.Errorf("drift: %v, want the outside change and its put-back %v", ids(got), want)
	}
	if got := records(t, h, history.Query{Drift: true, User: "alice"}); len(got) != 1 || got[0].GitOps.Via != record.ViaOutside {
		t.Errorf("drift by alice: %v, want the outside change alone", ids(got))
	}
}

func visibilityPerNamespace(t *testing.T, h Harness) {
	writeStory(t, h)
	var g history.Grants
	g.Grant(history.Scope{Resource: "configmaps", Namespace: "other"})
	got := records(t, h, history.Query{Visible: &g})
	if len(got) != 1 || got[0].Namespace != "other" {
		t.Errorf("granted other only: %v", ids(got))
	}
	scopes, err := h.Store.Scopes(history.Query{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []history.Scope{{Resource: "configmaps", Namespace: "default"}, {Resource: "configmaps", Namespace: "other"}} {
		if !slices.Contains(scopes, want) {
			t.Errorf("scopes %v lack %v", scopes, want)
		}
	}
	if scoped, _ := h.Store.Scopes(history.Query{Namespace: "other"}); len(scoped) != 1 {
		t.Errorf("scopes in other: %v, want configmaps in other only", scoped)
	}
}

func eventsFolded(t *testing.T, h Harness) {
	h.Write(t, T0)
	h.Write(t, minute(0.1), Event("a", "FailedCreate", 1, 10), Event("a", "FailedCreate", 2, 20))
	h.Write(t, minute(0.5), Event("a", "FailedCreate", 3, 30), Event("b", "FailedCreate", 2, 40), Event("c", "Scaled", 1, 50))
	got := records(t, h, history.Query{})
	if len(got) != 2 || got[0].Event.Reason != "FailedCreate" || got[0].Event.Count != 5 || got[1].Event.Reason != "Scaled" {
		t.Fatalf("events not folded per object and reason: %+v", got)
	}
	under := records(t, h, history.Query{Namespace: "shop", Select: []history.Selector{{Group: "apps", Resource: "deployments", Name: "web"}}})
	if len(under) != 2 {
		t.Errorf("the Deployment's history lists %d of its ReplicaSet's events, want 2", len(under))
	}
	if none := records(t, h, history.Query{Events: history.EventsNone}); len(none) != 0 {
		t.Errorf("events none listed %d", len(none))
	}
	var g history.Grants
	g.Grant(history.Scope{Group: "apps", Resource: "replicasets", Namespace: "shop"})
	if hidden := records(t, h, history.Query{Visible: &g}); len(hidden) != 0 {
		t.Errorf("events listed to a caller who may not list Events: %d", len(hidden))
	}
	scopes, _ := h.Store.Scopes(history.Query{Namespace: "shop", Select: []history.Selector{{Group: "apps", Resource: "deployments", Name: "web"}}})
	if !slices.Contains(scopes, history.EventsScope("shop")) || !slices.Contains(scopes, history.Scope{Group: "apps", Resource: "replicasets", Namespace: "shop"}) {
		t.Errorf("scopes of the Deployment's history: %v", scopes)
	}
}

func stepsAndBlame(t *testing.T, h Harness) {
	writeStory(t, h)
	id := cmID("default", "settings")
	steps, err := h.Store.Steps(id, minute(3), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps.Steps) != 3 || !steps.Complete || !steps.Steps[0].Time.Equal(minute(3)) {
		t.Fatalf("steps up to 3: %d, complete %v", len(steps.Steps), steps.Complete)
	}
	if state, _ := steps.Steps[1].StateJSON(); !json.Valid(state) {
		t.Errorf("a step's state is not JSON: %q", state)
	}
	if short, _ := h.Store.Steps(id, minute(3), 2); len(short.Steps) != 2 || short.Complete {
		t.Errorf("two of three steps: %d, complete %v", len(short.Steps), short.Complete)
	}
	b, err := historyapi.Local{Reader: h.Store}.Blame(context.Background(), id, minute(3), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range b.Lines {
		if l.Field == "data.level" && l.Record != "uid-default-settings/3000/updated" {
			t.Errorf("data.level blamed on %q, want bob's change at 3", l.Record)
		}
	}
}

func restoreManifest(t *testing.T, h Harness) {
	writeStory(t, h)
	m, err := historyapi.Local{Reader: h.Store}.Restore(context.Background(), cmID("default", "settings"), minute(4))
	if err != nil {
		t.Fatal(err)
	}
	level, _, _ := unstructured.NestedString(m.Object, "data", "level")
	if level != "3" || m.Object["metadata"].(map[string]any)["uid"] != nil {
		t.Errorf("restore of the deleted ConfigMap as at 4: %v", m.Object)
	}
}

func quietStates(t *testing.T, h Harness) {
	h.Write(t, T0)
	quiet := Entry("default", "settings", "1", "2", 2, "")
	quiet.StateOnly = true
	h.Write(t, minute(1), Entry("default", "settings", "", "1", 1, ""), quiet)
	if got := records(t, h, history.Query{}); len(got) != 1 {
		t.Errorf("a quiet state listed as a record: %v", ids(got))
	}
	if level, err := levelAt(t, h, cmID("default", "settings"), minute(2.5)); level != "2" || err != nil {
		t.Errorf("state after a quiet change: %q, %v", level, err)
	}
}

func typesResolve(t *testing.T, h Harness) {
	writeStory(t, h)
	for _, name := range []string{"cm", "configmaps", "ConfigMap", ""} {
		got, err := h.Store.Resolve(name)
		if err != nil || len(got) != 1 || got[0].GVR.Resource != "configmaps" {
			t.Errorf("resolve %q: %v, %v", name, got, err)
		}
	}
}

func longNames(t *testing.T, h Harness) {
	h.Write(t, T0)
	long := fmt.Sprintf("%0900d", 7)
	h.Write(t, minute(1), Entry("default", long, "", "1", 1, ""), Entry("default", long, "1", "2", 2, ""))
	q := history.Query{Namespace: "default", Select: []history.Selector{{Resource: "configmaps", Name: long}}}
	if got := records(t, h, q); len(got) != 2 || got[0].Name != long {
		t.Errorf("records of an object with a 900-byte name: %d", len(got))
	}
	if level, err := levelAt(t, h, cmID("default", long), minute(1.5)); level != "1" || err != nil {
		t.Errorf("state of the long-named object: %q, %v", level, err)
	}
}

// Keep is a policy that keeps everything the suite writes.
var Keep = history.Policy{Retention: 365 * 24 * time.Hour, MaxBytes: 1 << 40}

// day is T0 moved by days.
func day(days int) time.Time { return T0.AddDate(0, 0, days) }

func retentionKeepsStatesKnown(t *testing.T, h Harness) {
	h.Write(t, day(-4))
	m := func(d int) float64 { return day(d).Sub(T0).Minutes() }
	// a: made 3 days ago, changed 2 days ago and today; b: made 3 days
	// ago and never changed since; c: made and deleted 3 days ago.
	h.Write(t, day(-3), Entry("default", "a", "", "1", m(-3), ""), Entry("default", "b", "", "x", m(-3), ""),
		Entry("default", "c", "", "1", m(-3), ""), Entry("default", "c", "1", "", m(-3)+1, ""))
	h.Write(t, day(-2), Entry("default", "a", "1", "2", m(-2), ""))
	h.Write(t, T0, Entry("default", "a", "2", "3", 0, ""))
	// 60 hours: the records of 3 days ago go, those of 2 days ago stay.
	h.Trim(t, 60*time.Hour, T0)
	got := records(t, h, history.Query{})
	if len(got) != 2 || got[0].ResourceVersion != fmt.Sprint(int(m(-2)*1000)) {
		t.Fatalf("after retention: %v, want a's changes of 2 days ago and today", ids(got))
	}
	page, _ := h.Store.Records(history.Query{})
	if page.Begin == nil || !page.Begin.After(day(-3)) {
		t.Errorf("the history still begins at %v", page.Begin)
	}
	for _, c := range []struct {
		name string
		at   time.Time
		want string
		err  error
	}{{"a", day(-2).Add(-time.Minute), "1", nil}, {"a", day(-1), "2", nil}, {"b", day(-1), "x", nil}, {"c", day(-1), "", history.ErrNotFound}} {
		level, err := levelAt(t, h, cmID("default", c.name), c.at)
		if level != c.want || !errors.Is(err, c.err) && !(err == nil && c.err == nil) {
			t.Errorf("%s at %s after retention: %q, %v; want %q, %v", c.name, c.at, level, err, c.want, c.err)
		}
	}
	if _, err := h.Store.At(cmID("default", "a"), day(-3).Add(30*time.Second)); !errors.Is(err, history.ErrBeforeHistory) {
		t.Errorf("a moment retention dropped: %v, want ErrBeforeHistory", err)
	}
}
