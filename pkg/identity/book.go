package identity

import (
	"slices"
	"sync"
	"time"

	"github.com/kubediff/kubediff/pkg/record"
)

const (
	// keepWrites is how long a noted write waits to be joined: the
	// coalescer holds a controller's updates up to 12 s before their
	// record is made, and a record waits for its writes at most
	// identity.wait (at most a minute) after that.
	keepWrites = 2 * time.Minute
	// maxWrites bounds the writes kept (writes to types or namespaces
	// kubediff does not watch are noted too and never joined): about
	// 300 bytes each.
	maxWrites = 100_000
	// maxNotedBytes bounds what the kept writes' strings hold: a user
	// with many groups makes a note far bigger than 300 bytes.
	maxNotedBytes = 64 << 20
	// nearby is how far a write's time may be from its record's when the
	// source had neither uid nor resourceVersion (a Secret audited at
	// Metadata level). The audit event is stamped when the response
	// completes, just after the write is stored, so before the watch
	// delivers the change (or a little after, on a loaded server, or by
	// the clocks' skew): a write stamped later than nearbyAfter after the
	// record is another record's.
	nearbyBefore = 10 * time.Second
	nearbyAfter  = 250 * time.Millisecond
	// nearbySettle is how long after its record such a match is final:
	// writes stamped up to nearbyAfter after it have then been noted (the
	// audit webhook's batches come a second apart), so a second user's
	// write near the same moment is not missed.
	nearbySettle = nearbyAfter + 1500*time.Millisecond
)

// Hop is one write a record covers: from the version it replaced to the
// version it produced. A create has no From; a deletion seen only after a
// gap has no To.
type Hop struct{ From, To string }

// Query is what a record knows of the writes it reports.
type Query struct {
	Group, Resource, Namespace, Name, UID string
	// Type is the record's type: added, updated or deleted.
	Type string
	// Hops are the writes the record covers, oldest first: one for most
	// records, several when the coalescer joined a controller's steps.
	Hops []Hop
	// Time is when the record was seen.
	Time time.Time
}

// Answer is what the Book can say of a query.
type Answer int

const (
	// Unknown is the answer while no source has noted the write.
	Unknown Answer = iota
	// Known is the answer when every write the record covers was noted,
	// all by one user.
	Known
	// Ambiguous is the answer when the writes were noted but by different
	// users (or a write's keys match notes of several users): no user is
	// named, and waiting longer would not change that.
	Ambiguous
)

// Book joins the writes sources note to the records the watch makes. It
// is safe for concurrent use.
type Book struct {
	mu     sync.Mutex
	now    func() time.Time
	byKey  map[key][]*noted
	order  []*noted // arrival order, for expiry; oldest first
	bytes  int      // the kept writes' sizes
	seen   map[string]bool
	signal chan struct{}
}

type noted struct {
	Write
	at   time.Time
	size int
	keys []key
	// claimedBy is the record (uid/resourceVersion) a write found by its
	// object and time was joined to: it makes no other record.
	claimedBy string
}

// key is one way a record finds a write.
type key struct {
	kind                         keyKind
	uid, version                 string
	group, resource, ns, name, v string
}

type keyKind uint8

const (
	produced keyKind = iota // uid + the version the write produced
	replaced                // uid + the version the write replaced
	created                 // uid of an object created
	deleted                 // uid of an object deleted
	object                  // group/resource/namespace/name + verb class, for writes without uid and version
)

// NewBook returns an empty Book.
func NewBook() *Book {
	return &Book{now: time.Now, byKey: map[key][]*noted{}, seen: map[string]bool{}, signal: make(chan struct{}, 1)}
}

// Noted is signalled after writes are noted, for a stage waiting for
// them; one signal may stand for several writes.
func (b *Book) Noted() <-chan struct{} { return b.signal }

// Note keeps w to be joined. A write whose ID was noted already (the same
// audit event from the webhook and the log, or a replayed post) counts
// once.
func (b *Book) Note(w Write) {
	w.ID = boundedID(w.ID)
	w.User = BoundedUser(w.User)
	n := &noted{Write: w, keys: keysOf(w), size: sizeOf(w)}
	if len(n.keys) == 0 {
		return
	}
	b.mu.Lock()
	n.at = b.now()
	if w.ID != "" && b.seen[w.ID] {
		b.mu.Unlock()
		return
	}
	b.expire(n.at, n.size)
	if w.ID != "" {
		b.seen[w.ID] = true
	}
	b.bytes += n.size
	b.order = append(b.order, n)
	for _, k := range n.keys {
		b.byKey[k] = append(b.byKey[k], n)
	}
	b.mu.Unlock()
	select {
	case b.signal <- struct{}{}:
	default:
	}
}

// keysOf are the keys a write can be found by: the precise ones its
// source gave, else its object and verb.
func keysOf(w Write) []key {
	var keys []key
	if w.UID != "" {
		// A delete's response may carry the version it removed, which
		// the write before it produced: it is found by its uid instead.
		if w.ResourceVersion != "" && verbClass(w.Verb) != record.Deleted {
			keys = append(keys, key{kind: produced, uid: w.UID, version: w.ResourceVersion})
		}
		switch w.Verb {
		case "create":
			keys = append(keys, key{kind: created, uid: w.UID})
		case "delete":
			keys = append(keys, key{kind: deleted, uid: w.UID})
		}
		if w.PreviousResourceVersion != "" && w.Verb != "create" {
			keys = append(keys, key{kind: replaced, uid: w.UID, version: w.PreviousResourceVersion})
		}
	}
	if len(keys) == 0 && w.Resource != "" && w.Name != "" {
		keys = append(keys, key{kind: object, group: w.Group, resource: w.Resource, ns: w.Namespace, name: w.Name, v: verbClass(w.Verb)})
	}
	return keys
}

// verbClass is the record type a verb makes: patch and update both
// update (a delete can update too, when finalizers hold the object; the
// deleted key finds those).
func verbClass(verb string) string {
	switch verb {
	case "create":
		return record.Added
	case "delete", "deletecollection":
		return record.Deleted
	}
	return record.Updated
}

// expire drops writes older than keepWrites, and the oldest beyond
// maxWrites or maxNotedBytes, to make room for a write of size bytes.
// Its cost is the writes dropped, not the writes kept: at its bounds the
// Book drops one write per write noted. The caller holds mu.
func (b *Book) expire(now time.Time, size int) {
	drop := 0
	for drop < len(b.order) && (now.Sub(b.order[drop].at) > keepWrites || len(b.order)-drop >= maxWrites || b.bytes+size > maxNotedBytes) {
		b.forget(b.order[drop])
		b.order[drop] = nil
		drop++
	}
	// The array's dropped head is freed when append next grows it.
	b.order = b.order[drop:]
}

// forget drops n from the indexes. The oldest write is first in each of
// its keys' lists, so that dropping it costs no search.
func (b *Book) forget(n *noted) {
	delete(b.seen, n.ID)
	b.bytes -= n.size
	for _, k := range n.keys {
		list := b.byKey[k]
		for i, m := range list {
			switch {
			case m != n:
				continue
			case i == 0:
				list = list[1:]
			default:
				list = slices.Delete(list, i, i+1)
			}
			break
		}
		if len(list) == 0 {
			delete(b.byKey, k)
		} else {
			b.byKey[k] = list
		}
	}
}

// Who says who made the writes q covers: the user when every write was
// noted and all by one user.
func (b *Book) Who(q Query) (record.User, Answer) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var user *record.User
	answer := Known
	for _, hop := range q.Hops {
		u, a := b.hopUser(q, hop)
		switch {
		case a == Ambiguous, a == Known && user != nil && u.Name != user.Name:
			return record.User{}, Ambiguous
		case a == Unknown:
			answer = Unknown
		case user == nil:
			user = &u
		}
	}
	if answer != Known || user == nil {
		return record.User{}, Unknown
	}
	return *user, Known
}

// hopUser is the user of one write: from the keys its source gave, else
// from writes to the object near the record's time. The caller holds mu.
func (b *Book) hopUser(q Query, hop Hop) (record.User, Answer) {
	var found []*noted
	if q.UID != "" {
		if hop.To != "" && q.Type != record.Deleted {
			found = append(found, b.byKey[key{kind: produced, uid: q.UID, version: hop.To}]...)
		}
		if hop.From != "" && q.Type != record.Added {
			found = append(found, b.byKey[key{kind: replaced, uid: q.UID, version: hop.From}]...)
		}
		switch q.Type {
		case record.Added:
			found = append(found, b.byKey[key{kind: created, uid: q.UID}]...)
		case record.Deleted:
			found = append(found, b.byKey[key{kind: deleted, uid: q.UID}]...)
		}
	}
	if len(found) > 0 {
		return oneUser(found)
	}
	return b.nearbyUser(q, hop)
}

// nearbyUser is the user of the one write to q's object near its time
// that no other record was joined to, once no other can come. The
// caller holds mu.
func (b *Book) nearbyUser(q Query, hop Hop) (record.User, Answer) {
	claim := q.UID + "/" + hop.To
	var found []*noted
	for _, n := range b.byKey[key{kind: object, group: q.Group, resource: q.Resource, ns: q.Namespace, name: q.Name, v: q.Type}] {
		near := n.Time.After(q.Time.Add(-nearbyBefore)) && n.Time.Before(q.Time.Add(nearbyAfter))
		if near && (n.claimedBy == "" || n.claimedBy == claim) {
			found = append(found, n)
		}
	}
	user, answer := oneUser(found)
	if answer == Known && b.now().Before(q.Time.Add(nearbySettle)) {
		return record.User{}, Unknown // a second user's write may still come
	}
	if answer == Known {
		for _, n := range found {
			n.claimedBy = claim
		}
	}
	return user, answer
}

// oneUser is the user all of found name, Ambiguous when they differ.
func oneUser(found []*noted) (record.User, Answer) {
	if len(found) == 0 {
		return record.User{}, Unknown
	}
	for _, n := range found[1:] {
		if n.User.Name != found[0].User.Name {
			return record.User{}, Ambiguous
		}
	}
	if found[0].User.Name == "" {
		return record.User{}, Ambiguous // a write by a user too long to keep
	}
	return found[0].User, Known
}
