package history

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/kubediff/kubediff/pkg/change"
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
	v := r.encode()
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
		r, err := decodeRow(bytes.Clone(v)) // v is bbolt's, valid only in the transaction
		if err != nil {
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

// encode is the row as the outbox keeps it: its kind, then each field as
// a length (uvarint) and its bytes; the event ids last, one per field.
// (JSON took a third more CPU and space: its base64 of the states.)
func (r Row) encode() []byte {
	fields := [][]byte{r.Key, []byte(r.ID), []byte(r.Object), r.Line, r.Before, r.After, r.Drops}
	for _, id := range r.EventIDs {
		fields = append(fields, []byte(id))
	}
	n := 1
	for _, f := range fields {
		n += binary.MaxVarintLen64 + len(f)
	}
	out := append(make([]byte, 0, n), r.Kind[0])
	for _, f := range fields {
		out = binary.AppendUvarint(out, uint64(len(f)))
		out = append(out, f...)
	}
	return out
}

// errDamagedRow says an outbox row cannot be read.
var errDamagedRow = errors.New("damaged row")

// decodeRow reads a row encode wrote. A field absent (nil) reads back
// nil, as an empty one does: no field of a row tells the two apart.
func decodeRow(v []byte) (Row, error) {
	if len(v) == 0 {
		return Row{}, errDamagedRow
	}
	r := Row{Kind: RowKind(v[:1])}
	var fields [][]byte
	for rest := v[1:]; len(rest) > 0; {
		n, size := binary.Uvarint(rest)
		if size <= 0 || n > uint64(len(rest)-size) {
			return Row{}, errDamagedRow
		}
		var f []byte
		if n > 0 {
			f = rest[size : size+int(n) : size+int(n)]
		}
		fields, rest = append(fields, f), rest[size+int(n):]
	}
	if len(fields) < 7 {
		return Row{}, errDamagedRow
	}
	r.Key, r.ID, r.Object, r.Line, r.Before, r.After, r.Drops = fields[0], string(fields[1]), change.ObjectID(fields[2]), fields[3], fields[4], fields[5], fields[6]
	for _, id := range fields[7:] {
		r.EventIDs = append(r.EventIDs, change.ObjectID(id))
	}
	return r, nil
}
