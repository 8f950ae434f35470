package historymcp

import (
	"testing"
	"time"

	"github.com/kubediff/kubediff/pkg/record"
)

func rec(at time.Duration, kind, name string, owner *record.Owner) record.Change {
	t0 := time.Date(2026, 11, 23, 14, 0, 0, 0, time.UTC)
	return record.Change{Time: record.Timestamp(t0.Add(at)), Type: record.Updated, Kind: kind, Namespace: "shop", Name: name, Owner: owner, Changed: "status.phase"}
}

// A rollout's quick changes to the objects one controller owns come to an
// assistant as one entry; a lone owned change, another owner's, or the
// same owner's after a pause stay apart.
func TestFoldSummarisesAControllersBurst(t *testing.T) {
	rs := &record.Owner{Kind: "ReplicaSet", Name: "web-5d4f"}
	other := &record.Owner{Kind: "ReplicaSet", Name: "api-77"}
	got := fold([]record.Change{
		rec(0, "Deployment", "web", nil),
		rec(time.Second, "Pod", "web-5d4f-a", rs),
		rec(2*time.Second, "Pod", "web-5d4f-b", rs),
		rec(3*time.Second, "Pod", "web-5d4f-a", rs),
		rec(4*time.Second, "Pod", "api-77-x", other),
		rec(2*time.Minute, "Pod", "web-5d4f-c", rs),
	})
	if len(got) != 4 {
		t.Fatalf("%d entries, want 4: %+v", len(got), got)
	}
	b := got[1]
	if b.Type != "burst" || b.Burst == nil || b.Burst.Owner != "ReplicaSet/web-5d4f" || b.Burst.Records != 3 || b.Burst.Objects != 2 || b.Name != "web-5d4f" {
		t.Errorf("burst = %+v %+v", b, b.Burst)
	}
	for _, i := range []int{0, 2, 3} {
		if got[i].Burst != nil || got[i].Type != record.Updated {
			t.Errorf("entry %d should stand alone: %+v", i, got[i])
		}
	}
}
