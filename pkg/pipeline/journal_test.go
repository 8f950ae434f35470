package pipeline

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/diff"
	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/identity"
	"github.com/kubediff/kubediff/pkg/journal"
	"github.com/kubediff/kubediff/pkg/metrics"
	"github.com/kubediff/kubediff/pkg/notify"
	"github.com/kubediff/kubediff/pkg/record"
	"github.com/kubediff/kubediff/pkg/state"
	"github.com/kubediff/kubediff/pkg/watcher"
)

// storedPipeline is a pipeline writing to a real state store, and a watcher's
// part of the protocol: each event's note handed to the store with the
// object's new state once the pipeline returns.
type storedPipeline struct {
	t     *testing.T
	store *state.Store
	p     *Pipeline
	ref   journal.Ref
}

func newJournal(t *testing.T, o Options) *storedPipeline {
	t.Helper()
	st, err := state.Open(t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Bind("c1"); err != nil {
		t.Fatal(err)
	}
	if err := st.SetHistory(history.Policy{Retention: time.Hour, MaxBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	d, err := diff.New(diff.Options{Rules: diff.Rules{Defaults: diff.AllDefaults}})
	if err != nil {
		t.Fatal(err)
	}
	q := notify.NewQueue("test", &collected{}, notify.QueueOptions{Size: 100, Log: quiet})
	o.Differ, o.Router, o.Metrics, o.Log, o.Holds, o.History = d, notify.Router{{Queue: q}}, metrics.New(), quiet, st, st
	return &storedPipeline{t: t, store: st, p: New(o), ref: journal.Ref{Target: "apps/v1/replicasets", Key: "day/web-rs"}}
}

// watch hands the pipeline an update from old to new, then the store the
// new state with what the pipeline kept of it, as the watcher does.
func (j *storedPipeline) watch(old, new *unstructured.Unstructured) {
	j.t.Helper()
	j.handle(new, change.Event{Type: change.Updated, Resource: replicaSets, Old: old, New: new})
}

// handle hands the pipeline events of one object, which share a note as
// the watcher's do (a name that changed UID: a deletion and an addition),
// then the store the object's new state with that note.
func (j *storedPipeline) handle(new *unstructured.Unstructured, events ...change.Event) {
	j.t.Helper()
	note := &journal.Note{Ref: j.ref}
	for _, ev := range events {
		j.p.Handle(watcher.Event{Event: ev, Note: note})
	}
	raw, err := json.Marshal(new.Object)
	if err != nil {
		j.t.Fatal(err)
	}
	j.store.Put(j.ref.Target, j.ref.Key, &journal.Object{UID: string(new.GetUID()), ResourceVersion: new.GetResourceVersion(), Raw: raw}, note.Records...)
}

// disk flushes and says what a restart would find: the records in the
// history and the object's stored resourceVersion.
func (j *storedPipeline) disk() string {
	j.t.Helper()
	if err := j.store.Flush(); err != nil {
		j.t.Fatal(err)
	}
	page, err := j.store.History().Records(history.Query{})
	if err != nil {
		j.t.Fatal(err)
	}
	rv := ""
	if _, err := j.store.Each(j.ref.Target, func(key string, o *journal.Object) {
		if key == j.ref.Key {
			rv = o.ResourceVersion
		}
	}); err != nil {
		j.t.Fatal(err)
	}
	return fmt.Sprintf("%d records, stored at %s", len(page.Records), rv)
}

// expect fails the test unless disk says want.
func (j *storedPipeline) expect(when, want string) {
	j.t.Helper()
	if got := j.disk(); got != want {
		j.t.Fatalf("%s: %s, want %s", when, got, want)
	}
}

// named notes that alice made the write of day/app (uid) at rv, and lets
// identify hand on the records it names.
func (j *storedPipeline) named(book *identity.Book, verb, uid, rv string) {
	book.Note(identity.Write{ID: uid + "@" + rv, User: identity.NewUser("alice", nil), Verb: verb, Resource: "configmaps",
		Namespace: "day", Name: "app", UID: uid, ResourceVersion: rv})
	j.p.identify.releaseDue(false)
}

// kept is the first record in the history.
func (j *storedPipeline) kept() record.Change {
	j.t.Helper()
	page, err := j.store.History().Records(history.Query{})
	var c record.Change
	if err != nil || len(page.Records) == 0 || json.Unmarshal(page.Records[0], &c) != nil {
		j.t.Fatalf("no record read from the history (%v)", err)
	}
	return c
}

// A rollout's steps the coalescer holds reach the disk with the state
// after the last of them, in one write, the joined record with it: while
// they are held, a crash finds the state before the first step stored
// and no record, and reports the change at the restart, once.
func TestHeldUpdateIsWrittenWithTheHeldState(t *testing.T) {
	j := newJournal(t, Options{})
	j.store.Put(j.ref.Target, j.ref.Key, &journal.Object{UID: "rs", ResourceVersion: "1", Raw: []byte(`{}`)})
	j.watch(replicaSet("rs", 1, 3), replicaSet("rs", 2, 2))
	j.expect("while the first step is held", "0 records, stored at 1")
	j.watch(replicaSet("rs", 2, 2), replicaSet("rs", 3, 1))
	j.expect("while two steps are held", "0 records, stored at 1")
	j.p.coalesce.flush(func(*heldUpdate) bool { return true })
	j.expect("after the release", "1 records, stored at 3")
	if r := j.kept(); r.Changed != "spec.replicas" || r.ResourceVersion != "3" {
		t.Errorf("record kept: %s at %s, want the joined step to resourceVersion 3", r.Changed, r.ResourceVersion)
	}
}

// A record identify holds until a source says who made it is written
// with its state once named, not before: the state store holds the newer
// state meanwhile.
func TestRecordWaitingForItsUserIsWrittenWithItsState(t *testing.T) {
	book := identity.NewBook()
	j := newJournal(t, Options{Identities: book, IdentityWait: time.Hour})
	j.ref = journal.Ref{Target: "configmaps", Key: "day/app"}
	cm := func(rv int, v string) *unstructured.Unstructured {
		u := configMap("day", fmt.Sprint(rv), map[string]any{"k": v})
		u.SetUID("app")
		return u
	}
	j.store.Put(j.ref.Target, j.ref.Key, &journal.Object{UID: "app", ResourceVersion: "1", Raw: []byte(`{}`)})
	j.watch(cm(1, "a"), cm(2, "b"))
	j.expect("while the record waits for its user", "0 records, stored at 1")
	j.named(book, "update", "app", "2")
	j.expect("once named", "1 records, stored at 2")
	if u := j.kept().User; u == nil || u.Name != "alice" {
		t.Errorf("record kept by %v, want alice", u)
	}
}

// An object replaced under its name while kubediff looked away (a new
// UID) is a deletion and an addition in one note; when the addition
// waits for its user, each record is still written once, the deletion
// with the state and the addition at its release.
func TestReplacedObjectsRecordsAreWrittenOnce(t *testing.T) {
	book := identity.NewBook()
	j := newJournal(t, Options{Identities: book, IdentityWait: time.Hour})
	j.ref = journal.Ref{Target: "configmaps", Key: "day/app"}
	was, now := configMap("day", "1", map[string]any{"k": "a"}), configMap("day", "5", map[string]any{"k": "b"})
	was.SetUID("old")
	now.SetUID("new")
	j.store.Put(j.ref.Target, j.ref.Key, &journal.Object{UID: "old", ResourceVersion: "1", Raw: []byte(`{}`)})
	j.handle(now, change.Event{Type: change.Deleted, Resource: configMaps, Old: was, AfterGap: true, FinalStateUnknown: true},
		change.Event{Type: change.Added, Resource: configMaps, New: now})
	j.expect("while the addition waits for its user", "0 records, stored at 1")
	j.named(book, "create", "new", "5")
	j.expect("once named (the deletion and the addition, once each)", "2 records, stored at 5")
}
