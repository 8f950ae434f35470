package state

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/kubediff/kubediff/pkg/journal"
	"github.com/kubediff/kubediff/pkg/record"
)

func testLog(buf *bytes.Buffer) *slog.Logger { return slog.New(slog.NewTextHandler(buf, nil)) }

// open opens a store in dir bound to cluster, failing the test on error.
func openBound(t *testing.T, dir, cluster string, logs *bytes.Buffer) *Store {
	t.Helper()
	s, err := Open(dir, testLog(logs))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Bind(cluster); err != nil {
		t.Fatal(err)
	}
	return s
}

var cm = &journal.Object{UID: "u1", ResourceVersion: "7", Raw: []byte(`{"kind":"ConfigMap","data":{"k":"v"}}`)}

func TestStoredObjectsSurviveAReopen(t *testing.T) {
	dir := t.TempDir()
	var logs bytes.Buffer
	s := openBound(t, dir, "c1", &logs)
	if _, ok, _ := s.load("configmaps"); ok {
		t.Fatal("a target never stored loads as stored")
	}
	s.Replace("configmaps", objectsOf(map[string]*journal.Object{"ns/a": cm, "ns/gone": cm}))
	s.Put("configmaps", "ns/b", cm)
	s.Delete("configmaps", "ns/gone")
	s.Replace("secrets", objectsOf(map[string]*journal.Object{})) // stored, and empty
	s.Put("widgets", "w", cm)
	s.Forget("widgets") // its type is gone
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openBound(t, dir, "c1", &logs)
	defer s.Close()
	got, ok, err := s.load("configmaps")
	if err != nil || !ok || len(got) != 2 || got["ns/a"] == nil || got["ns/b"] == nil {
		t.Fatalf("configmaps = %v, %v, %v; want ns/a and ns/b", got, ok, err)
	}
	if o := got["ns/b"]; o.UID != "u1" || o.ResourceVersion != "7" || string(o.Raw) != string(cm.Raw) {
		t.Fatalf("ns/b = %+v", o)
	}
	if got, ok, _ := s.load("secrets"); !ok || len(got) != 0 {
		t.Fatalf("an empty target must load as stored and empty: %v %v", got, ok)
	}
	if _, ok, _ := s.load("widgets"); ok {
		t.Fatal("a forgotten target is still stored")
	}
	if logs.Len() != 0 {
		t.Fatalf("logged: %s", logs.String())
	}
}

// TestDamagedForeignOrNewerState: a truncated file, garbage, another
// cluster's state and a newer format never crash and never restore bogus
// objects: a warning and a fresh start, or (newer format) a clear error
// that leaves the file alone.
func TestDamagedForeignOrNewerState(t *testing.T) {
	stored := func(t *testing.T) string {
		dir := t.TempDir()
		s := openBound(t, dir, "c1", &bytes.Buffer{})
		objects := map[string]*journal.Object{}
		for i := range 2000 { // several pages, so that truncation cuts data
			objects[strings.Repeat("k", 10)+string(rune('a'+i%26))+strings.Repeat("x", i%50)+string(rune(i))] = cm
		}
		s.Replace("configmaps", objectsOf(objects))
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	fresh := func(t *testing.T, dir, cluster string) string {
		t.Helper()
		var logs bytes.Buffer
		s := openBound(t, dir, cluster, &logs)
		defer s.Close()
		if _, ok, err := s.load("configmaps"); ok || err != nil {
			t.Fatalf("restored %v (err %v) from state that should have been dropped", ok, err)
		}
		return logs.String()
	}
	t.Run("truncated", func(t *testing.T) {
		dir := stored(t)
		path := filepath.Join(dir, fileName)
		info, _ := os.Stat(path)
		if err := os.Truncate(path, info.Size()/3); err != nil {
			t.Fatal(err)
		}
		if logs := fresh(t, dir, "c1"); !strings.Contains(logs, "state store damaged: moved aside") {
			t.Fatalf("no warning: %s", logs)
		}
		aside, _ := filepath.Glob(path + ".damaged-*")
		if len(aside) != 1 {
			t.Fatalf("damaged file not kept aside: %v", aside)
		}
	})
	t.Run("garbage", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, fileName), bytes.Repeat([]byte("not a database "), 1000), 0o600); err != nil {
			t.Fatal(err)
		}
		if logs := fresh(t, dir, "c1"); !strings.Contains(logs, "state store damaged") {
			t.Fatalf("no warning: %s", logs)
		}
	})
	t.Run("another cluster", func(t *testing.T) {
		if logs := fresh(t, stored(t), "c2"); !strings.Contains(logs, "another cluster's state") {
			t.Fatalf("no warning: %s", logs)
		}
	})
	t.Run("newer format", func(t *testing.T) {
		dir := stored(t)
		edit(t, dir, func(tx *bolt.Tx) error { return tx.Bucket(metaBucket).Put(formatKey, []byte("2")) })
		_, err := Open(dir, testLog(&bytes.Buffer{}))
		if err == nil || !strings.Contains(err.Error(), "another kubediff version (format 2") {
			t.Fatalf("err = %v, want a clear error naming the format", err)
		}
		if aside, _ := filepath.Glob(filepath.Join(dir, fileName+".damaged-*")); len(aside) != 0 {
			t.Fatal("a newer format was moved aside: it must be left alone")
		}
	})
	t.Run("in use", func(t *testing.T) {
		dir := t.TempDir()
		s := openBound(t, dir, "c1", &bytes.Buffer{})
		defer s.Close()
		_, err := Open(dir, testLog(&bytes.Buffer{}))
		if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "in use by a running kubediff") {
			t.Fatalf("err = %v, want in use", err)
		}
	})
}

// edit changes a closed store's file directly, as damage or another
// version would.
func edit(t *testing.T, dir string, f func(*bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, fileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(f); err != nil {
		t.Fatal(err)
	}
}

// A full write bigger than a transaction's share goes to disk in several,
// and reads back whole; one cut short by a crash leaves the objects stored
// before it.
func TestFullWritesAreStagedAndMovedIntoPlace(t *testing.T) {
	dir := t.TempDir()
	var logs bytes.Buffer
	s := openBound(t, dir, "c1", &logs)
	list := func(version string) map[string]*journal.Object {
		objects := map[string]*journal.Object{}
		for i := range 3000 { // 6 MB: more than one transaction
			objects[fmt.Sprintf("ns/cm-%04d", i)] = &journal.Object{UID: fmt.Sprint(i), ResourceVersion: version, Raw: []byte(`{"data":"` + strings.Repeat("v", 2000) + `"}`)}
		}
		return objects
	}
	s.Replace("configmaps", objectsOf(list("1")))
	s.Put("configmaps", "ns/cm-0007", &journal.Object{UID: "7", ResourceVersion: "2", Raw: []byte(`{"data":"newer"}`)}) // noted after the list
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.load("configmaps")
	if err != nil || !ok || len(got) != 3000 {
		t.Fatalf("loaded %d objects, %v, %v; want 3000", len(got), ok, err)
	}
	if o := got["ns/cm-0007"]; o.ResourceVersion != "2" {
		t.Fatalf("a change noted after the list must win: %+v", o)
	}
	if o := got["ns/cm-2999"]; o.ResourceVersion != "1" || len(o.Raw) != 2011 {
		t.Fatalf("the last object of the list: %+v", o)
	}

	// Killed while staging the next list: only the staging was written.
	if _, err := s.stage("configmaps", objectsOf(list("3"))); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Close(); err != nil { // no flush: as if killed
		t.Fatal(err)
	}
	s = openBound(t, dir, "c1", &logs)
	defer s.Close()
	got, _, err = s.load("configmaps")
	if err != nil || len(got) != 3000 || got["ns/cm-0001"].ResourceVersion != "1" {
		t.Fatalf("after a crash while staging: %d objects, %v; want the 3000 stored before", len(got), err)
	}
	err = s.db.View(func(tx *bolt.Tx) error {
		if n := tx.Bucket(stagingBucket).Stats().KeyN; n != 0 {
			t.Errorf("the cut-short staging is still there: %d keys", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestSaltIsKeptWithTheState: the redaction key survives a restart, so a
// redacted value that did not change hashes the same afterwards.
func TestSaltIsKeptWithTheState(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	first, err := s.Salt()
	if err != nil || len(first) != 32 {
		t.Fatalf("Salt() = %x, %v", first, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	again, _ := s.Salt()
	if !bytes.Equal(first, again) {
		t.Errorf("salt changed across a restart: %x then %x", first, again)
	}
}

// TestDamagedRecordCostsOnlyThatRecord: a stored object or a queued record
// that cannot be read is dropped with one warning naming where; every
// other object and queued record is kept.
func TestDamagedRecordCostsOnlyThatRecord(t *testing.T) {
	dir := t.TempDir()
	s := openBound(t, dir, "c1", &bytes.Buffer{})
	s.Replace("configmaps", objectsOf(map[string]*journal.Object{"ns/a": cm, "ns/b": cm}))
	q, err := s.Spool("hook")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"first", "second", "third"} {
		if err := q.Append(record.Change{Type: record.Updated, Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	edit(t, dir, func(tx *bolt.Tx) error {
		if err := tx.Bucket(targetsBucket).Bucket([]byte("configmaps")).Put([]byte("ns/x"), []byte("garbage")); err != nil {
			return err
		}
		return tx.Bucket(spoolsBucket).Bucket([]byte("hook")).Put(seqKey(2), []byte(`{"id":"cut sh`))
	})
	var logs bytes.Buffer
	s = openBound(t, dir, "c1", &logs)
	defer s.Close()
	objects, _, err := s.load("configmaps")
	if err != nil || len(objects) != 2 || objects["ns/a"] == nil || objects["ns/b"] == nil {
		t.Fatalf("objects after damage: %v (err %v), want ns/a and ns/b kept", objects, err)
	}
	q, err = s.Spool("hook")
	if err != nil {
		t.Fatal(err)
	}
	recs, _, _, err := q.Read(q.Head(), 10)
	var names []string
	for _, r := range recs {
		names = append(names, r.Name)
	}
	if err != nil || strings.Join(names, ",") != "first,third" {
		t.Fatalf("queued records after damage: %v (err %v), want first,third", names, err)
	}
	log := logs.String()
	if strings.Count(log, "damaged records dropped") != 1 || !strings.Contains(log, "queue of sink hook") || !strings.Contains(log, "objects of configmaps") {
		t.Fatalf("want one warning naming the queue and the objects: %s", log)
	}
	if aside, _ := filepath.Glob(filepath.Join(dir, fileName+".damaged-*")); len(aside) != 0 {
		t.Fatalf("the file was moved aside for one damaged record: %v", aside)
	}
}

// TestUnusableDirIsNotDamage: a read-only or forbidden state dir is an
// error saying so; the file is neither called damaged nor moved aside.
func TestUnusableDirIsNotDamage(t *testing.T) {
	for _, err := range []error{
		&os.PathError{Op: "open", Path: "/state/state.db", Err: syscall.EROFS},
		&os.PathError{Op: "open", Path: "/state/state.db", Err: syscall.EACCES},
		syscall.ENOSPC,
	} {
		if isDamage(err) {
			t.Errorf("%v counted as damage: the file would be moved aside", err)
		}
	}
	if !isDamage(errors.New("damaged database: unexpected fault address")) {
		t.Error("a fault reading the file is damage")
	}
}

// A key past bbolt's 32 KiB limit (a Role's name is validated only as a
// path segment: the API server takes one of 40 KiB) is stored under a
// shortened key: the write does not fail, the object loads back under
// its whole key, its history's current state is found, and its deletion
// removes it.
func TestKeyTooLargeForTheStoreIsShortened(t *testing.T) {
	const roles = "rbac.authorization.k8s.io/v1, Resource=roles|||"
	dir := t.TempDir()
	var logs bytes.Buffer
	s := openBound(t, dir, "c1", &logs)
	long := "ns/" + strings.Repeat("r", 40<<10)
	s.Replace(roles, objectsOf(map[string]*journal.Object{long: cm, "ns/a": cm}))
	s.Put(roles, long+"2", cm)
	if err := s.Flush(); err != nil {
		t.Fatalf("write: %v", err)
	}
	s.Put(roles, "ns/b", cm)
	if err := s.Close(); err != nil {
		t.Fatalf("a later write: %v", err)
	}
	s = openBound(t, dir, "c1", &logs)
	got, _, err := s.load(roles)
	if err != nil || len(got) != 4 || got[long] == nil || got[long+"2"] == nil || string(got[long].Raw) != string(cm.Raw) {
		t.Fatalf("loaded %d objects (%v), want 4 with the long keys whole", len(got), err)
	}
	err = s.db.View(func(tx *bolt.Tx) error {
		if current(tx, "rbac.authorization.k8s.io", "roles", "ns", strings.Repeat("r", 40<<10)) == nil {
			t.Error("the history's current state of the long name is not found")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Delete(roles, long)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openBound(t, dir, "c1", &logs)
	defer s.Close()
	if got, _, _ := s.load(roles); len(got) != 3 || got[long] != nil {
		t.Errorf("after the deletion: %d objects, the long one there: %v", len(got), got[long] != nil)
	}
	if logs.Len() != 0 {
		t.Errorf("logged: %s", logs.String())
	}
}
