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

// A Deployment's rollout prints when its Deployment says it ended (for
// Ended, with no record meanwhile), counting the old Pods still
// terminating instead of waiting for them; their deletions, when they
// come, are not printed again, but a deletion it did not announce is.
// Under way, or with no ReplicaSet's record, a burst waits Quiet as any.
func TestRolloutPrintsWhenItEnds(t *testing.T) {
	clock := time.Date(2026, 11, 23, 7, 0, 0, 0, time.UTC)
	outcome := ""
	f := New()
	f.now = func() time.Time { return clock }
	f.SetOutcome(func(kind, namespace, name string, _ time.Time) string {
		if kind != "Deployment" || namespace != "day" || name != "web" {
			t.Errorf("outcome asked of %s %s/%s, want Deployment day/web", kind, namespace, name)
		}
		return outcome
	})
	owned := func(typ, kind, name, ownerKind, ownerName string, changes ...record.FieldChange) record.Change {
		return record.Change{Type: typ, Kind: kind, Namespace: "day", Name: name, Owner: &record.Owner{Kind: ownerKind, Name: ownerName},
			Changes: changes, Time: record.Timestamp(clock)}
	}
	scaledDown := record.FieldChange{Op: record.OpReplace, Path: "/spec/replicas", Field: "spec.replicas", From: int64(2), To: int64(0)}
	statusReplicas := record.FieldChange{Op: record.OpReplace, Path: "/status/replicas", Field: "status.replicas", From: int64(1), To: int64(0)}
	steps := []record.Change{
		owned(record.Added, "ReplicaSet", "web-new", "Deployment", "web"),
		owned(record.Added, "Pod", "web-new-a", "ReplicaSet", "web-new"), owned(record.Added, "Pod", "web-new-b", "ReplicaSet", "web-new"),
		owned(record.Updated, "ReplicaSet", "web-old", "Deployment", "web", scaledDown),
		owned(record.Deleted, "Pod", "web-old-a", "ReplicaSet", "web-old"),
	}
	for _, c := range steps {
		f.Add(c)
	}
	clock = clock.Add(Quiet - time.Millisecond)
	if due := f.Due(false); len(due) != 0 {
		t.Fatal("under way, due before Quiet")
	}
	outcome = "rolled out 2/2"
	f.Due(false) // the Deployment says so from now
	clock = clock.Add(Ended - time.Millisecond)
	if due := f.Due(false); len(due) != 0 {
		t.Fatal("due before the rollout had ended for Ended")
	}
	clock = clock.Add(time.Millisecond)
	due := f.Due(false)
	want := "ReplicaSet 1 added, 1 updated (spec.replicas); Pod 2 added, 1 deleted; rolled out 2/2; 1 old Pod terminating"
	if len(due) != 1 || due[0].Headline() != want {
		t.Fatalf("the rollout once it ended: %d due %+v; want %q", len(due), due, want)
	}

	f.Add(owned(record.Deleted, "Pod", "web-old-b", "ReplicaSet", "web-old")) // the terminating Pod goes
	f.Add(owned(record.Updated, "ReplicaSet", "web-old", "Deployment", "web", statusReplicas))
	clock = clock.Add(Quiet)
	f.Due(false)
	clock = clock.Add(Ended)
	if due := f.Due(false); len(due) != 0 || f.Waiting() {
		t.Fatalf("the deletion the fold announced was printed again: %+v", due)
	}
	f.Add(record.Change{Type: record.Updated, Kind: "Deployment", Namespace: "day", Name: "web", // its status moving is no change of it
		Changes: []record.FieldChange{{Op: record.OpReplace, Path: "/status/observedGeneration", Field: "status.observedGeneration"}}})
	f.Add(owned(record.Updated, "ReplicaSet", "web-old", "Deployment", "web", scaledDown)) // a last scale-down after the end
	clock = clock.Add(Quiet)
	f.Due(false)
	clock = clock.Add(Ended)
	if due := f.Due(false); len(due) != 0 || f.Waiting() {
		t.Fatalf("the rollout's tail (a ReplicaSet's last scale-down) printed: %+v", due)
	}
	f.Add(owned(record.Added, "Pod", "web-new-d", "ReplicaSet", "web-new")) // news: a Pod replaced
	clock = clock.Add(Quiet)
	if due := f.Due(false); len(due) != 1 || time.Time(due[0].Continues).IsZero() {
		t.Fatalf("a Pod added after the rollout is not late steps of its fold: %+v", due)
	}

	// A scale-down: its ReplicaSet's record and one Pod's deletion fold
	// into one line saying the rest are terminating, which they continue.
	clock = clock.Add(Max)
	f.Add(owned(record.Updated, "ReplicaSet", "web-new", "Deployment", "web", scaledDown))
	f.Add(owned(record.Deleted, "Pod", "web-new-b", "ReplicaSet", "web-new"))
	f.Due(false)
	clock = clock.Add(Ended)
	if due := f.Due(false); len(due) != 1 || !due[0].Folded() || due[0].Terminating != 1 {
		t.Fatalf("a scale-down of two records: %+v, want one folded line, 1 old Pod terminating", due)
	}
	f.Add(owned(record.Deleted, "Pod", "web-new-c", "ReplicaSet", "web-new"))
	clock = clock.Add(Quiet)
	if due := f.Due(false); len(due) != 0 {
		t.Fatalf("the scale-down's announced deletion printed: %+v", due)
	}

	clock = clock.Add(Max)
	f.Add(steps[4]) // Pod deletions without a ReplicaSet's record
	clock = clock.Add(Ended * 2)
	f.Due(false)
	if due := f.Due(false); len(due) != 0 {
		t.Fatal("a burst without a ReplicaSet's record was due before Quiet")
	}
	clock = clock.Add(Quiet)
	if due := f.Due(false); len(due) != 1 {
		t.Fatal("Pod deletions without a ReplicaSet's record were not due after Quiet")
	}
}

// A burst that follows a change of its owner itself (an upgrade seconds
// after an install) is the new change's, not late steps of the fold
// before it.
func TestAnOwnersNewChangeStartsANewFold(t *testing.T) {
	clock := time.Date(2026, 11, 23, 7, 0, 0, 0, time.UTC)
	f := NewWithClock(func() time.Time { return clock })
	pod := func(typ, name string) record.Change {
		return record.Change{Type: typ, Kind: "Pod", Namespace: "day", Name: name, Time: record.Timestamp(clock),
			Owner: &record.Owner{Kind: "ReplicaSet", Name: "web-1"}}
	}
	f.Add(record.Change{Type: record.Added, Kind: "ReplicaSet", Namespace: "day", Name: "web-1", Time: record.Timestamp(clock),
		Owner: &record.Owner{Kind: "Deployment", Name: "web"}})
	for _, name := range []string{"a", "b", "c"} {
		f.Add(pod(record.Added, name))
	}
	clock = clock.Add(Quiet)
	if due := f.Due(false); len(due) != 1 || !due[0].Folded() {
		t.Fatalf("the install's burst: %+v", due)
	}
	clock = clock.Add(5 * time.Second)
	if f.Add(record.Change{Type: record.Updated, Kind: "Deployment", Namespace: "day", Name: "web"}) {
		t.Fatal("the Deployment's own change was held")
	}
	for _, name := range []string{"a", "b", "c"} {
		f.Add(pod(record.Deleted, name))
	}
	clock = clock.Add(Quiet)
	if due := f.Due(false); len(due) != 1 || !time.Time(due[0].Continues).IsZero() {
		t.Fatalf("the upgrade's burst continues the install's fold: %+v", due)
	}
}
