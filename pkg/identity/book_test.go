package identity

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
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

// A user too big to keep names no one, and erases the name another
// note of the same write gives; groups past the bounds are left out.
func TestBookBoundsWhatAUserCosts(t *testing.T) {
	at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	write := func(id string, u record.User) Write {
		return Write{ID: id, Time: at, User: u, Verb: "update", Resource: "configmaps", Namespace: "a", Name: "b", UID: "u", ResourceVersion: "2"}
	}
	q := Query{Resource: "configmaps", Namespace: "a", Name: "b", UID: "u", Type: record.Updated, Hops: []Hop{{From: "1", To: "2"}}, Time: at}
	huge := record.User{Name: strings.Repeat("m", MaxUserNameBytes+1)}
	b := NewBook()
	b.Note(write("w1", huge))
	if u, a := b.Who(q); a != Ambiguous || u.Name != "" {
		t.Fatalf("a write by a name too long to keep: %q, %v; want no one, Ambiguous", u.Name, a)
	}
	b.Note(write("w2", NewUser("alice", nil)))
	if u, a := b.Who(q); a != Ambiguous || u.Name != "" {
		t.Fatalf("alice's note and an unnameable one for the same write: %q, %v; want no one", u.Name, a)
	}
	groups := make([]string, 0, 300)
	for i := range 300 {
		groups = append(groups, fmt.Sprintf("g%d", i))
	}
	groups[1] = strings.Repeat("x", MaxGroupNameBytes+1)
	got := BoundedUser(record.User{Name: "bob", Groups: groups, UserAgent: strings.Repeat("a", 10_000)})
	if got.Name != "bob" || len(got.Groups) != MaxGroups || got.Groups[1] != "g2" || len(got.UserAgent) != MaxUserAgentBytes {
		t.Fatalf("bounded: name %q, %d groups (second %q), agent of %d bytes", got.Name, len(got.Groups), got.Groups[1], len(got.UserAgent))
	}
}

// However big the notes, the Book keeps at most maxNotedBytes of them,
// the oldest dropped first; an ID of any length is kept in 32 bytes.
func TestBookKeepsAtMostItsBytes(t *testing.T) {
	b := NewBook()
	groups := make([]string, MaxGroups)
	for i := range groups {
		groups[i] = strings.Repeat("g", MaxGroupNameBytes-4) + fmt.Sprintf("%04d", i)
	}
	big := strings.Repeat("i", 900<<10)
	for i := range 8000 { // about 17 KiB each: twice the bound
		id := strconv.Itoa(i)
		if i%1000 == 999 {
			id = big + id
		}
		b.Note(Write{ID: id, User: NewUser(fmt.Sprintf("user-%d", i), groups), Verb: "update",
			Resource: "configmaps", Namespace: "a", Name: "b", UID: "u", ResourceVersion: strconv.Itoa(i)})
	}
	if b.bytes > maxNotedBytes || len(b.order) >= 8000 || len(b.order) == 0 {
		t.Fatalf("kept %d notes, %d bytes; want fewer than 8,000 within %d bytes", len(b.order), b.bytes, maxNotedBytes)
	}
	if newest := b.order[len(b.order)-1]; newest.User.Name != "user-7999" || len(newest.ID) != 32 {
		t.Fatalf("the newest note kept is %q with an id of %d bytes", newest.User.Name, len(newest.ID))
	}
}

// At its bound of writes, noting one drops one: what a note costs does
// not grow with what the Book holds (it copied all 100,000 before, a
// 1.5 s lock for each of a burst of notes).
func TestBookNotesInConstantWorkAtItsBound(t *testing.T) {
	b := NewBook()
	note := func(i int) {
		b.Note(Write{ID: strconv.Itoa(i), User: NewUser("alice", nil), Verb: "update", Resource: "configmaps", Namespace: "a",
			Name: "b", UID: "u", ResourceVersion: strconv.Itoa(i)})
	}
	for i := range maxWrites + 10 {
		note(i)
	}
	i := maxWrites + 10
	perNote := testing.AllocsPerRun(200, func() { i++; note(i) })
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 200 {
		i++
		note(i)
	}
	runtime.ReadMemStats(&after)
	if bytes := (after.TotalAlloc - before.TotalAlloc) / 200; bytes > 4096 || perNote > 20 {
		t.Fatalf("a note at the bound allocates %d bytes in %.0f allocations; want a few hundred bytes, as in an empty Book", bytes, perNote)
	}
	if len(b.order) != maxWrites || len(b.byKey) > 2*maxWrites {
		t.Fatalf("kept %d writes, %d keys", len(b.order), len(b.byKey))
	}
}
