package pipeline

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kubediff/kubediff/pkg/record"
)

func scaled(uid string, from, to int64) record.Change {
	return record.Change{Type: record.Updated, Kind: "ReplicaSet", Name: "web-" + uid, UID: uid,
		Owner: &record.Owner{Kind: "Deployment", Name: "web"}, Changed: "spec.replicas",
		Changes: []record.FieldChange{{Op: record.OpReplace, Path: "/spec/replicas", Field: "spec.replicas", From: from, To: to}}}
}

type emitted struct {
	mu  sync.Mutex
	got []string
}

func (e *emitted) emit(c record.Change) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := c.Type + " " + c.Name
	for _, fc := range c.Changes {
		s += fmt.Sprintf(" %s %v→%v", fc.Field, fc.From, fc.To)
	}
	e.got = append(e.got, s)
}

func (e *emitted) list() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.got...)
}

func TestCoalescerMergesAControllersSteps(t *testing.T) {
	out := &emitted{}
	co := newCoalescer(out.emit)
	now := time.Unix(0, 0)
	co.now = func() time.Time { return now }
	unowned := record.Change{Type: record.Updated, Kind: "ConfigMap", Name: "cm", UID: "cm-1"}

	co.add(scaled("new", 0, 3)) // a rollout's steps on two ReplicaSets
	co.add(scaled("old", 10, 8))
	co.add(unowned) // not owned: passes at once
	now = now.Add(500 * time.Millisecond)
	co.add(scaled("new", 3, 5))
	co.add(scaled("old", 8, 5))
	co.add(scaled("bounce", 2, 3)) // and back: says nothing
	co.add(scaled("bounce", 3, 2))
	if got := out.list(); len(got) != 1 || got[0] != "updated cm" {
		t.Fatalf("before the quiet period, emitted %v; want only the unowned record", got)
	}
	now = now.Add(coalesceQuiet)
	co.flush(func(h *heldRecord) bool { return now.Sub(h.last) >= coalesceQuiet })
	want := []string{"updated cm", "updated web-new spec.replicas 0→5", "updated web-old spec.replicas 10→5"}
	if got := out.list(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("emitted %v, want %v", got, want)
	}
}

func TestCoalescerKeepsEachObjectsOrder(t *testing.T) {
	out := &emitted{}
	co := newCoalescer(out.emit)
	co.add(scaled("rs", 3, 2))
	co.add(record.Change{Type: record.Deleted, Kind: "ReplicaSet", Name: "web-rs", UID: "rs"})
	want := []string{"updated web-rs spec.replicas 3→2", "deleted web-rs"}
	if got := out.list(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("emitted %v, want the held update before the deletion: %v", got, want)
	}
}

// A steadily changing object is still reported: no record is held longer
// than coalesceMax, and stopping releases everything.
func TestCoalescerHoldsNothingForLong(t *testing.T) {
	out := &emitted{}
	co := newCoalescer(out.emit)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { co.run(ctx); close(done) }()
	start := time.Now()
	for i := int64(0); len(out.list()) == 0; i++ {
		if time.Since(start) > coalesceMax+10*time.Second {
			t.Fatal("a record held past coalesceMax")
		}
		co.add(scaled("busy", i, i+1))
		time.Sleep(100 * time.Millisecond)
	}
	co.add(scaled("late", 1, 2))
	cancel()
	<-done
	if got := out.list(); got[len(got)-1] != "updated web-late spec.replicas 1→2" {
		t.Fatalf("stopping did not release the held record: %v", got)
	}
	co.add(scaled("after", 1, 2))
	if got := out.list(); got[len(got)-1] != "updated web-after spec.replicas 1→2" {
		t.Fatal("after stopping, records must pass straight on")
	}
}
