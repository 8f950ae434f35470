package watcher

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRelistAfterARebuildReportsAReusedNameAsAnotherObject: in a cluster
// restored or rebuilt, an object of the same name is another object (a
// new UID): its predecessor's deletion and its addition are reported, not
// an update of one into the other.
func TestRelistAfterARebuildReportsAReusedNameAsAnotherObject(t *testing.T) {
	s, got := newTestStore(t)
	old := cm("a", "500", "one")
	old.SetUID("uid-before")
	kept := cm("b", "501", "bee")
	kept.SetUID("uid-b")
	if err := s.Replace([]any{old, kept}, "501"); err != nil {
		t.Fatal(err)
	}
	reborn := cm("a", "7", "one")
	reborn.SetUID("uid-after")
	same := cm("b", "8", "bee")
	same.SetUID("uid-b")
	if err := s.Replace([]any{reborn, same}, "9"); err != nil {
		t.Fatal(err)
	}
	var summary []string
	for _, ev := range *got {
		summary = append(summary, string(ev.Type)+" "+ev.Old+ev.New)
	}
	// Objects come in the list's order; each object's events in order.
	slices.SortStableFunc(summary, func(a, b string) int { return strings.Compare(a[strings.Index(a, " "):], b[strings.Index(b, " "):]) })
	want := []string{"deleted a=ONE", "added a=ONE", "updated b=BEEb=BEE"}
	if !reflect.DeepEqual(summary, want) {
		t.Fatalf("events %v, want %v", summary, want)
	}
}

func TestClusterCheckNoticesAnotherCluster(t *testing.T) {
	c := newClusterCheck()
	c.see("1200")
	if why := c.compare("uid-1", 1300); why != "" {
		t.Fatalf("the same cluster, further on, reported as changed: %s", why)
	}
	if why := c.compare("uid-1", 900); !strings.Contains(why, "went back from 1200 to 900") {
		t.Fatalf("a restore from a backup not noticed: %q", why)
	}
	c.maxSeen.Store(900)
	if why := c.compare("uid-2", 950); !strings.Contains(why, "new UID") {
		t.Fatalf("a rebuilt cluster not noticed: %q", why)
	}
	c.see("not-a-number")
	if why := c.compare("uid-2", 960); why != "" {
		t.Fatalf("unchanged cluster reported: %s", why)
	}
}

// TestStalledOnlyWhenTheSyncStopsProgressing: a type whose list has
// brought nothing counts as failing only once no other list has completed
// for stallAfter either: hundreds of types queued behind the client's rate
// limit are progressing, not failing.
func TestStalledOnlyWhenTheSyncStopsProgressing(t *testing.T) {
	start := time.Unix(1000, 0)
	h := &targetHealth{started: start}
	later := start.Add(2 * stallAfter)
	if h.stalled(0, later, later.Add(-time.Second)) {
		t.Fatal("stalled while other lists were completing a second ago")
	}
	if h.stalled(10, later, start) {
		t.Fatal("stalled while its own list brings objects")
	}
	if !h.stalled(0, later, start) {
		t.Fatal("not stalled with nothing listed for twice stallAfter")
	}
	if _, failing := h.failing(); !failing || !h.failed.Load() {
		t.Fatal("a stalled target must count as failing until it lists")
	}
}
