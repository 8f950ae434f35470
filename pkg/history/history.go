// Package history keeps every record kubediff emits, with the states of
// the object before and after it, in the state dir's database, so that
// what changed before an incident can be asked after the fact: the
// records of a window, an object as kubediff had it at any moment, and
// the difference between two moments.
//
// It lives in the state store's bbolt file and is written by the state
// store's flush, in the transaction that writes the objects' states and
// the sinks' queues: a crash never leaves a record without its state, or
// a state without its record. bbolt never shrinks its file, but it reuses
// the pages that retention frees, so a history trimmed as it grows holds
// the file near its high-water mark (measured in docs/benchmarks.md).
//
// Layout, in the bucket "history":
//
//	records  time|seq            → object id \x00 record JSON
//	objects  object id \x00 time|seq → (nothing: an index)
//	after    time|seq            → the object's state after the record (zstd JSON; none for a deletion)
//	before   time|seq            → its state before, for an object's oldest kept record
//	types    group/resource      → the type's names, to resolve kubectl's names without a cluster
//	meta     bytes, seq, begin, eventBytes
//	events   time|seq            → reason \x01 object id [\x01 owner id …] \x00 event record JSON (events.go)
//	eventobjects  object id \x00 time|seq → the regarding object's id (an index, under the object and each owner)
//	eventfold     object id \x00 reason → time|seq, the Event object's count and name (the entry a repeat folds into)
//
// time|seq is the record's time in Unix nanoseconds and a sequence
// number, both big-endian: keys sort by time, records of one instant in
// the order they were kept.
package history

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"time"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/record"
)

// Policy bounds what is kept: records older than Retention, and the
// oldest records while the history holds more than MaxBytes, are dropped.
// Either zero turns history off (what is kept is then dropped).
type Policy struct {
	Retention time.Duration
	MaxBytes  int64
	// EventRetention bounds how long events (record.EventRecord) are kept
	// after they last happened (0: Retention).
	EventRetention time.Duration
	// Outbox keeps a copy of each entry kept for another store (the
	// PostgreSQL history) in the outbox, until that store has it.
	Outbox bool
}

// eventRetention is how long events are kept.
func (p Policy) eventRetention() time.Duration {
	if p.EventRetention > 0 {
		return min(p.EventRetention, p.Retention)
	}
	return p.Retention
}

// On says whether records are kept at all.
func (p Policy) On() bool { return p.Retention > 0 && p.MaxBytes > 0 }

var (
	rootBucket    = []byte("history")
	recordsBucket = []byte("records")
	objectsBucket = []byte("objects")
	afterBucket   = []byte("after")
	beforeBucket  = []byte("before")
	typesBucket   = []byte("types")
	metaBucket    = []byte("meta")
	bytesKey      = []byte("bytes")
	seqKey        = []byte("seq")
	beginKey      = []byte("begin")
	// Events (events.go).
	eventsBucket      = []byte("events")
	eventObjectsIndex = []byte("eventobjects")
	eventFoldBucket   = []byte("eventfold")
	eventBytesKey     = []byte("eventBytes")
)

// ObjectOf is the id of the record's object.
func ObjectOf(c record.Change) change.ObjectID {
	return change.NewObjectID(c.Group(), c.Resource, c.Namespace, c.Name)
}

// typeKey is the record's type in the types bucket: group/resource.
func typeKey(group, resource string) []byte { return []byte(group + "/" + resource) }

// timeKey is time|seq; times before 1970 (the zero time: unbounded)
// count as 1970.
func timeKey(t time.Time, seq uint64) []byte {
	k := make([]byte, 16)
	if t.After(time.Unix(0, 0)) {
		binary.BigEndian.PutUint64(k, uint64(t.UnixNano()))
	}
	binary.BigEndian.PutUint64(k[8:], seq)
	return k
}

// keyTime reads the time of a time|seq key.
func keyTime(k []byte) time.Time {
	return time.Unix(0, int64(binary.BigEndian.Uint64(k[:8]))).UTC()
}

// indexKey is an object's entry in the objects index.
func indexKey(id change.ObjectID, k []byte) []byte {
	return append(indexPrefix(id), k...)
}

// indexPrefix starts every index key of the object: its id as a key
// (idKey), then \x00.
func indexPrefix(id change.ObjectID) []byte { return append(idKey(id), 0) }

// maxKeyPart bounds a part of a key that a user chooses: an object's name
// (an Event's regarding, which the API server does not validate, or the
// name of a type validated only as a path segment) and an Event's reason
// (core v1 does not bound it). bbolt refuses a key over 32 KiB, and one
// refused key fails the whole write: every later record would be lost.
const maxKeyPart = 512

// idKey is an object's id as it stands in a key: the id itself, unless its
// name is longer than maxKeyPart or holds a \x00 (the keys' separator);
// then the name is cut and a hash of it added (keyPart). The group,
// resource and namespace stay whole (the server validates them), so that
// scans by type and namespace still find it; every write and read of the
// object computes the same key.
func idKey(id change.ObjectID) []byte {
	group, resource, namespace, name := id.Parts()
	if safePart(name) {
		return []byte(id)
	}
	return []byte(group + "/" + resource + "/" + namespace + "/" + keyPart(name))
}

// safePart says whether s stands in a key as it is.
func safePart(s string) bool {
	return len(s) <= maxKeyPart && !strings.ContainsAny(s, "\x00\x01")
}

// keyPart is s as a part of a key: s when safePart, else its first bytes
// (a person still recognizes it), "~sha256:" and the hash of the whole,
// maxKeyPart bytes at most and without \x00 or \x01. It is its own
// keyPart, so that a part read back from a value maps to the same key.
func keyPart(s string) string {
	if safePart(s) {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	tail := "~sha256:" + hex.EncodeToString(sum[:])
	head := strings.Map(func(r rune) rune {
		if r == 0 || r == 1 {
			return '?'
		}
		return r
	}, s[:min(len(s), 128)])
	return head + tail
}
