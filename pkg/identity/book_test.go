package identity

import (
	"testing"
	"time"

	"github.com/kubediff/kubediff/pkg/record"
)

func TestBookJoinsWritesToRecords(t *testing.T) {
	at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	alice, bob := NewUser("alice", []string{"dev"}), NewUser("system:serviceaccount:ci:deployer", nil)
	scale := func(id, user string, from, to string, audit bool) Write {
		w := Write{ID: id, Time: at, User: NewUser(user, nil), Verb: "patch", Group: "apps", Resource: "deployments",
			Subresource: "scale", Namespace: "shop", Name: "web", UID: "u1"}
		if audit {
			w.ResourceVersion = to // an audit event's response object
		} else {
			w.PreviousResourceVersion = from // an admission request's old object
		}
		return w
	}
	update := func(from, to string) Query {
		return Query{Group: "apps", Resource: "deployments", Namespace: "shop", Name: "web", UID: "u1", Type: record.Updated,
			Hops: []Hop{{From: from, To: to}}, Time: at}
	}
	secret := Query{Resource: "secrets", Namespace: "shop", Name: "db", UID: "s1", Type: record.Updated, Hops: []Hop{{From: "5", To: "6"}}, Time: at}
	secretWrite := func(id, user string, when time.Time) Write {
		return Write{ID: id, Time: when, User: NewUser(user, nil), Verb: "update", Resource: "secrets", Namespace: "shop", Name: "db"}
	}
	tests := []struct {
		name   string
		writes []Write
		query  Query
		want   Answer
		user   string
	}{
		{"audit: by the version the write produced", []Write{scale("a1", "alice", "", "11", true), scale("a2", "bob", "", "12", true)}, update("10", "11"), Known, "alice"},
		{"admission: by the version the write replaced", []Write{scale("r1", "alice", "10", "", false), scale("r2", "bob", "11", "", false)}, update("11", "12"), Known, "bob"},
		{"the repeated scale is its own write", []Write{scale("a1", "alice", "", "11", true), scale("a2", "alice", "", "13", true)}, update("12", "13"), Known, "alice"},
		{"not noted yet", []Write{scale("a1", "alice", "", "11", true)}, update("11", "12"), Unknown, ""},
		{"a joined record: every write by one user", []Write{scale("a1", "alice", "", "11", true), scale("a2", "alice", "", "12", true)},
			Query{Group: "apps", Resource: "deployments", Namespace: "shop", Name: "web", UID: "u1", Type: record.Updated, Hops: []Hop{{"10", "11"}, {"11", "12"}}, Time: at}, Known, "alice"},
		{"a joined record: two users, none named", []Write{scale("a1", "alice", "", "11", true), scale("a2", "bob", "", "12", true)},
			Query{Group: "apps", Resource: "deployments", Namespace: "shop", Name: "web", UID: "u1", Type: record.Updated, Hops: []Hop{{"10", "11"}, {"11", "12"}}, Time: at}, Ambiguous, ""},
		{"a joined record: one write not noted", []Write{scale("a1", "alice", "", "11", true)},
			Query{Group: "apps", Resource: "deployments", Namespace: "shop", Name: "web", UID: "u1", Type: record.Updated, Hops: []Hop{{"10", "11"}, {"11", "12"}}, Time: at}, Unknown, ""},
		{"an admitted write that never happened meets the one that did", []Write{scale("r1", "alice", "10", "", false), scale("r2", "bob", "10", "", false)}, update("10", "11"), Ambiguous, ""},
		{"no uid or version: one write to the object near the time", []Write{secretWrite("s1", "alice", at.Add(-time.Second))}, secret, Known, "alice"},
		{"no uid or version: two users near the time", []Write{secretWrite("s1", "alice", at.Add(-time.Second)), secretWrite("s2", "bob", at)}, secret, Ambiguous, ""},
		{"no uid or version: too long before", []Write{secretWrite("s1", "alice", at.Add(-time.Minute))}, secret, Unknown, ""},
		{"a delete by the object's uid", []Write{{ID: "d1", Time: at, User: bob, Verb: "delete", Group: "apps", Resource: "deployments", Namespace: "shop", Name: "web", UID: "u1", ResourceVersion: "11"},
			{ID: "u", Time: at, User: alice, Verb: "update", Group: "apps", Resource: "deployments", Namespace: "shop", Name: "web", UID: "u1", ResourceVersion: "11"}},
			Query{Group: "apps", Resource: "deployments", Namespace: "shop", Name: "web", UID: "u1", Type: record.Deleted, Hops: []Hop{{"11", "14"}}, Time: at}, Known, "system:serviceaccount:ci:deployer"},
		{"the delete's response does not claim the update before it", []Write{{ID: "d1", Time: at, User: bob, Verb: "delete", Group: "apps", Resource: "deployments", Namespace: "shop", Name: "web", UID: "u1", ResourceVersion: "11"},
			{ID: "u", Time: at, User: alice, Verb: "update", Group: "apps", Resource: "deployments", Namespace: "shop", Name: "web", UID: "u1", ResourceVersion: "11"}},
			update("10", "11"), Known, "alice"},
		{"a create by uid", []Write{{ID: "c1", Time: at, User: alice, Verb: "create", Resource: "configmaps", Namespace: "shop", Name: "cm", UID: "c"}},
			Query{Resource: "configmaps", Namespace: "shop", Name: "cm", UID: "c", Type: record.Added, Hops: []Hop{{To: "3"}}, Time: at}, Known, "alice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBook()
			b.now = func() time.Time { return at.Add(time.Minute) } // joins by time have settled
			for _, w := range tt.writes {
				b.Note(w)
			}
			u, got := b.Who(tt.query)
			if got != tt.want || u.Name != tt.user {
				t.Fatalf("Who = %q, %v; want %q, %v", u.Name, got, tt.user, tt.want)
			}
		})
	}
}

func TestBookCountsAReplayedWriteOnceAndForgetsOldOnes(t *testing.T) {
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	b := NewBook()
	b.now = func() time.Time { return now }
	w := Write{ID: "audit-1", User: NewUser("alice", nil), Verb: "update", Resource: "configmaps", Namespace: "a", Name: "b", UID: "u", ResourceVersion: "2"}
	b.Note(w)
	forged := w
	forged.User = NewUser("mallory", nil) // a replay of the same audit ID cannot rewrite who
	b.Note(forged)
	q := Query{Resource: "configmaps", Namespace: "a", Name: "b", UID: "u", Type: record.Updated, Hops: []Hop{{"1", "2"}}, Time: now}
	if u, a := b.Who(q); a != Known || u.Name != "alice" {
		t.Fatalf("after a replay: %q %v, want alice", u.Name, a)
	}
	now = now.Add(keepWrites + time.Second)
	b.Note(Write{ID: "audit-2", User: NewUser("bob", nil), Verb: "update", Resource: "configmaps", Namespace: "a", Name: "c", UID: "v", ResourceVersion: "3"})
	if _, a := b.Who(q); a != Unknown {
		t.Fatalf("a write older than %s still answers: %v", keepWrites, a)
	}
	if len(b.order) != 1 || len(b.byKey) != 1 || len(b.seen) != 1 {
		t.Fatalf("expired writes still held: %d in order, %d keys, %d ids", len(b.order), len(b.byKey), len(b.seen))
	}
}

func TestNewUserNamesAServiceAccount(t *testing.T) {
	u := NewUser("system:serviceaccount:ci:deployer", []string{"system:serviceaccounts"})
	if u.ServiceAccount == nil || u.ServiceAccount.Namespace != "ci" || u.ServiceAccount.Name != "deployer" {
		t.Fatalf("service account = %+v", u.ServiceAccount)
	}
	if NewUser("alice", nil).ServiceAccount != nil {
		t.Fatal("alice is not a service account")
	}
}

func TestBookJoinsByObjectAndTimeOnlyWhenNoOtherWriteCanBeIt(t *testing.T) {
	at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	now := at
	b := NewBook()
	b.now = func() time.Time { return now }
	write := func(id, user string, when time.Time) {
		b.Note(Write{ID: id, Time: when, User: NewUser(user, nil), Verb: "patch", Resource: "secrets", Namespace: "shop", Name: "db"})
	}
	record := func(rv string, when time.Time) Query {
		return Query{Resource: "secrets", Namespace: "shop", Name: "db", UID: "s1", Type: record.Updated, Hops: []Hop{{To: rv}}, Time: when}
	}
	write("a", "alice", at.Add(-10*time.Millisecond))
	first := record("6", at)
	if _, a := b.Who(first); a != Unknown {
		t.Fatalf("right after the record: %v, want Unknown (another write near it may still come)", a)
	}
	now = at.Add(nearbySettle)
	if u, a := b.Who(first); a != Known || u.Name != "alice" {
		t.Fatalf("once settled: %q %v, want alice", u.Name, a)
	}
	// bob's write was lost: the next record finds alice's write, which
	// made the first, and must not take it.
	second := record("7", at.Add(time.Second))
	now = at.Add(time.Second + nearbySettle)
	if u, a := b.Who(second); a != Unknown {
		t.Fatalf("a record whose write was never noted: %q %v, want Unknown", u.Name, a)
	}
	// A write stamped well after a record is a later record's.
	write("c", "carol", at.Add(5*time.Second))
	third := record("8", at.Add(4*time.Second))
	now = at.Add(10 * time.Second)
	if u, a := b.Who(third); a != Unknown {
		t.Fatalf("a write stamped after the record: %q %v, want Unknown", u.Name, a)
	}
	if u, a := b.Who(first); a != Known || u.Name != "alice" {
		t.Fatalf("asked again, the first record: %q %v, want alice", u.Name, a)
	}
}
