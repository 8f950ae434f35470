package state

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/kubediff/kubediff/pkg/record"
)

func rec(n int) record.Change {
	return record.Change{ID: fmt.Sprintf("u/%d/updated", n), Type: record.Updated, Kind: "ConfigMap", Name: "cm", ResourceVersion: fmt.Sprint(n),
		Time:    record.Timestamp(time.Date(2026, 11, 23, 7, 0, 0, 0, time.UTC)),
		Changes: []record.FieldChange{{Op: record.OpReplace, Path: "/data/v", Field: "data.v", From: int64(n - 1), To: int64(n)}},
		Unified: fmt.Sprintf("-v: %d\n+v: %d\n", n-1, n)}
}

// storedKeys counts a queue's records on disk.
func storedKeys(t *testing.T, s *Store, name string) int {
	t.Helper()
	n := 0
	err := s.db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(spoolsBucket).Bucket([]byte(name)); b != nil {
			n = b.Stats().KeyN
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestSpoolKeepsUndeliveredRecordsAcrossARestart(t *testing.T) {
	dir := t.TempDir()
	var logs bytes.Buffer
	s := openBound(t, dir, "c1", &logs)
	q, err := s.Spool("hook")
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 5; n++ {
		if err := q.Append(rec(n)); err != nil {
			t.Fatal(err)
		}
	}
	s.Put("configmaps", "ns/cm", cm) // noted after the records
	got, next, _, err := q.Read(q.Head(), 2)
	if err != nil || len(got) != 2 || got[0].ID != "u/1/updated" || got[1].ID != "u/2/updated" {
		t.Fatalf("Read = %v, %v", got, err)
	}
	q.Remove(next - 1) // delivered before the flush: never written
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := storedKeys(t, s, "hook"); n != 3 {
		t.Fatalf("%d records on disk after delivering 2 of 5, want 3", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openBound(t, dir, "c1", &logs)
	q, err = s.Spool("hook")
	if err != nil {
		t.Fatal(err)
	}
	if n, b := q.Size(); n != 3 || b <= 0 {
		t.Fatalf("after a reopen the queue holds %d records, %d bytes; want 3", n, b)
	}
	if objects, ok, _ := s.load("configmaps"); !ok || objects["ns/cm"] == nil {
		t.Fatal("the object state noted with the records was not written with them")
	}
	got, next, _, err = q.Read(q.Head(), 10)
	if err != nil || len(got) != 3 {
		t.Fatalf("Read = %v, %v; want records 3, 4, 5", got, err)
	}
	for i, c := range got {
		want := rec(i + 3)
		if c.ID != want.ID || c.Unified != want.Unified || !time.Time(c.Time).Equal(time.Time(want.Time)) ||
			fmt.Sprint(c.Changes[0].To) != fmt.Sprint(want.Changes[0].To) {
			t.Errorf("record %d came back as %+v, want %+v", i+3, c, want)
		}
	}
	if err := q.Append(rec(6)); err != nil {
		t.Fatal(err)
	}
	q.Remove(next - 1)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openBound(t, dir, "c1", &logs)
	defer s.Close()
	q, _ = s.Spool("hook")
	if got, _, _, _ := q.Read(q.Head(), 10); len(got) != 1 || got[0].ID != "u/6/updated" {
		t.Fatalf("after delivering 3 to 5 and appending 6, the queue holds %+v", got)
	}
}

func TestSpoolsOfSinksNoLongerConfiguredAreDropped(t *testing.T) {
	dir := t.TempDir()
	var logs bytes.Buffer
	s := openBound(t, dir, "c1", &logs)
	for _, name := range []string{"kept", "gone"} {
		q, _ := s.Spool(name)
		if err := q.Append(rec(1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openBound(t, dir, "c1", &logs)
	defer s.Close()
	if err := s.DropSpoolsExcept([]string{"kept"}); err != nil {
		t.Fatal(err)
	}
	if storedKeys(t, s, "kept") != 1 || storedKeys(t, s, "gone") != 0 {
		t.Fatal("DropSpoolsExcept kept the wrong spools")
	}
	if !strings.Contains(logs.String(), "sink no longer configured") || !strings.Contains(logs.String(), "sink=gone records=1") {
		t.Fatalf("dropping a queue with records must say so; logs:\n%s", logs.String())
	}
}

// TestSpoolUnderConcurrentFlushes: records appended, read, removed and
// flushed at once all arrive, in order, once.
func TestSpoolUnderConcurrentFlushes(t *testing.T) {
	var logs bytes.Buffer
	s := openBound(t, t.TempDir(), "c1", &logs)
	defer s.Close()
	q, _ := s.Spool("hook")
	const total = 2000
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for n := 1; n <= total; n++ {
			if err := q.Append(rec(n)); err != nil {
				t.Error(err)
			}
		}
	})
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			if err := s.Flush(); err != nil {
				t.Error(err)
			}
		}
	})
	var got []string
	for next := q.Head(); len(got) < total; {
		recs, after, skipped, err := q.Read(next, 7)
		if err != nil || skipped > 0 {
			t.Fatal(err, skipped)
		}
		for _, c := range recs {
			got = append(got, c.ID)
		}
		if after > next {
			q.Remove(after - 1)
		}
		next = after
	}
	close(done)
	wg.Wait()
	for i, id := range got {
		if want := fmt.Sprintf("u/%d/updated", i+1); id != want {
			t.Fatalf("record %d is %s, want %s", i+1, id, want)
		}
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if n, _ := q.Size(); n != 0 || storedKeys(t, s, "hook") != 0 {
		t.Fatalf("every record was read and removed, yet %d are held, %d on disk", n, storedKeys(t, s, "hook"))
	}
}
