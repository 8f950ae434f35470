package state

import (
	"log/slog"
	"testing"

	"github.com/kubediff/kubediff/pkg/journal"
)

func obj(rv string) *journal.Object {
	return &journal.Object{UID: "u", ResourceVersion: rv, Raw: []byte(`{"rv":"` + rv + `"}`)}
}

// storedRV reopens nothing: it reads what a restart would find.
func storedRV(t *testing.T, s *Store, target, key string) string {
	t.Helper()
	objects, _, err := s.load(target)
	if err != nil {
		t.Fatal(err)
	}
	if o := objects[key]; o != nil {
		return o.ResourceVersion
	}
	return ""
}

// TestHeldStateStaysOnDiskUntilReleased: while the pipeline holds an
// update (to join it with the next), the disk keeps the state it starts
// from, so a crash then leaves the change for the restart to find.
func TestHeldStateStaysOnDiskUntilReleased(t *testing.T) {
	s, err := Open(t.TempDir(), slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ref := journal.Ref{Target: "apps/v1/replicasets", Key: "day/web"}
	s.Put(ref.Target, ref.Key, obj("1"))
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	s.Hold(ref)
	s.Put(ref.Target, ref.Key, obj("2"))
	s.Put(ref.Target, ref.Key, obj("3"))
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if rv := storedRV(t, s, ref.Target, ref.Key); rv != "1" {
		t.Fatalf("held object stored at %q, want the state before the held update (1)", rv)
	}
	s.Release(ref)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if rv := storedRV(t, s, ref.Target, ref.Key); rv != "3" {
		t.Fatalf("after release stored at %q, want the newest state (3)", rv)
	}
	s.Hold(ref)
	s.Delete(ref.Target, ref.Key)
	s.Release(ref)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if rv := storedRV(t, s, ref.Target, ref.Key); rv != "" {
		t.Fatalf("a deletion noted while held was lost: stored at %q", rv)
	}
}

// TestWriteFullIsOnDiskWhenItReturns: a type's first list is stored
// before its changes are reported, without waiting for a flush.
func TestWriteFullIsOnDiskWhenItReturns(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	s.Put("v1/configmaps", "ns/stale", obj("9")) // noted before the list: superseded
	list := map[string]*journal.Object{"ns/a": obj("1"), "ns/b": obj("2")}
	if err := s.WriteFull("v1/configmaps", "rules-1", objectsOf(list)); err != nil {
		t.Fatal(err)
	}
	objects, ok, err := s.load("v1/configmaps")
	if err != nil || !ok || len(objects) != 2 || objects["ns/b"].ResourceVersion != "2" {
		t.Fatalf("after WriteFull: %v objects (ok %v, err %v), want the list's 2", len(objects), ok, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if objects, _, _ := s.load("v1/configmaps"); len(objects) != 2 {
		t.Fatalf("after a restart: %d objects, want 2 (a stale note overwrote the list?)", len(objects))
	}
}
