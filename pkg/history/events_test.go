package history

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/journal"
	"github.com/kubediff/kubediff/pkg/record"
)

var (
	replicaSets = change.Resource{GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}, Kind: "ReplicaSet", Namespaced: true}
	webID       = change.NewObjectID("apps", "deployments", "default", "web")
)

// eventOf is an Event about ReplicaSet default/web-1 (owned by
// Deployment web) of the Event object name, counted count, last at
// t0+second.
func eventOf(name, reason string, count, second int) journal.Entry {
	at := record.Timestamp(t0.Add(time.Duration(second) * time.Second))
	c := record.Change{Time: at, Type: record.EventRecord, APIVersion: "apps/v1", Kind: "ReplicaSet", Resource: "replicasets",
		Namespace: "default", Name: "web-1", UID: "uid-rs", ResourceVersion: "100",
		Event: &record.Event{Reason: reason, Type: record.EventWarning, Message: "exceeded quota", Count: count, First: record.Timestamp(t0), Last: at, Name: name, Namespace: "default"}}
	return journal.Entry{Change: c, Resource: replicaSets, Owners: []change.ObjectID{webID}}
}

func events(t *testing.T, r *Reader, q Query) []record.Event {
	t.Helper()
	page, err := r.Records(q)
	if err != nil {
		t.Fatal(err)
	}
	var out []record.Event
	for _, raw := range page.Records {
		var c record.Change
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatal(err)
		}
		if c.Event != nil {
			out = append(out, *c.Event)
		}
	}
	return out
}

func TestEventsFoldPerObjectAndReason(t *testing.T) {
	db := openDB(t)
	// One Event object counting up 1 → 3, another of the same reason
	// (counted 2), and another reason.
	write(t, db, unlimited, t0, eventOf("a", "FailedCreate", 1, 1), eventOf("a", "FailedCreate", 2, 2))
	write(t, db, unlimited, t0, eventOf("a", "FailedCreate", 3, 3), eventOf("b", "FailedCreate", 2, 4), eventOf("c", "SuccessfulCreate", 1, 5))
	got := events(t, reader(db), Query{})
	if len(got) != 2 || got[0].Reason != "FailedCreate" || got[0].Count != 5 || got[1].Reason != "SuccessfulCreate" {
		t.Fatalf("events kept: %+v, want FailedCreate ×5 then SuccessfulCreate", got)
	}
	if time.Time(got[0].Last) != t0.Add(4*time.Second) || time.Time(got[0].First) != t0 {
		t.Errorf("folded event's times: %s … %s", got[0].First, got[0].Last)
	}
	stats, err := reader(db).Stats()
	if err != nil {
		t.Fatal(err)
	}
	if stats.Events != 2 || stats.EventBytes <= 0 || stats.Bytes < stats.EventBytes {
		t.Errorf("stats %+v: want 2 events counted in the bytes", stats)
	}
}

func TestEventsListedUnderTheirOwnersAndBehindAccess(t *testing.T) {
	db := openDB(t)
	write(t, db, unlimited, t0, entryOf("default", "", "1", 0), eventOf("a", "FailedCreate", 1, 30))
	r := reader(db)
	deploy := Query{Namespace: "default", Select: []Selector{{Group: "apps", Resource: "deployments", Name: "web"}}}
	if got := events(t, r, deploy); len(got) != 1 {
		t.Fatalf("the Deployment's history holds %d events of its ReplicaSet, want 1", len(got))
	}
	scopes, err := r.Scopes(deploy)
	if err != nil {
		t.Fatal(err)
	}
	want := map[Scope]bool{{"apps", "deployments", "default"}: true, {"apps", "replicasets", "default"}: true, {"", "events", "default"}: true}
	if len(scopes) != len(want) {
		t.Errorf("scopes %v, want %v", scopes, want)
	}
	for _, s := range scopes {
		if !want[s] {
			t.Errorf("scope %v not wanted", s)
		}
	}
	for _, tc := range []struct {
		name   string
		grants []Scope
		want   int
	}{
		{"every scope", []Scope{{"apps", "deployments", ""}, {"apps", "replicasets", "default"}, {"", "events", "default"}}, 1},
		{"no events", []Scope{{"apps", "deployments", ""}, {"apps", "replicasets", "default"}}, 0},
		{"not the ReplicaSets", []Scope{{"apps", "deployments", ""}, {"", "events", ""}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &Grants{}
			for _, s := range tc.grants {
				g.Grant(s)
			}
			q := deploy
			q.Visible = g
			if got := events(t, r, q); len(got) != tc.want {
				t.Errorf("%d events seen, want %d", len(got), tc.want)
			}
		})
	}
	// The whole history lists the ConfigMap's record, then the event.
	page, err := r.Records(Query{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Records) != 2 {
		t.Fatalf("%d entries, want the record and the event", len(page.Records))
	}
}

func TestEventsHaveTheirOwnRetentionAndCountInTheBound(t *testing.T) {
	db := openDB(t)
	p := unlimited
	p.EventRetention = time.Hour
	write(t, db, p, t0, entryOf("default", "", "1", 0), eventOf("a", "FailedCreate", 1, 10))
	write(t, db, p, t0.Add(2*time.Hour))
	stats, err := reader(db).Stats()
	if err != nil {
		t.Fatal(err)
	}
	if stats.Events != 0 || stats.Records != 1 || stats.EventBytes != 0 {
		t.Fatalf("after the events' retention: %+v, want the record alone", stats)
	}
	// A bound the event alone fills: the older record goes first, then
	// the event; a new occurrence starts a new entry.
	write(t, db, p, t0.Add(2*time.Hour), eventOf("a", "FailedCreate", 2, 7200))
	small := p
	small.MaxBytes = 1
	write(t, db, small, t0.Add(2*time.Hour))
	if stats, _ = reader(db).Stats(); stats.Events != 0 || stats.Records != 0 || stats.Bytes != 0 {
		t.Errorf("over the bound: %+v, want nothing left", stats)
	}
}

// A reason or a name over bbolt's key limit (32 KiB: a core v1 Event's
// reason is not bounded, nor is the name an Event's regarding gives) is
// kept under a shortened key: the write does not fail, the history goes
// on, and the entry still folds its repeats and is dropped whole.
func TestKeysTooLargeForTheStoreAreShortened(t *testing.T) {
	db := openDB(t)
	long := strings.Repeat("R", 40<<10)
	write(t, db, unlimited, t0, eventOf("a", long, 1, 1))
	write(t, db, unlimited, t0, eventOf("a", long, 3, 2), eventOf("b", "With\x00Nul\x01Byte", 1, 3))
	longName := eventOf("c", "FailedCreate", 1, 4)
	longName.Change.Name = strings.Repeat("n", 40<<10)
	write(t, db, unlimited, t0, longName, entryOf("default", "", "after", 5))
	r := reader(db)
	got := events(t, r, Query{})
	if len(got) != 3 || got[0].Reason != long || got[0].Count != 3 {
		t.Fatalf("%d events kept, the first %q… ×%d; want 3, the long reason folded ×3", len(got), got[0].Reason[:min(len(got[0].Reason), 10)], got[0].Count)
	}
	if level, err := levelAt(t, r, settingsID, 6); err != nil || level != "after" {
		t.Fatalf("the change after the events: %q, %v", level, err)
	}
	if got := changesOf(t, r, Query{Namespace: "default", Select: []Selector{{Group: "apps", Resource: "replicasets", Name: longName.Change.Name}}}); len(got) != 1 {
		t.Errorf("the object of the long name has %d events, want 1", len(got))
	}
	small := unlimited
	small.EventRetention = time.Millisecond
	write(t, db, small, t0.Add(time.Hour))
	if stats, _ := reader(db).Stats(); stats.Events != 0 || stats.EventBytes != 0 || stats.Records != 1 {
		t.Errorf("after the events' retention: %+v, want the record alone", stats)
	}
	err := db.View(func(tx *bolt.Tx) error {
		root := tx.Bucket(rootBucket)
		for _, name := range [][]byte{eventFoldBucket, eventObjectsIndex} {
			if k, _ := root.Bucket(name).Cursor().First(); k != nil {
				t.Errorf("%s still holds %q", name, k[:min(len(k), 80)])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
