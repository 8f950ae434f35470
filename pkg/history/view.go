package history

import (
	"fmt"
	"runtime/debug"
	"time"

	bolt "go.etcd.io/bbolt"
)

// readBuckets are the history's buckets in a read transaction; nil
// buckets (nothing kept yet) read as empty ones.
type readBuckets struct {
	tx                                           *bolt.Tx
	records, objects, after, before, types, meta *bolt.Bucket
	events, eventObjects                         *bolt.Bucket // nil in a history kept before events were
	empty                                        bool         // history never started
}

// view runs fn in a read transaction. A damaged page makes bbolt panic:
// the query fails instead of the process.
func (r *Reader) view(fn func(*readBuckets) error) (err error) {
	if r.catchUp != nil {
		r.catchUp()
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("history: damaged database: %v", p)
		}
	}()
	return r.db.View(func(tx *bolt.Tx) error {
		root := tx.Bucket(rootBucket)
		if root == nil {
			return fn(emptyBuckets(tx))
		}
		b := &readBuckets{tx: tx}
		for _, x := range []struct {
			into **bolt.Bucket
			name []byte
		}{{&b.records, recordsBucket}, {&b.objects, objectsBucket}, {&b.after, afterBucket}, {&b.before, beforeBucket}, {&b.types, typesBucket}, {&b.meta, metaBucket}} {
			if *x.into = root.Bucket(x.name); *x.into == nil {
				return fn(emptyBuckets(tx))
			}
		}
		b.events, b.eventObjects = root.Bucket(eventsBucket), root.Bucket(eventObjectsIndex)
		return fn(b)
	})
}

// emptyBuckets stand for a history that holds nothing yet: an in-memory
// read of a bucket that does not exist would need a write.
func emptyBuckets(tx *bolt.Tx) *readBuckets {
	return &readBuckets{tx: tx, empty: true}
}

func (b *readBuckets) begin() time.Time {
	if b.empty {
		return time.Time{}
	}
	if v := b.meta.Get(beginKey); len(v) == 16 {
		return keyTime(v)
	}
	return time.Time{}
}
