package pipeline

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/diff"
	"github.com/kubediff/kubediff/pkg/discovery"
	"github.com/kubediff/kubediff/pkg/identity"
	"github.com/kubediff/kubediff/pkg/journal"
	"github.com/kubediff/kubediff/pkg/record"
	"github.com/kubediff/kubediff/pkg/watcher"
)

var replicaSets = discovery.Resource{GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}, Kind: "ReplicaSet", Namespaced: true}

func replicaSet(uid string, rv int, replicas int64) *unstructured.Unstructured {
	return replicaSetOf("web", uid, rv, replicas)
}

// replicaSetOf is Deployment deployment's ReplicaSet deployment-uid.
func replicaSetOf(deployment, uid string, rv int, replicas int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "ReplicaSet",
		"metadata": map[string]any{"name": deployment + "-" + uid, "namespace": "day", "uid": uid, "resourceVersion": fmt.Sprint(rv),
			"ownerReferences": []any{map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": deployment, "uid": "d-" + deployment, "controller": true}}},
		"spec": map[string]any{"replicas": replicas},
	}}
}

// step is one update of a ReplicaSet's replicas, as the pipeline sees it.
type stepper struct {
	t      *testing.T
	differ *diff.Differ
	co     *coalescer
	rv     int
}

func (s *stepper) scale(uid string, from, to int64) {
	s.rv++
	ev := watcher.Event{Event: change.Event{Type: change.Updated, Resource: replicaSets, Old: replicaSet(uid, s.rv, from), New: replicaSet(uid, s.rv+1, to)}}
	c, ok := s.differ.Diff(ev.Event)
	if !ok {
		s.t.Fatalf("no record for %s %d → %d", uid, from, to)
	}
	s.co.add(ev, c)
}

type emitted struct {
	mu  sync.Mutex
	got []string
}

func (e *emitted) emit(_ watcher.Event, c record.Change, _ []identity.Hop) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := c.Type + " " + c.Name
	for _, fc := range c.Changes {
		s += fmt.Sprintf(" %s %v→%v", fc.Field, fc.From, fc.To)
	}
	e.got = append(e.got, s)
}

// keepState notes a state kept without a record as "state NAME".
func (e *emitted) keepState(_ watcher.Event, c record.Change) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, "state "+c.Name)
}

func (e *emitted) list() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.got...)
}

func newStepper(t *testing.T) (*stepper, *emitted) {
	d, err := diff.New(diff.Options{Rules: diff.Rules{Defaults: diff.AllDefaults}})
	if err != nil {
		t.Fatal(err)
	}
	out := &emitted{}
	return &stepper{t: t, differ: d, co: newCoalescer(d, out, nil)}, out
}

func TestCoalescerJoinsAControllersSteps(t *testing.T) {
	s, out := newStepper(t)
	now := time.Unix(0, 0)
	s.co.now = func() time.Time { return now }
	s.scale("new", 0, 3) // a rollout's steps on two ReplicaSets
	s.scale("old", 10, 8)
	s.co.add(watcher.Event{}, record.Change{Type: record.Updated, Kind: "ConfigMap", Name: "cm", UID: "cm-1",
		Changes: []record.FieldChange{{Path: "/data/k"}}}) // a person's change: passes at once
	now = now.Add(500 * time.Millisecond)
	s.scale("new", 3, 5)
	s.scale("old", 8, 5)
	s.scale("bounce", 2, 3) // and back: says nothing
	s.scale("bounce", 3, 2)
	if got := out.list(); len(got) != 1 || got[0] != "updated cm  <nil>→<nil>" {
		t.Fatalf("before the quiet period, emitted %v; want only the person's change", got)
	}
	now = now.Add(coalesceQuiet)
	s.co.flush(func(h *heldUpdate) bool { return now.Sub(h.last) >= coalesceQuiet })
	want := []string{"updated cm  <nil>→<nil>", "updated web-new spec.replicas 0→5", "updated web-old spec.replicas 10→5"}
	if got := out.list(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("emitted %v, want %v", got, want)
	}
}

func TestCoalescerKeepsEachObjectsOrder(t *testing.T) {
	s, out := newStepper(t)
	s.scale("rs", 3, 2)
	s.co.add(watcher.Event{}, record.Change{Type: record.Deleted, Kind: "ReplicaSet", Name: "web-rs", UID: "rs"})
	want := []string{"updated web-rs spec.replicas 3→2", "deleted web-rs"}
	if got := out.list(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("emitted %v, want the held update before the deletion: %v", got, want)
	}
}

// A steadily changing object is still reported: nothing is held longer
// than coalesceMax, and stopping releases everything.
func TestCoalescerHoldsNothingForLong(t *testing.T) {
	s, out := newStepper(t)
	now := time.Unix(0, 0)
	var mu sync.Mutex
	s.co.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.co.run(ctx); close(done) }()
	for i := int64(0); i*int64(time.Second) < int64(coalesceMax)+int64(time.Second); i++ {
		s.scale("busy", i, i+1) // never quiet for coalesceQuiet
		advance(time.Second)
	}
	testEventually(t, func() bool { return len(out.list()) > 0 })
	s.scale("late", 1, 2)
	cancel()
	<-done
	if got := out.list(); got[len(got)-1] != "updated web-late spec.replicas 1→2" {
		t.Fatalf("stopping did not release the held update: %v", got)
	}
	s.scale("after", 1, 2)
	if got := out.list(); got[len(got)-1] != "updated web-after spec.replicas 1→2" {
		t.Fatal("after stopping, records must pass straight on")
	}
}

func testEventually(t *testing.T, ok func() bool) {
	t.Helper()
	end := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(end) {
			t.Fatal("timed out")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type recordedHolds struct{ calls []string }

func (h *recordedHolds) Hold(r journal.Ref) { h.calls = append(h.calls, "hold "+r.Key) }
func (h *recordedHolds) Release(r journal.Ref, records ...journal.Entry) {
	h.calls = append(h.calls, fmt.Sprintf("release %s with %d", r.Key, len(records)))
}

// TestCoalescerHoldsTheStoredStateWithTheUpdate: the stored state is held
// from the first held update until its record is emitted.
func TestCoalescerHoldsTheStoredStateWithTheUpdate(t *testing.T) {
	s, out := newStepper(t)
	holds := &recordedHolds{}
	s.co.holds = holds
	ref := journal.Ref{Target: "apps/v1/replicasets", Key: "day/web-rs"}
	for _, step := range [][2]int64{{3, 2}, {2, 1}} {
		s.rv++
		ev := watcher.Event{Event: change.Event{Type: change.Updated, Resource: replicaSets, Old: replicaSet("rs", s.rv, step[0]), New: replicaSet("rs", s.rv+1, step[1])}, Note: &journal.Note{Ref: ref}}
		c, _ := s.differ.Diff(ev.Event)
		s.co.add(ev, c)
		holds.calls = append(holds.calls, fmt.Sprintf("emitted %d", len(out.list())))
	}
	s.co.flush(func(*heldUpdate) bool { return true })
	want := "[hold day/web-rs emitted 0 emitted 0 release day/web-rs with 0]"
	if got := fmt.Sprint(holds.calls); got != want {
		t.Fatalf("holds %s, want %s", got, want)
	}
	if got := out.list(); len(got) != 1 {
		t.Fatalf("emitted %v, want one joined record", got)
	}
}

// stalling is an emitter whose emits of one object wait for a gate: a
// sink that stopped reading, while the coalescer releases that object.
type stalling struct {
	emitted
	slow    string
	gate    chan struct{}
	waiting chan struct{} // closed when the slow emit is waiting
}

func (s *stalling) emit(ev watcher.Event, c record.Change, hops []identity.Hop) {
	if c.Name == s.slow && c.Type == record.Updated {
		close(s.waiting)
		<-s.gate
	}
	s.emitted.emit(ev, c, hops)
}

// While one object's release waits on a slow sink, other objects' records
// still go through (the lock guards only the held updates, not diffing
// and dispatch), and a later record of the waiting object goes on only
// after it, in order.
func TestCoalescerReleaseOutsideItsLock(t *testing.T) {
	s, _ := newStepper(t)
	out := &stalling{slow: "web-slow", gate: make(chan struct{}), waiting: make(chan struct{})}
	s.co.next = out
	s.scale("slow", 3, 2)
	released := make(chan struct{})
	go func() { s.co.flush(func(*heldUpdate) bool { return true }); close(released) }()
	<-out.waiting

	other := make(chan struct{})
	go func() {
		s.co.add(watcher.Event{}, record.Change{Type: record.Updated, Kind: "ConfigMap", Name: "cm", UID: "cm-1"})
		close(other)
	}()
	select {
	case <-other:
	case <-time.After(30 * time.Second):
		t.Fatal("another object's record waited for a slow release")
	}
	same := make(chan struct{})
	go func() {
		s.co.add(watcher.Event{}, record.Change{Type: record.Deleted, Kind: "ReplicaSet", Name: "web-slow", UID: "slow"})
		close(same)
	}()
	close(out.gate)
	<-released
	<-same
	if got := fmt.Sprint(out.list()); got != "[updated cm updated web-slow spec.replicas 3→2 deleted web-slow]" {
		t.Errorf("emitted %s; want the ConfigMap's at once, then the slow object's records in order", got)
	}
}

// deployment is a Deployment of 10 replicas whose controller reports
// ready of them, Available as available says, and more conditions.
func deployment(rv int, ready int64, available string, more ...any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "day", "uid": "d", "generation": int64(1), "resourceVersion": fmt.Sprint(rv)},
		"spec":     map[string]any{"replicas": int64(10)},
		"status": map[string]any{"observedGeneration": int64(1), "replicas": int64(10), "updatedReplicas": int64(10),
			"availableReplicas": ready, "conditions": append([]any{map[string]any{"type": "Available", "status": available}}, more...)},
	}}
}

// A new Deployment's conditions come at the pace its Pods become ready,
// which a loaded machine stretches past coalesceQuiet: while its rollout
// is under way, its own status waits (up to coalesceMax), so "Available
// False, then True" 9 s later is one record, not two; once it has rolled
// out, the quiet period applies again. An owned object (a ReplicaSet
// under way) keeps the quiet period: the fold waits for its burst.
func TestCoalescerWaitsOutAWorkloadsRollout(t *testing.T) {
	s, out := newStepper(t)
	now := time.Unix(0, 0)
	s.co.now = func() time.Time { return now }
	update := func(old, new *unstructured.Unstructured) {
		ev := watcher.Event{Event: change.Event{Type: change.Updated, Resource: deployments, Old: old, New: new}}
		c, ok := s.differ.Diff(ev.Event)
		if !ok {
			t.Fatalf("no record for the Deployment's status: %+v", c)
		}
		s.co.add(ev, c)
	}
	at := func(d time.Duration, want int) {
		t.Helper()
		now = now.Add(d)
		s.co.flush(func(h *heldUpdate) bool { return h.due(now) })
		if got := out.list(); len(got) != want {
			t.Fatalf("%d records emitted, want %d: %v", len(got), want, got)
		}
	}
	created := deployment(1, 0, "")
	created.Object["status"] = map[string]any{} // as the API server creates it
	update(created, deployment(2, 0, "False"))
	at(9*time.Second, 0) // quiet for 9 s, but under way: held
	update(deployment(2, 0, "False"), deployment(3, 10, "True"))
	at(3*time.Second, 1) // 12 s since the first: one record of both
	if got := out.list()[0]; !strings.Contains(got, "True") || strings.Contains(got, "False") {
		t.Fatalf("the record is not the status before against after: %s", got)
	}

	update(deployment(3, 10, "True"), deployment(4, 9, "False")) // a Pod lost
	at(2*time.Second, 1)
	progressed := map[string]any{"type": "Progressing", "status": "True"}
	update(deployment(4, 9, "False"), deployment(5, 10, "True", progressed)) // rolled out again
	at(coalesceQuiet, 2)                                                     // quiet, 10 s after the first: released

	update(deployment(5, 10, "True", progressed), deployment(6, 9, "False", progressed)) // under way for good
	at(coalesceMax-time.Second, 2)
	at(time.Second, 3)

	s.scale("rs", 3, 2) // an owned ReplicaSet, under way: the quiet period
	at(coalesceQuiet, 4)
}

// When a Deployment's status says its rollout ended, what is held of it
// and of its ReplicaSets goes on at once: the rollout's summary prints
// when the rollout ends, not a quiet period later. Another Deployment's
// ReplicaSet stays held.
func TestCoalescerReleasesARolloutWhenItEnds(t *testing.T) {
	s, out := newStepper(t)
	s.co.now = func() time.Time { return time.Unix(0, 0) } // no time passes
	s.scale("new", 0, 10)
	s.scale("old", 10, 0)
	ev := watcher.Event{Event: change.Event{Type: change.Updated, Resource: replicaSets, Old: replicaSetOf("api", "x", 1, 2), New: replicaSetOf("api", "x", 2, 3)}}
	c, _ := s.differ.Diff(ev.Event)
	s.co.add(ev, c)
	update := func(old, new *unstructured.Unstructured) {
		ev := watcher.Event{Event: change.Event{Type: change.Updated, Resource: deployments, Old: old, New: new}}
		c, _ := s.differ.Diff(ev.Event)
		s.co.add(ev, c)
	}
	update(deployment(1, 8, "False"), deployment(2, 9, "False"))
	if got := out.list(); len(got) != 0 {
		t.Fatalf("under way, emitted %v", got)
	}
	update(deployment(2, 9, "False"), deployment(3, 10, "True"))
	got := strings.Join(out.list(), "\n")
	for _, want := range []string{"updated web-new spec.replicas 0→10", "updated web-old spec.replicas 10→0", "updated web "} {
		if !strings.Contains(got, want) {
			t.Errorf("the rollout ended; %q is not released at once:\n%s", want, got)
		}
	}
	if strings.Contains(got, "api-x") {
		t.Errorf("another Deployment's ReplicaSet was released with it:\n%s", got)
	}
	// A straggler of the rollout (its ReplicaSet's watch behind the
	// Deployment's) goes on at once; another Deployment's is held.
	n := len(out.list())
	s.scale("old", 1, 0)
	ev = watcher.Event{Event: change.Event{Type: change.Updated, Resource: replicaSets, Old: replicaSetOf("api", "x", 3, 3), New: replicaSetOf("api", "x", 4, 4)}}
	c, _ = s.differ.Diff(ev.Event)
	s.co.add(ev, c)
	if got := out.list()[n:]; len(got) != 1 || got[0] != "updated web-old spec.replicas 1→0" {
		t.Errorf("after the rollout ended, emitted %v; want its ReplicaSet's straggler alone", got)
	}
}

// A GitOps owner's self-heal seconds after a person's edit of an owned
// object is its own record, not joined with the edit into "nothing
// changed"; the same manager's quick steps still join.
func TestCoalescerKeepsAGitOpsOwnersWriteApart(t *testing.T) {
	s, out := newStepper(t)
	write := func(manager string, from, to int64) {
		s.rv++
		ev := watcher.Event{Event: change.Event{Type: change.Updated, Resource: replicaSets, Old: replicaSet("rs", s.rv, from), New: replicaSet("rs", s.rv+1, to)}}
		c, ok := s.differ.Diff(ev.Event)
		if !ok {
			t.Fatalf("no record for %d → %d", from, to)
		}
		c.Manager = &record.Manager{Name: manager}
		s.co.add(ev, c)
	}
	write("kubectl-edit", 2, 4)
	write("kubectl-edit", 4, 5)
	write("argocd-controller", 5, 2)
	s.co.flush(func(*heldUpdate) bool { return true })
	want := []string{"updated web-rs spec.replicas 2→5", "updated web-rs spec.replicas 5→2"}
	if got := out.list(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("emitted %v, want %v", got, want)
	}
}
