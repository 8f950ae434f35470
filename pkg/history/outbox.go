package history

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// The outbox holds, in write order, a Row for each entry the history
// keeps while another store is to have a copy (Policy.Outbox): the state
// dir is its spool. It is written in the transaction that keeps the
// entries, so a row is never lost nor made twice by a crash; the store's
// shipper reads it in order and drops what the other store committed.
// Rows keep their own copies of the states, so that retention in the
// state dir never takes what is still to be shipped.
var (
	outboxBucket = []byte("outbox")
	outboxSeqKey = []byte("outboxSeq")
)

// outbox appends rows to the outbox when b writes one.
func (b *buckets) ship(r Row) error {
	if b.outbox == nil {
		return nil
	}
	v, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("history: encode outbox row: %w", err)
	}
	seq := b.counter(outboxSeqKey) + 1
	if err := b.meta.Put(outboxSeqKey, binary.BigEndian.AppendUint64(nil, seq)); err != nil {
		return err
	}
	return b.outbox.Put(binary.BigEndian.AppendUint64(nil, seq), v)
}

// ReadOutbox returns up to max rows of the outbox, oldest first, and the
// outbox key of the last (nil: none).
func ReadOutbox(tx *bolt.Tx, max int) (rows []Row, last []byte, err error) {
	root := tx.Bucket(rootBucket)
	if root == nil || root.Bucket(outboxBucket) == nil {
		return nil, nil, nil
	}
	c := root.Bucket(outboxBucket).Cursor()
	for k, v := c.First(); k != nil && len(rows) < max; k, v = c.Next() {
		var r Row
		if err := json.Unmarshal(v, &r); err != nil {
			return nil, nil, fmt.Errorf("history: outbox row %x: %w", k, err)
		}
		rows, last = append(rows, r), append(last[:0], k...)
	}
	return rows, last, nil
}

// DropOutbox drops the outbox's rows up to and including last: another
// store committed them.
func DropOutbox(tx *bolt.Tx, last []byte) error {
	root := tx.Bucket(rootBucket)
	if root == nil || root.Bucket(outboxBucket) == nil || last == nil {
		return nil
	}
	box := root.Bucket(outboxBucket)
	c := box.Cursor()
	for k, _ := c.First(); k != nil && string(k) <= string(last); k, _ = c.First() {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

// OutboxLen counts the rows waiting in the outbox.
func OutboxLen(tx *bolt.Tx) int {
	root := tx.Bucket(rootBucket)
	if root == nil || root.Bucket(outboxBucket) == nil {
		return 0
	}
	return root.Bucket(outboxBucket).Stats().KeyN
}
