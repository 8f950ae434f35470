package fold

import (
	"testing"
	"time"

	"github.com/kubediff/kubediff/pkg/record"
)

func TestBurstIsDueOnceQuietOrOld(t *testing.T) {
	clock := time.Date(2026, 11, 23, 7, 0, 0, 0, time.UTC)
	f := New()
	f.now = func() time.Time { return clock }
	pod := func(name string) record.Change {
		return record.Change{Type: record.Added, Kind: "Pod", Namespace: "day", Name: name, Owner: &record.Owner{Kind: "ReplicaSet", Name: "web-1"}}
	}
	rs := record.Change{Type: record.Added, Kind: "ReplicaSet", Namespace: "day", Name: "web-1", Owner: &record.Owner{Kind: "Deployment", Name: "web"}}
	if f.Add(record.Change{Type: record.Updated, Kind: "Deployment", Namespace: "day", Name: "web"}) {
		t.Fatal("a record of an object without an owner was held")
	}
	f.Add(rs)
	// A Pod record arriving every 5 s keeps the burst going, up to Max.
	for i := 0; clock.Sub(time.Date(2026, 11, 23, 7, 0, 0, 0, time.UTC)) < Max-5*time.Second; i++ {
		clock = clock.Add(5 * time.Second)
		f.Add(pod("web-1-" + string(rune('a'+i))))
		if due := f.Due(false); len(due) != 0 {
			t.Fatalf("a burst still going was due after %s", clock.Format("04:05"))
		}
	}
	clock = clock.Add(5 * time.Second)
	due := f.Due(false)
	if len(due) != 1 {
		t.Fatalf("a burst a minute old is not due: %d due", len(due))
	}
	if kind, name := due[0].Owner(); kind != "Deployment" || name != "day/web" || !due[0].Folded() {
		t.Fatalf("the Pods folded under %s %s (folded %v), want the Deployment that owns their ReplicaSet", kind, name, due[0].Folded())
	}
	if got, want := due[0].Summary(), "ReplicaSet 1 added; Pod 11 added"; got != want {
		t.Fatalf("summary %q, want %q", got, want)
	}
	f.Add(pod("web-1-z"))
	clock = clock.Add(Quiet - time.Second)
	if len(f.Due(false)) != 0 {
		t.Fatal("due before it was quiet for Quiet")
	}
	clock = clock.Add(time.Second)
	if due := f.Due(false); len(due) != 1 || due[0].Folded() {
		t.Fatal("a lone record, quiet for Quiet, must be due, and shown in full")
	}
}

// A rollout's Pods that come before the record saying their ReplicaSet
// is the Deployment's fold under the Deployment with it, in one burst:
// not in two lines at two owner levels.
func TestPodsBeforeTheirReplicaSetsOwnerFoldInOneBurst(t *testing.T) {
	f := New()
	at := time.Date(2026, 11, 23, 7, 0, 0, 0, time.UTC)
	for i := range 3 {
		f.Add(record.Change{Type: record.Added, Kind: "Pod", Namespace: "day", Name: "web-1-" + string(rune('a'+i)),
			Time: record.Timestamp(at.Add(time.Duration(i) * time.Second)), Owner: &record.Owner{Kind: "ReplicaSet", Name: "web-1"}})
	}
	f.Add(record.Change{Type: record.Added, Kind: "ReplicaSet", Namespace: "day", Name: "web-1", Time: record.Timestamp(at),
		Owner: &record.Owner{Kind: "Deployment", Name: "web"}})
	due := f.Due(true)
	if len(due) != 1 {
		t.Fatalf("%d bursts, want one", len(due))
	}
	if kind, name := due[0].Owner(); kind != "Deployment" || name != "day/web" || due[0].Summary() != "Pod 3 added; ReplicaSet 1 added" {
		t.Errorf("burst under %s %s: %s; want the Deployment's, with the ReplicaSet and its 3 Pods", kind, name, due[0].Summary())
	}
}

// An owner's steps that come after its fold was due (a scale-down's last
// Pod, deleted 13 s after the rest) continue that fold, within Max; past
// Max, a lone step is a lone step again.
func TestLateStepsContinueTheirOwnersFold(t *testing.T) {
	start := time.Date(2026, 11, 23, 7, 0, 0, 0, time.UTC)
	clock := start
	f := NewWithClock(func() time.Time { return clock })
	deleted := func(name string) record.Change {
		return record.Change{Type: record.Deleted, Kind: "Pod", Namespace: "day", Name: name, Time: record.Timestamp(clock),
			Owner: &record.Owner{Kind: "ReplicaSet", Name: "web-1"}}
	}
	for _, name := range []string{"a", "b", "c"} {
		f.Add(deleted(name))
	}
	clock = clock.Add(Quiet)
	if due := f.Due(false); len(due) != 1 || !due[0].Folded() || !time.Time(due[0].Continues).IsZero() {
		t.Fatalf("the first three deletions: %+v", due)
	}
	clock = clock.Add(3 * time.Second)
	f.Add(deleted("d"))
	clock = clock.Add(Quiet)
	due := f.Due(false)
	if len(due) != 1 || !due[0].Folded() || time.Time(due[0].Continues) != start {
		t.Fatalf("the late deletion does not continue the fold of %s: %+v", start, due)
	}
	clock = clock.Add(Max)
	f.Add(deleted("e"))
	clock = clock.Add(Quiet)
	if due := f.Due(false); len(due) != 1 || due[0].Folded() {
		t.Fatalf("a deletion past Max after the fold: %+v", due)
	}
}
