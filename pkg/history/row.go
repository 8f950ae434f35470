package history

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/record"
)

// Row is one kept entry as another store holds it: a record, a state kept
// alone, or an event entry, with the key the state dir ordered it by. The
// outbox (outbox.go) hands rows to the PostgreSQL store, which keeps them
// as they are and reads them back, so that both stores decide what a
// query lists with the same code (Query.Lists).
type Row struct {
	Kind RowKind `json:"k"`
	// Key is the entry's time|seq in the state dir that wrote it.
	Key []byte `json:"key"`
	// ID names the entry the same from every replica (record.Change.ID),
	// so that a row written twice is kept once.
	ID string `json:"id"`
	// Object is the object's id as keys hold it (ObjectKey); a type's
	// group/resource for RowType.
	Object change.ObjectID `json:"o"`
	// Line is the record's JSON (none for a state kept alone).
	Line []byte `json:"line,omitempty"`
	// Before and After are the object's packed states around the entry
	// (Before: only for the object's oldest kept entry).
	Before []byte `json:"before,omitempty"`
	After  []byte `json:"after,omitempty"`
	// EventIDs are, for an event, its object's id and its owners'.
	EventIDs []change.ObjectID `json:"ids,omitempty"`
	// Drops is, for an event that folded an earlier entry, that entry's
	// key: the entry is replaced.
	Drops []byte `json:"drops,omitempty"`
}

// RowKind says what a Row holds.
type RowKind string

// The kinds of Row.
const (
	RowRecord RowKind = "r" // a record and the states around it
	RowState  RowKind = "s" // a state kept without a record
	RowEvent  RowKind = "e" // an event entry (record.EventRecord)
	RowType   RowKind = "t" // a type's names (Line: TypeNames JSON; Object: group/resource)
	RowBegin  RowKind = "b" // the history begins at Key's time
)

// Time is the time of the row's key.
func (r Row) Time() time.Time { return keyTime(r.Key) }

// Seq is the sequence number of the row's key.
func (r Row) Seq() uint64 { return binary.BigEndian.Uint64(r.Key[8:]) }

// Lists says whether q lists the row: the same decision a query of the
// state dir makes of the entry (wanted).
func (q Query) Lists(r Row) bool {
	switch r.Kind {
	case RowRecord:
		return len(r.Line) > 0 && q.selects(r.Object) && q.lists(r.Line)
	case RowEvent:
		return q.listsEvent(r.Line) && q.selectsEvent(r.EventIDs) && q.lists(r.Line)
	}
	return false
}

// Objects are the objects a query names, when every selector names one
// in a known namespace (as ids key them); nil when the query must scan.
func (q Query) Objects() []change.ObjectID {
	ids := q.objects()
	for i, id := range ids {
		ids[i] = change.ObjectID(idKey(id))
	}
	return ids
}

// ObjectKey is an object's id as the state dir's keys hold it: whole,
// unless its name is too long for a key or holds a separator (idKey).
// Another store finds an object's entries by it.
func ObjectKey(id change.ObjectID) string { return string(idKey(id)) }

// PageToken is the token of a page whose last entry is at t, the n-th
// of its instant in the store's order.
func PageToken(t time.Time, n uint64) string { return hex.EncodeToString(timeKey(t, n)) }

// ReadPageToken reads a page token into the moment and the number
// PageToken made it of.
func ReadPageToken(s string) (time.Time, uint64, error) {
	k, err := ParsePageToken(s)
	if err != nil {
		return time.Time{}, 0, err
	}
	return keyTime(k), binary.BigEndian.Uint64(k[8:]), nil
}

// Key is the time|seq key of a moment and a sequence number, as rows
// carry it.
func Key(t time.Time, seq uint64) []byte { return timeKey(t, seq) }

// PackedStep is a step whose state is left packed as a Row holds it,
// unpacked when asked for (Step.StateJSON).
func PackedStep(t time.Time, record, packed []byte) Step {
	return Step{Time: t, Record: bytes.Clone(record), packed: bytes.Clone(packed)}
}

// SetPackedBefore sets the packed state before the oldest step.
func (s *Steps) SetPackedBefore(packed []byte) { s.packedBefore = bytes.Clone(packed) }

// UnpackState unpacks a state as a Row holds it.
func UnpackState(packed []byte) ([]byte, error) { return unpackState(packed) }

// PackState packs a state's JSON as rows hold it.
func PackState(raw []byte) []byte { return encoder.EncodeAll(raw, nil) }

// Rows returns up to max of the history's entries from the key from on
// (nil: the oldest), in order, as rows for another store, and the key to
// go on from (nil: no more). States kept alone carry no id: the caller
// names them (Row.ID). It is how a state dir's history is imported.
func (r *Reader) Rows(from []byte, max int) (rows []Row, next []byte, err error) {
	err = r.view(func(b *readBuckets) error {
		if b.empty {
			return nil
		}
		for k := range b.scan(from, timeKey(untilOf(time.Time{}), math.MaxUint64)) {
			if len(rows) == max {
				next = bytes.Clone(k)
				return nil
			}
			row, err := b.row(k)
			if err != nil {
				return err
			}
			rows = append(rows, row)
		}
		return nil
	})
	return rows, next, err
}

// row is the entry at k as a Row.
func (b *readBuckets) row(k []byte) (Row, error) {
	k = bytes.Clone(k)
	if v := b.records.Get(k); v != nil {
		id, line, _ := bytes.Cut(v, []byte{0})
		r := Row{Kind: RowState, Key: k, Object: change.ObjectID(idKey(change.ObjectID(id))),
			Before: bytes.Clone(b.before.Get(k)), After: bytes.Clone(b.after.Get(k))}
		if len(line) > 0 {
			var c record.Change
			if err := json.Unmarshal(line, &c); err != nil {
				return r, fmt.Errorf("history: record at %x: %w", k, err)
			}
			r.Kind, r.Line, r.ID = RowRecord, bytes.Clone(line), c.ID
			if r.ID == "" {
				r.ID = c.StableID()
			}
		}
		return r, nil
	}
	h, line := decodeEvent(b.events.Get(k))
	return Row{Kind: RowEvent, Key: k, Object: h.ids[0], Line: bytes.Clone(line), EventIDs: h.ids}, nil
}

// Types returns the rows of every type the history keeps the names of.
func (r *Reader) Types() (rows []Row, err error) {
	err = r.view(func(b *readBuckets) error {
		if b.empty {
			return nil
		}
		return b.types.ForEach(func(k, v []byte) error {
			rows = append(rows, Row{Kind: RowType, Object: change.ObjectID(k), Line: bytes.Clone(v)})
			return nil
		})
	})
	return rows, err
}
