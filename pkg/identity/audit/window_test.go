package audit

import (
	"testing"
	"time"

	"github.com/kubediff/kubediff/pkg/identity"
)

func TestWindow(t *testing.T) {
	now := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	write := func(id, rv string, at time.Time) []identity.Write {
		return []identity.Write{{ID: id, UID: "u-web", ResourceVersion: rv, Time: at}}
	}
	w := NewWindow(time.Minute)
	if got := w.Admit(write("a", "10", now), now); len(got) != 1 {
		t.Fatalf("a new event: %d writes admitted, want 1", len(got))
	}
	if got := w.Admit(write("a", "10", now), now.Add(time.Second)); len(got) != 0 {
		t.Fatal("a replayed event was admitted again")
	}
	if got := w.Admit(write("b", "10", now), now.Add(time.Second)); len(got) != 0 {
		t.Fatal("a write that produced no new version (a no-op patch) was admitted")
	}
	if got := w.Admit(write("c", "11", now.Add(-2*time.Minute)), now); len(got) != 0 {
		t.Fatal("an event older than the window was admitted")
	}
	if got := w.Admit(write("d", "12", now.Add(2*time.Minute)), now); len(got) != 0 {
		t.Fatal("an event from past the window's future was admitted")
	}
	later := now.Add(2 * time.Minute)
	if got := w.Admit(write("a", "10", later), later); len(got) != 1 {
		t.Fatal("an audit ID is remembered past the window")
	}
	// Only a's id and version, admitted again: the rest is forgotten.
	if len(w.seen) != len(w.order) || len(w.order) != 2 {
		t.Fatalf("remembered %d keys in order, %d in the set; want 2", len(w.order), len(w.seen))
	}
}
