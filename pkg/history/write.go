package history

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/journal"
	"github.com/kubediff/kubediff/pkg/record"
)

// maxTrim bounds how many records one write drops, so that a history far
// over its bound (a lowered maxBytes) shrinks over a few flushes instead
// of in one long transaction.
const maxTrim = 20000

// Write keeps entries and then drops what the policy no longer keeps, in
// the caller's transaction (the state store's flush). The first write
// with history on marks when the history begins: from then on every
// watched object's state is known.
func Write(tx *bolt.Tx, entries []journal.Entry, p Policy, now time.Time) error {
	if !p.On() && tx.Bucket(rootBucket) == nil {
		return nil
	}
	b, err := openBuckets(tx)
	if err != nil {
		return err
	}
	if p.On() && p.Outbox {
		if err := b.openOutbox(now); err != nil {
			return err
		}
	}
	if p.On() && b.meta.Get(beginKey) == nil {
		if err := b.meta.Put(beginKey, timeKey(now, 0)); err != nil {
			return err
		}
		if err := b.ship(Row{Kind: RowBegin, Key: timeKey(now, 0)}); err != nil {
			return err
		}
	}
	if len(entries) > 0 && p.On() {
		if err := b.append(entries); err != nil {
			return err
		}
	}
	return b.trim(p, now)
}

// buckets are the history's buckets in one transaction.
type buckets struct {
	root                                         *bolt.Bucket
	records, objects, after, before, types, meta *bolt.Bucket
	events, eventObjects, eventFold              *bolt.Bucket
	outbox                                       *bolt.Bucket // nil: no other store takes a copy
}

// openBuckets opens the history's buckets for writing, creating them.
func openBuckets(tx *bolt.Tx) (*buckets, error) {
	root, err := tx.CreateBucketIfNotExists(rootBucket)
	if err != nil {
		return nil, err
	}
	b := buckets{root: root}
	for _, x := range []struct {
		into **bolt.Bucket
		name []byte
	}{{&b.records, recordsBucket}, {&b.objects, objectsBucket}, {&b.after, afterBucket}, {&b.before, beforeBucket}, {&b.types, typesBucket}, {&b.meta, metaBucket},
		{&b.events, eventsBucket}, {&b.eventObjects, eventObjectsIndex}, {&b.eventFold, eventFoldBucket}} {
		bucket, err := root.CreateBucketIfNotExists(x.name)
		if err != nil {
			return nil, err
		}
		*x.into = bucket
	}
	// Keys by time come in order: filled pages, where bbolt's default
	// half-filled splits would double the file.
	for _, bucket := range []*bolt.Bucket{b.records, b.after, b.before, b.events} {
		bucket.FillPercent = 0.95
	}
	return &b, nil
}

// Forget drops the whole history (the state dir now watches another
// cluster). It begins again with the next write.
func Forget(tx *bolt.Tx) error {
	if tx.Bucket(rootBucket) == nil {
		return nil
	}
	return tx.DeleteBucket(rootBucket)
}

func (b *buckets) append(entries []journal.Entry) error {
	seq, size := b.counter(seqKey), int64(b.counter(bytesKey))
	for _, e := range entries {
		seq++
		// At the record's own precision: a moment copied from a printed
		// record (milliseconds) is at or after it, never just before.
		k := timeKey(time.Time(e.Change.Time).Truncate(time.Millisecond), seq)
		put := b.put
		if e.Change.Type == record.EventRecord {
			put = b.putEvent
		}
		n, err := put(e, k)
		if err != nil {
			return err
		}
		size += n
	}
	return b.setCounters(seq, size)
}

// put keeps one entry under key k and returns the bytes it takes.
func (b *buckets) put(e journal.Entry, k []byte) (int64, error) {
	id := ObjectOf(e.Change)
	var line []byte // a state kept alone has no record line
	if !e.StateOnly {
		var err error
		if line, err = json.Marshal(e.Change); err != nil {
			return 0, fmt.Errorf("history: encode record: %w", err)
		}
	}
	first := !b.hasEntries(id)
	var states [2][]byte // before (for an object's first record), after
	var err error
	if first && e.Old != nil {
		if states[0], err = packState(e.Old); err != nil {
			return 0, err
		}
	}
	switch {
	case e.New != nil && e.NewJSON != nil:
		states[1] = encoder.EncodeAll(e.NewJSON, nil)
	case e.New != nil:
		if states[1], err = packState(e.New); err != nil {
			return 0, err
		}
	}
	if err := b.ship(rowOf(e, k, line, states)); err != nil {
		return 0, err
	}
	value := append(append([]byte(id), 0), line...)
	puts := []struct {
		b    *bolt.Bucket
		k, v []byte
	}{{b.records, k, value}, {b.objects, indexKey(id, k), nil}, {b.before, k, states[0]}, {b.after, k, states[1]}}
	var size int64
	for _, p := range puts {
		if p.v == nil && p.b != b.objects {
			continue
		}
		if err := p.b.Put(p.k, p.v); err != nil {
			return 0, err
		}
		size += int64(len(p.k) + len(p.v))
	}
	return size, b.putType(e.Resource)
}

// hasEntries says whether an object has a kept record.
func (b *buckets) hasEntries(id change.ObjectID) bool {
	prefix := indexPrefix(id)
	k, _ := b.objects.Cursor().Seek(prefix)
	return k != nil && bytes.HasPrefix(k, prefix)
}

// putType keeps the names of the entry's type the first time it is seen.
func (b *buckets) putType(r change.Resource) error {
	key := typeKey(r.GVR.Group, r.GVR.Resource)
	if b.types.Get(key) != nil {
		return nil
	}
	v, err := json.Marshal(NamesOf(r))
	if err != nil {
		return err
	}
	if err := b.ship(Row{Kind: RowType, Object: change.ObjectID(key), Line: v}); err != nil {
		return err
	}
	return b.types.Put(key, v)
}

func (b *buckets) counter(key []byte) uint64 {
	if v := b.meta.Get(key); len(v) == 8 {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

func (b *buckets) setCounters(seq uint64, size int64) error {
	for _, c := range []struct {
		key []byte
		v   uint64
	}{{seqKey, seq}, {bytesKey, uint64(max(size, 0))}} {
		if err := b.meta.Put(c.key, binary.BigEndian.AppendUint64(nil, c.v)); err != nil {
			return err
		}
	}
	return nil
}

// WriteTypes keeps the names of the types watched, so that a type whose
// objects never changed is still found by name.
func WriteTypes(tx *bolt.Tx, types []change.Resource) error {
	b, err := openBuckets(tx)
	if err != nil {
		return err
	}
	b.outbox = b.root.Bucket(outboxBucket) // types are shipped while the outbox is
	for _, r := range types {
		if err := b.putType(r); err != nil {
			return err
		}
	}
	return nil
}

// rowOf is the outbox's row of a record (or a state kept alone) kept at
// k, its line and packed states as put keeps them.
func rowOf(e journal.Entry, k, line []byte, states [2][]byte) Row {
	r := Row{Kind: RowRecord, Key: k, ID: e.Change.ID, Object: change.ObjectID(idKey(ObjectOf(e.Change))), Line: line, Before: states[0], After: states[1]}
	if r.ID == "" {
		r.ID = e.Change.StableID()
	}
	if e.StateOnly {
		// No record, no record id: the shipper names it by its key.
		r.Kind, r.ID = RowState, ""
	}
	return r
}

// openOutbox opens the outbox, making it the first time: the other store
// then learns that its copy begins now (what was kept before is copied
// by an import) and every type kept so far.
func (b *buckets) openOutbox(now time.Time) error {
	if b.outbox = b.root.Bucket(outboxBucket); b.outbox != nil {
		return nil
	}
	var err error
	if b.outbox, err = b.root.CreateBucket(outboxBucket); err != nil {
		return err
	}
	if err := b.ship(Row{Kind: RowBegin, Key: timeKey(now, 0)}); err != nil {
		return err
	}
	return b.types.ForEach(func(k, v []byte) error {
		return b.ship(Row{Kind: RowType, Object: change.ObjectID(k), Line: v})
	})
}
