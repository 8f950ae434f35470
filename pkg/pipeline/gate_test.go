package pipeline

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/kubediff/kubediff/pkg/notify"
	"github.com/kubediff/kubediff/pkg/record"
)

func rec(rv int) record.Change {
	return record.Change{Kind: "ConfigMap", Name: "cm", ResourceVersion: fmt.Sprint(rv)}
}

type sent struct{ rvs []string }

func (s *sent) Dispatch(c record.Change) []notify.Mark {
	s.rvs = append(s.rvs, c.ResourceVersion)
	return nil
}

func TestFollowerHoldsAndNewLeaderReplaysOnlyWhatWasNotDelivered(t *testing.T) {
	s := &sent{}
	g := newGate(s, 100, true, quiet)
	for _, rv := range []int{10, 11, 12, 13} {
		g.Emit(rec(rv))
	}
	if len(s.rvs) != 0 {
		t.Fatalf("a follower emitted %v", s.rvs)
	}
	g.Forget(10)                                                          // the leader published: delivered through 10
	g.Emit(record.Change{Kind: "Pod", Name: "gone", ResourceVersion: ""}) // a deletion found after a watch gap
	g.Lead(11)
	g.Emit(rec(14))
	if want := []string{"12", "13", "", "14"}; !reflect.DeepEqual(s.rvs, want) {
		t.Fatalf("emitted %v, want %v", s.rvs, want)
	}
	g.Follow()
	g.Emit(rec(15))
	if len(s.rvs) != 4 {
		t.Fatalf("emitted after Follow: %v", s.rvs)
	}
}

func TestLeadWithUnknownProgressReplaysEverythingHeld(t *testing.T) {
	s := &sent{}
	g := newGate(s, 2, true, quiet)
	for _, rv := range []int{1, 2, 3} { // holds at most 2: the oldest goes
		g.Emit(rec(rv))
	}
	g.Lead(0)
	if want := []string{"2", "3"}; !reflect.DeepEqual(s.rvs, want) {
		t.Fatalf("emitted %v, want %v", s.rvs, want)
	}
}

func TestThroughStaysBelowWhatSinksHaveNotHandled(t *testing.T) {
	release := make(chan struct{})
	sink := notify.NotifierFunc(func(_ context.Context, c record.Change) error {
		if c.ResourceVersion == "6" {
			<-release // a slow delivery
		}
		return nil
	})
	q := notify.NewQueue("sink", sink, notify.QueueOptions{Size: 10, Log: quiet})
	go q.Run(t.Context())
	defer q.Close()
	router := notify.Router{{Queue: q}}
	g := newGate(router, 10, true, quiet)
	g.settle = 0
	g.Lead(0)
	waitDelivered := func(n uint64) {
		for end := time.Now().Add(30 * time.Second); q.Stats().Delivered < n; time.Sleep(time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("%d records delivered after 30s, want %d", q.Stats().Delivered, n)
			}
		}
	}
	if got := g.Through(); got != 0 {
		t.Fatalf("Through = %d before anything was sent, want 0 (unknown)", got)
	}
	g.Emit(rec(5))
	g.Emit(rec(7))
	waitDelivered(2)
	g.Emit(rec(6)) // another type's record, a little late, not yet delivered
	if got := g.Through(); got != 5 {
		t.Fatalf("Through = %d while 6 is pending, want 5", got)
	}
	close(release)
	waitDelivered(3)
	if got := g.Through(); got != 7 {
		t.Fatalf("Through = %d with everything delivered, want 7", got)
	}
}

func TestWithoutElectionNothingIsKeptForProgress(t *testing.T) {
	s := &sent{}
	g := newGate(s, 10, false, quiet)
	g.Lead(0)
	for rv := range 1000 {
		g.Emit(rec(rv))
	}
	if len(g.pending) != 0 || len(s.rvs) != 1000 {
		t.Fatalf("pending %d, emitted %d: without election the gate must keep nothing", len(g.pending), len(s.rvs))
	}
}
